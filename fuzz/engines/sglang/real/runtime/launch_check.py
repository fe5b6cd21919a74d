"""SGLang's own server-argument handlers, executed on a printed launch line: does the release start it, and with
the configuration the case has?

``LaunchValidators.load(tree).check(flags, model, files)`` parses the
line's flags against the release's declared ``ServerArgs`` fields (a flag no
field declares is refused in argparse's words), fills every other field with
the literal default the release declares for it (a field whose default is
not a literal is left unpublished: reading it stops the check, never a
guess), stands in the machine (one CUDA GPU, not ROCm) and the model (its
``hf_config.architectures``, whether it is a Mamba or sliding-window
hybrid, its attention arch), and executes, in the order SGLang's resolution
runs them, the release's own handlers of the flags a line can carry:

    HANDLERS   the page size the attention backend takes, speculative decoding
               (every algorithm's branch, auto-chosen parameters, the adaptive
               config file read from disk), HiSparse, the unified memory pool
               (``validators.BootValidators``).

The answer is SGLang's refusal (the first line of what it raised), or the
fields as resolution left them: the check of a line compares those with the
case's configuration (``launch.checked``).  The rest of resolution (the
attention backend SGLang would pick, memory sizing from the GPU) is not run:
a line names what those would otherwise decide.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fuzz.targets.base import TargetError

from ...records.errors import member_of
from ..stubs import StandInMissing
from .context import StrictBag
from .launch_fields import BadLine, declared_fields, parse_flags
from .modules import Loader
from .standins import PROBES, captured_logs, slice_definitions
from .tree import SourceTree, open_tree
from .validators import BootValidators

SPECULATIVE_HOOK = "sglang.srt.arg_groups.speculative_hook"
OVERRIDES = "sglang.srt.arg_groups.overrides"
HISPARSE_HOOK = "sglang.srt.arg_groups.hisparse_hook"
_EXECUTED = (
    "sglang.srt.arg_groups.arg_utils",
    SPECULATIVE_HOOK,
    HISPARSE_HOOK,
    "sglang.srt.speculative.adaptive_spec_params",
    "sglang.srt.speculative.ragged_verify",
)
RUNTIME_CONTEXT = "sglang/srt/runtime_context.py"
MODEL_CONFIG = "sglang/srt/configs/model_config.py"
DFLASH_UTILS = "sglang/srt/speculative/dflash_utils.py"
# The handlers executed, in resolution's order (named in reports and tests).
HANDLERS = (
    "arg_groups/overrides.py _mla_backend_page_constraints",
    "arg_groups/overrides.py _page_size_default",
    "arg_groups/speculative_hook.py handle_speculative_decoding",
    "arg_groups/hisparse_hook.py validate_hisparse",
    "the unified memory pool's launch validator (arg_groups/kv_cache_hook.py handle_unified_memory_pool; "
    "server_args.py ServerArgs._handle_unified_memory_pool to 0.5.18)",
)
_HELPERS = {MODEL_CONFIG: ("_hf_arch", "_hf_attr"), DFLASH_UTILS: ("_get_text_config", "_cfg_get")}
# The checkpoints a line names: the user's model and its draft (placeholders the user replaces).
MODEL_PATH = "MODEL"
DRAFT_PATH = "DRAFT"
# The machine: one CUDA GPU (an H100), not ROCm. ``device`` is what SGLang's device hook resolves there.
MACHINE = {"device": "cuda"}
PLATFORM = dict(is_hip=False, is_cuda=True, is_mps=False, is_xpu=False, is_npu=False, is_cpu=False, is_musa=False)


class DraftConfig(StrictBag):
    """The draft checkpoint's hf_config: its architecture, and none of the optional fields a DFLASH draft's
    config.json may set to pick its own attention backend (``text_config``, ``layer_types``, ``is_causal``, ...:
    absent, so ``getattr``'s default, as in a config without them).
    Absent, SGLang runs the draft on its fallback backend (a warning); the target's backend, the one the line
    names, and the configuration the line resolves to are the same either way."""

    OPTIONAL = frozenset(
        {"text_config", "get_text_config", "layer_types", "is_causal", "num_hidden_layers", "sliding_window"}
    )

    def _missing(self, leaf: str) -> Exception:
        return AttributeError(leaf) if leaf in self.OPTIONAL else super()._missing(leaf)


@dataclass(frozen=True)
class Model:
    """The model stand-in a line is checked with: what the handlers ask of the checkpoint's config."""

    architecture: str  # hf_config.architectures[0]
    draft_architecture: str | None = None  # the draft checkpoint's (``--speculative-draft-model-path DRAFT``)
    hf_config: tuple[tuple[str, Any], ...] = ()  # what else its config.json sets that the handlers read
    mla: bool = False
    mamba: bool = False
    hybrid_swa: bool = False


@dataclass(frozen=True)
class Outcome:
    """What the release's handlers made of a line: its refusal, else the fields as resolution left them."""

    refusal: str | None
    resolved: Mapping[str, Any]


class ServerArgsStandIn:
    """A ``ServerArgs`` record for the handlers: the line's values over the release's literal defaults.

    A declared field whose default is not a literal raises ``StandInMissing`` when read (the check
    stops rather than guess); a name no field declares is an ``AttributeError``, as on the real record,
    so ``getattr(server_args, "_private", default)`` answers its default.
    """

    def __init__(self, values: Mapping[str, Any], unpublished: frozenset[str], model_config: Any) -> None:
        self.__dict__.update(values)
        self.__dict__["_kvrow_unpublished"] = unpublished
        self.__dict__["_model_config"] = model_config
        self.__dict__["_model_config_built_from"] = None

    def __getattr__(self, name: str) -> Any:
        if name in self.__dict__["_kvrow_unpublished"]:
            raise StandInMissing(f"a launch handler reads server_args.{name}, whose declared default is not a literal")
        raise AttributeError(name)

    def get_model_config(self) -> Any:
        """``ServerArgs.get_model_config`` (to 0.5.18): the model stand-in."""
        return self._model_config


class LaunchValidators(BootValidators):
    """One release's launch handlers, loaded (build with ``load``); ``check`` answers per line."""

    needs_unified_validator = False  # a release without unified memory (to 0.5.14) has no such pool to check

    def __init__(self, tree: SourceTree) -> None:
        super().__init__(tree)
        missing = [m for m in (SPECULATIVE_HOOK, HISPARSE_HOOK) if not tree.has(member_of(m))]
        if missing:
            raise TargetError(f"{tree.origin} has no {member_of(missing[0])}: no launch handlers to execute")
        executed = tuple(self.loader.executed) + tuple(m for m in _EXECUTED if tree.has(member_of(m)))
        self.loader = Loader(tree, executed, self._launch_answer)
        self.fields = declared_fields(tree)
        self._sliced: dict[tuple[str, str], Any] = {}
        self._model: Model | None = None

    def _launch_answer(self, module: str, name: str) -> tuple[bool, Any]:
        if module == "sglang.srt.runtime_context":
            if name == "get_platform":
                return True, lambda: StrictBag("platform", **PLATFORM)
            if name == "get_context":  # before publish: no published record (SGLang's ValueError)
                return True, _Unpublished
            if name.endswith("_of"):  # the derived-width readers: pure functions of a config
                return True, self._slice(RUNTIME_CONTEXT, name)
        if module == "sglang.srt.server_args" and name in PROBES:  # 0.5.18's hooks import the probes from there
            return True, lambda *a, **k: PROBES[name]
        if module == "sglang.srt.utils.hf_transformers_utils" and name == "get_config":
            return True, self._checkpoint_config
        if module == "sglang.srt.configs.model_config" and (name.startswith("is_") or name == "_hf_arch"):
            return True, self._slice(MODEL_CONFIG, name)
        if module == "sglang.srt.speculative.dflash_utils" and name == "get_dflash_layer_types":
            return True, self._slice(DFLASH_UTILS, name)  # DFLASH's draft-backend choice on trtllm_mha (0.5.18+)
        return self._answer(module, name)

    def _checkpoint_config(self, path: str, **_: Any) -> StrictBag:
        """``get_config(path)``: the hf_config of the line's model (``MODEL``) or draft (``DRAFT``) checkpoint."""
        model = self._model
        if model is None:
            raise StandInMissing("get_config() called outside a launch check")
        if path == MODEL_PATH:
            return self.model_config_of(model).hf_config
        if path == DRAFT_PATH and model.draft_architecture is not None:
            return DraftConfig("hf_config", architectures=[model.draft_architecture])
        raise StandInMissing(f"a launch handler reads the config of checkpoint {path!r}, which the line does not name")

    def _slice(self, member: str, name: str) -> Any:
        key = (member, name)
        if key not in self._sliced:
            namespace: dict[str, Any] = {"__builtins__": self.loader.builtins, "__name__": member}
            helpers = _HELPERS.get(member, ())  # the module's own readers its predicates call
            slice_definitions(self.tree, member, helpers, namespace, required=False)
            self._sliced[key] = slice_definitions(self.tree, member, (name,), namespace)[name]
        return self._sliced[key]

    # -- a line -------------------------------------------------------------------------------------

    def model_config_of(self, model: Model) -> StrictBag:
        arch = self.arch["AttentionArch"]
        return StrictBag(
            "model_config",
            hf_config=StrictBag("hf_config", architectures=[model.architecture], **dict(model.hf_config)),
            attention_arch=arch.MLA if model.mla else arch.MHA,
            mambaish=StrictBag("mambaish_config", family="linear attention") if model.mamba else None,
            is_hybrid_swa=model.hybrid_swa,
            is_multi_layer_eagle=False,
            sliding_window_size=None,
            model_path=MODEL_PATH,
        )

    def check(self, flags: Sequence[str], model: Model, files: Mapping[str, str] = {}) -> Outcome:
        """SGLang's refusal of ``flags`` on ``model`` (``files``: the line's files by the name it gives them), or
        the fields as resolution left them."""
        try:
            values = parse_flags(self.fields, flags)
        except BadLine as e:
            return Outcome(str(e), {})
        with _written(files) as paths:
            values = {k: paths.get(v, v) if isinstance(v, str) else v for k, v in values.items()}
            defaults = {f.name: f.default for f in self.fields.values() if f.literal}
            unpublished = frozenset(f.name for f in self.fields.values() if not f.literal) - set(values)
            record = ServerArgsStandIn(
                {**defaults, **MACHINE, **values, "_resolved_overrides": []}, unpublished, self.model_config_of(model)
            )
            refusal = self._run(record, model)
        if refusal is not None:
            return Outcome(refusal, {})
        view = self.loader.module(OVERRIDES).resolved_view(record) if self.tree.has(member_of(OVERRIDES)) else record
        return Outcome(None, _Resolved(view, set(self.fields)))

    def _run(self, record: ServerArgsStandIn, model: Model) -> str | None:
        passes: tuple[Callable[[], None], ...] = ()
        if self.tree.has(member_of(OVERRIDES)):  # 0.5.15+: the resolution passes of the backend's page size
            o = self.loader.module(OVERRIDES)
            passes = tuple(
                functools.partial(o.run_post_process_pass, record, p)
                for p in (o._mla_backend_page_constraints, o._page_size_default)
            )
        steps = (
            *passes,
            lambda: self.loader.module(SPECULATIVE_HOOK).handle_speculative_decoding(record),
            lambda: self.loader.module(HISPARSE_HOOK).validate_hisparse(record),
            lambda: self._unified_memory(record),
        )
        self._launch = record  # type: ignore[assignment]  # the accessors' answer while the handlers run
        self._model = model
        try:
            with captured_logs(self.loader.prefix):
                for step in steps:
                    try:
                        step()
                    except (AssertionError, ValueError, NotImplementedError) as e:  # SGLang's refusals
                        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    except (TargetError, StandInMissing):
                        raise
                    except Exception as e:  # noqa: BLE001 - not a refusal: the stand-ins fell short
                        raise TargetError(
                            f"{self.tree.origin}: a launch handler raised {type(e).__name__}: {e}".splitlines()[0]
                        ) from None
        finally:
            self._launch = None
            self._model = None
        return None

    def _unified_memory(self, record: ServerArgsStandIn) -> None:
        if not self.has_unified_validator:
            return  # no unified memory pool in the release: no flag to validate
        if self.has_hook:
            self.loader.module("sglang.srt.arg_groups.kv_cache_hook").handle_unified_memory_pool(record)
            return
        methods = {k: v for k, v in vars(self._server_args_class()).items() if callable(v)}
        bound = type("ServerArgs", (ServerArgsStandIn,), methods)
        record.__class__ = bound
        record._handle_unified_memory_pool()  # type: ignore[attr-defined]


class _Unpublished:
    """``get_context()`` before publish: its ``server_args`` raises ValueError, as SGLang's does."""

    @property
    def server_args(self) -> Any:
        raise ValueError("no server args published yet")


class _Resolved(Mapping[str, Any]):
    """The declared fields as resolution left them (read through the release's own resolved view)."""

    def __init__(self, view: Any, names: set[str]) -> None:
        self._view = view
        self._names = names

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        return getattr(self._view, name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._names))

    def __len__(self) -> int:
        return len(self._names)


class _written:
    """The line's files (``ADAPTIVE.json``), written to a temporary directory while the handlers read them."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self.files = files
        self.tmp: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> dict[str, str]:
        if not self.files:
            return {}
        self.tmp = tempfile.TemporaryDirectory(prefix="kvrow-launch-")
        paths = {}
        for name, text in self.files.items():
            path = os.path.join(self.tmp.name, os.path.basename(name))
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            paths[name] = path
        return paths

    def __exit__(self, *exc: object) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()


_LOADED: dict[str, LaunchValidators] = {}


def launch_validators(release_tree: str | SourceTree) -> LaunchValidators:
    """The release's launch handlers, loaded once per process."""
    tree = open_tree(release_tree)
    if tree.origin not in _LOADED:
        _LOADED[tree.origin] = LaunchValidators.load(tree)
    return _LOADED[tree.origin]


__all__ = ["HANDLERS", "LaunchValidators", "Model", "Outcome", "launch_validators"]
