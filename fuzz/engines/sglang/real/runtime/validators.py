"""SGLang's own launch validators, executed: does a release boot a deployment, and if not, in whose words.

``boots(release_tree, cfg, model)`` runs, through the write path's loader
(``modules.Loader``, the same stand-ins), the checks a launch of ``cfg`` on
``model`` meets before its first decode, and returns None where every one
accepts, else the text the first refusal raises:

1. ``SpeculativeAlgorithm.from_string`` (``speculative/spec_info.py``): the
   release knows the algorithm (UNO from 0.5.20);
2. the unified-memory launch validator: ``handle_unified_memory_pool``
   (``arg_groups/kv_cache_hook.py``, 0.5.19+; under ``--dcp-size > 1`` it calls
   ``_validate_unified_memory_dcp``), or ``ServerArgs._handle_unified_memory_pool``
   (``server_args.py``, 0.5.15-0.5.18), sliced and bound to the server-args stand-in;
3. where the release has it (0.5.22+), the configurator's draft fusion on a
   mamba-hybrid unified host: ``KVCacheConfigurator._fused_draft_for_mamba_factory``
   (``mem_cache/kv_cache_configurator.py``), which asks ``_fused_draft_decision``
   and refuses EAGLE/EAGLE3/DFLASH when the draft cannot fuse (DCP > 1 declines it),
   called on a configurator whose fields the stand-ins set (its ``__init__``
   profiles a GPU: not run).

What a launch leaves open beyond ``cfg`` (the attention backends, the draft's
backend) is a ``Launch``; ``boots`` without one tries ``LAUNCHES`` and accepts
where any launch boots (the rule table's claim: some launch of the config boots).
The model is a ``Host`` (its attention arch, whether it is a mamba hybrid) with
a dense MHA draft head (a draft that can fuse: an MLA draft declines at every DCP).
A piece that cannot run: ``StandInMissing`` / ``TargetError``, one line.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from allocator_model.config import ServingConfig
from allocator_model.pools import KVPool
from fuzz.targets.base import TargetError

from ...records.errors import member_of
from ..stubs import SpeculativeAlgorithm as ModelSpeculativeAlgorithm
from ..stubs import StandInMissing
from .context import RuntimeContext, StrictBag
from .modules import Loader
from .standins import MsgspecStruct, Sliced, StandIns, captured_logs, slice_definitions
from .tree import SourceTree, open_tree

HOOK = "sglang.srt.arg_groups.kv_cache_hook"
CONFIGURATOR = "sglang.srt.mem_cache.kv_cache_configurator"
SPEC_INFO = "sglang.srt.speculative.spec_info"
SERVER_ARGS = "sglang/srt/server_args.py"
MODEL_CONFIG = "sglang/srt/configs/model_config.py"
UNIFIED_POOL = "sglang/srt/mem_cache/unified_memory_pool.py"
FUSION_FACTORY = "def _fused_draft_for_mamba_factory"
_ALWAYS = ("sglang.srt.speculative.spec_registry", SPEC_INFO, "sglang.srt.arg_groups.choices")
_ARGS_MODULES = ("sglang.srt.arg_groups.model_override_base", "sglang.srt.arg_groups.overrides")
_FUSION_MODULES = (
    "sglang.srt.mem_cache.layout.token_major",
    "sglang.srt.mem_cache.layout.fused_draft",
    "sglang.srt.speculative.draft_worker_common",
    CONFIGURATOR,
)
# 0.5.15-0.5.18's validator is a ServerArgs method, and the methods it calls.
_SERVER_ARGS_METHODS = (
    "ServerArgs._handle_unified_memory_pool",
    "ServerArgs._resolved_attention_backends",
    "ServerArgs.use_mla_backend",
    "ServerArgs.get_model_config",
)


_V = TypeVar("_V", bound="BootValidators")


@dataclass(frozen=True)
class Host:
    """The model-config stand-in: what the validators ask of the target model."""

    name: str
    mla: bool  # attention arch MLA (else MHA)
    mamba: bool  # a mamba hybrid (mambaish_config is not None)


MAMBA_MLA = Host("mamba-hybrid MLA (kimi-linear-like)", mla=True, mamba=True)
MAMBA_MHA = Host("mamba-hybrid MHA (qwen3-next-like)", mla=False, mamba=True)
MLA = Host("dense MLA", mla=True, mamba=False)
# The hosts each kind of pool is built for (``allocator_model.pools``: unified-mamba is a mamba hybrid).
HOSTS: dict[KVPool, tuple[Host, ...]] = {
    KVPool.UNIFIED_MAMBA: (MAMBA_MLA, MAMBA_MHA),
    KVPool.STANDARD: (MLA, MAMBA_MLA),
}


@dataclass(frozen=True)
class Launch:
    """The launch choices ``cfg`` leaves open: ``--attention-backend``, ``--speculative-draft-attention-backend``."""

    attention_backend: str
    draft_attention_backend: str | None = None


LAUNCHES = tuple(
    Launch(backend, draft)
    for backend in ("trtllm_mla", "flashinfer", "triton", "fa3", "trtllm_mha")
    for draft in (None, "triton")
)


class BootValidators:
    """One release's validators, loaded (build with ``load``); ``boots`` answers per config, host and launch."""

    needs_unified_validator = True  # what ``boots`` checks is the unified-memory validator: none, nothing to run

    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self.standins = StandIns(tree, RuntimeContext(), lambda: ModelSpeculativeAlgorithm)
        self.has_hook = tree.has(member_of(HOOK))
        self.has_fusion = FUSION_FACTORY in (tree.read(member_of(CONFIGURATOR)) or "")
        self.has_unified_validator = self.has_hook or "def _handle_unified_memory_pool" in (
            tree.read(SERVER_ARGS) or ""
        )
        if not self.has_unified_validator and self.needs_unified_validator:
            raise TargetError(f"{tree.origin} has no unified-memory launch validator to execute (before 0.5.15)")
        executed = _ALWAYS + _ARGS_MODULES + ((HOOK,) if self.has_hook else ())
        executed += _FUSION_MODULES if self.has_fusion else ()
        self.loader = Loader(tree, tuple(m for m in executed if tree.has(member_of(m))), self._answer)
        self.arch = Sliced(tree, MODEL_CONFIG, ("AttentionArch",), IntEnum=enum.IntEnum, auto=enum.auto)
        self.store_dtype = Sliced(tree, UNIFIED_POOL, ("_store_dtype_for",), torch=torch)
        self._launch: StrictBag | None = None
        self._sliced_server_args: type | None = None

    @classmethod
    def load(cls: type[_V], source: str | SourceTree, wheel_dir: str | None = None) -> _V:
        """The release's validators, their modules executed (``TargetError``/``StandInMissing`` where one cannot)."""
        validators = cls(open_tree(source, wheel_dir))
        for dotted in sorted(validators.loader.executed):
            validators.loader.module(dotted)
        return validators

    def close(self) -> None:
        """Drop the executed modules from ``sys.modules`` (``Loader.close``)."""
        self.loader.close()

    # -- the answers of the unexecuted modules -------------------------------------------------

    def _answer(self, module: str, name: str) -> tuple[bool, Any]:
        if module == "msgspec" and name == "Struct":
            return True, MsgspecStruct
        if module == "sglang.srt.runtime_context" and name in _ACCESSORS:
            return True, lambda *a, **k: self._read(name)
        if module == "sglang.srt.runtime_context" and name == "attention_backends":
            return True, lambda: (self._read(name).attention_backend,) * 2  # no split prefill/decode backends
        if module == "sglang.srt.configs.model_config" and name == "AttentionArch":
            return True, self.arch["AttentionArch"]
        if module == "sglang.srt.configs.hybrid_arch" and name == "mambaish_config":
            return True, lambda model_config: model_config.mambaish
        if module == "sglang.srt.mem_cache.unified_memory_pool" and name == "_store_dtype_for":
            return True, self.store_dtype["_store_dtype_for"]
        if module == "sglang.srt.server_args" and name == "DRAFT_ATTENTION_BACKEND_CHOICES":
            return True, self.loader.module("sglang.srt.arg_groups.choices").DRAFT_ATTENTION_BACKEND_CHOICES
        return self.standins.answer(module, name)

    def _read(self, accessor: str) -> StrictBag:
        if self._launch is None:
            raise StandInMissing(f"{accessor}() read outside a launch")
        return self._launch

    # -- the stand-ins a validator is handed -----------------------------------------------------

    def model_config(self, host: Host) -> StrictBag:
        arch = self.arch["AttentionArch"]
        return StrictBag(
            "model_config",
            attention_arch=arch.MLA if host.mla else arch.MHA,
            mambaish=StrictBag("mambaish_config", family="linear attention") if host.mamba else None,
            is_hybrid_swa=False,
            is_multi_layer_eagle=False,
            sliding_window_size=None,
            model_path=host.name,
        )

    def draft_config(self) -> StrictBag:
        """A dense MHA draft head (one layer, 8 KV heads of 128, bf16): a draft that can fuse."""
        return StrictBag(
            "draft_model_config",
            attention_arch=self.arch["AttentionArch"].MHA,
            mambaish=None,
            dtype=torch.bfloat16,
            num_nextn_predict_layers=None,
            head_dim=128,
            v_head_dim=128,
            get_num_kv_heads=lambda attn_tp_size, *_: 8 // attn_tp_size,
            is_hybrid_swa=False,
            is_deepseek_v4_arch=False,
            sliding_window_size=None,
        )

    def server_args(self, cfg: ServingConfig, host: Host, launch: Launch, cls: type = StrictBag) -> Any:
        """The server-args stand-in: ``cfg``'s launch values, ``launch``'s backends, every feature flag off."""
        spec = None if cfg.speculative_algorithm is None else str(cfg.speculative_algorithm)
        model_config = self.model_config(host)
        return cls(
            "server_args",
            enable_unified_memory=cfg.kv_pool.unified,
            dcp_size=cfg.attn_dcp_size,
            attn_dcp_size=cfg.attn_dcp_size,
            attn_tp_size=1,
            pp_size=1,
            speculative_algorithm=spec,
            speculative_eagle_topk=cfg.speculative_eagle_topk if spec else None,
            speculative_num_steps=cfg.speculative_num_steps if spec else None,
            speculative_draft_attention_backend=launch.draft_attention_backend,
            speculative_draft_kv_cache_dtype=None,
            attention_backend=launch.attention_backend,
            prefill_attention_backend=None,
            decode_attention_backend=None,
            disaggregation_mode="null",
            disaggregation_decode_retraction_backup=None,
            enable_hierarchical_cache=False,
            enable_lmcache=False,
            enable_hisparse=cfg.kv_pool is KVPool.HISPARSE,
            enable_two_batch_overlap=False,
            enable_unified_cache_external_linker=False,
            cuda_graph_config=None,
            kv_cache_dtype="auto",
            is_xpu=False,  # get_platform() (draft_worker_common's fallback): a CUDA machine
            model_path=host.name,
            model_config=model_config,
            _model_config=model_config,
            _model_config_built_from=None,
            _resolved_overrides=(),
        )

    # -- the validators ----------------------------------------------------------------------------

    def boots(self, cfg: ServingConfig, host: Host, launch: Launch | None = None) -> str | None:
        """None: every validator accepts (some launch of ``LAUNCHES`` when ``launch`` is None); else the refusal."""
        if host not in HOSTS.get(cfg.kv_pool, ()):
            known = ", ".join(f"{k.value}: {' / '.join(h.name for h in hs)}" for k, hs in HOSTS.items())
            raise TargetError(f"no boot validators for kv_pool {cfg.kv_pool.value} on a {host.name} host ({known})")
        if launch is not None:
            return self._boots(cfg, host, launch)[1]
        refusals = []
        for candidate in LAUNCHES:
            stage, refusal = self._boots(cfg, host, candidate)
            if refusal is None:
                return None
            refusals.append((stage, refusal))
        return max(refusals, key=lambda r: r[0])[1]  # the one that got furthest: the configurator's, if one did

    def _boots(self, cfg: ServingConfig, host: Host, launch: Launch) -> tuple[int, str | None]:
        stages = (self._algorithm, self._launch_validator, self._draft_fusion)
        self._launch = self.server_args(cfg, host, launch)
        try:
            with captured_logs(self.loader.prefix):
                for stage, run in enumerate(stages):
                    try:
                        run(cfg, host, launch)
                    except (AssertionError, ValueError) as e:  # SGLang's refusals: asserts and ValueErrors
                        return stage, str(e).splitlines()[0] if str(e) else type(e).__name__
                    except TargetError:
                        raise
                    except Exception as e:  # noqa: BLE001 - not a refusal: the stand-ins fell short
                        why = f"{self.tree.origin}: {run.__name__.strip('_')} raised {type(e).__name__}: {e}"
                        raise TargetError(why.splitlines()[0]) from None
        finally:
            self._launch = None
        return len(stages), None

    def _algorithm(self, cfg: ServingConfig, host: Host, launch: Launch) -> None:
        self.loader.module(SPEC_INFO).SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)

    def _launch_validator(self, cfg: ServingConfig, host: Host, launch: Launch) -> None:
        if self.has_hook:
            self.loader.module(HOOK).handle_unified_memory_pool(self._read("server_args"))
            return
        self.server_args(cfg, host, launch, self._server_args_class())._handle_unified_memory_pool()

    def _server_args_class(self) -> type:
        """A server-args stand-in class with the validator methods (0.5.15-0.5.18) sliced from ``server_args.py``."""
        if self._sliced_server_args is not None:
            return self._sliced_server_args
        overrides = self.loader.module("sglang.srt.arg_groups.overrides")
        namespace = {
            "__builtins__": self.loader.builtins,
            "envs": self.standins.envs,
            "logger": logging.getLogger(f"{self.loader.prefix}.server_args"),
            "resolved_view": overrides.resolved_view,
            "Backend": self.loader.module("sglang.srt.model_executor.cuda_graph_config").Backend,
        }
        found = slice_definitions(self.tree, SERVER_ARGS, _SERVER_ARGS_METHODS, namespace)
        methods = {name.rpartition(".")[2]: fn for name, fn in found.items()}
        self._sliced_server_args = type("ServerArgs", (StrictBag,), methods)
        return self._sliced_server_args

    def _draft_fusion(self, cfg: ServingConfig, host: Host, launch: Launch) -> None:
        if not (self.has_fusion and cfg.kv_pool is KVPool.UNIFIED_MAMBA and cfg.speculative_algorithm):
            return  # only the unified mamba factories ask it (and no release before 0.5.22 has it)
        configurator_class = self.loader.module(CONFIGURATOR).KVCacheConfigurator
        configurator = object.__new__(configurator_class)  # its __init__ profiles the GPU: fields set here
        spec_algorithm = self.loader.module(SPEC_INFO).SpeculativeAlgorithm.from_string(cfg.speculative_algorithm)
        fields = dict(
            spec_aux_config=StrictBag("spec_aux_config", draft_kv_num_layers=1, draft_model_config=self.draft_config()),
            spec_algorithm=spec_algorithm,
            is_draft_worker=False,
            is_hybrid_swa=False,
            mambaish_config=self.model_config(host).mambaish,
            model_config=self.model_config(host),
            draft_parallel_layout=StrictBag("draft_parallel_layout", attn_tp_size=1),
            kv_cache_dtype=torch.bfloat16,
        )
        declared = {f.name for f in dataclasses.fields(configurator_class)}  # the release's own (slots in 0.5.22)
        for name, value in fields.items():
            if name in declared:
                object.__setattr__(configurator, name, value)
        try:
            configurator._fused_draft_for_mamba_factory()
        except AttributeError as e:  # a field of the configurator the stand-in does not set
            raise StandInMissing(f"{self.tree.origin} KVCacheConfigurator: {e}") from None


_ACCESSORS = frozenset(
    {"get_memory", "get_parallel", "get_spec", "get_disagg", "get_model", "get_platform", "get_schedule"}
)


_LOADED: dict[str, BootValidators] = {}


def boots(release_tree: str | SourceTree, cfg: ServingConfig, model: Host, launch: Launch | None = None) -> str | None:
    """None: the release's own validators accept ``cfg`` on ``model``; else the text of their refusal."""
    tree = open_tree(release_tree)
    if tree.origin not in _LOADED:
        _LOADED[tree.origin] = BootValidators.load(tree)
    return _LOADED[tree.origin].boots(cfg, model, launch)


__all__ = ["HOSTS", "LAUNCHES", "MAMBA_MHA", "MAMBA_MLA", "MLA", "BootValidators", "Host", "Launch", "boots"]
