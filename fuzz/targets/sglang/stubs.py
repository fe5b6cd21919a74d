"""Stand-ins for the modules SGLang's sizing file imports, published per example.

The real ``sglang.srt.runtime_context`` answers from a process-wide context
that only a launched server publishes, and ``spec_info`` pulls in torch and
the plugin registry; neither can be driven per example without SGLang
itself.  So the file gets these instead, through a private ``__import__``
(never ``sys.modules``): other code in the process, a real SGLang included,
never sees them.

What they publish, from a ``ServingConfig`` and the run-time spec shape:

    get_schedule().page_size            --page-size (the scheduled page, not the allocator's)
    get_parallel().attn_dcp_size        decode context parallel size
    get_spec().speculative_*            algorithm name, S, K, D of the run-time shape
    max_speculative_num_draft_tokens()  Dmax, fixed at launch (adaptive spec moves S and D, not Dmax)
    get_server_args()                   all of the above as one object (0.5.16-0.5.17 take it as an argument)

Outside a bound call every accessor raises, as the real ones do before
publish, so a file that reads its configuration at import time fails to load.
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import types
from collections.abc import Iterator
from typing import Any

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig, SpecRuntime

RUNTIME_CONTEXT = "sglang.srt.runtime_context"
SERVER_ARGS = "sglang.srt.server_args"
SPEC_INFO = "sglang.srt.speculative.spec_info"


class Bag:
    """A read-only config bag; reading a leaf that is not published names it."""

    def __init__(self, name: str, **leaves: Any):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_leaves", leaves)

    def __getattr__(self, leaf: str) -> Any:
        try:
            return self._leaves[leaf]
        except KeyError:
            raise AttributeError(
                f"the {self._name} bag has no leaf {leaf!r} (kvrow-fuzz publishes {', '.join(sorted(self._leaves))})"
            ) from None

    def __setattr__(self, leaf: str, value: Any) -> None:
        raise AttributeError(f"the {self._name} bag is read-only")

    def __repr__(self) -> str:
        return f"{self._name}({', '.join(f'{k}={v!r}' for k, v in sorted(self._leaves.items()))})"


class _Classification:
    """SGLang's ``SpeculativeAlgorithm`` methods, reduced to the classification sizing depends on."""

    value: str

    @classmethod
    def from_string(cls, name: str | None) -> Any:
        members: Any = cls  # the enum built below from this mixin
        if name is None:
            return members.NONE
        try:
            return members[str(name).upper()]
        except KeyError:
            raise ValueError(f"Unknown speculative algorithm name: {name}") from None

    def is_none(self) -> bool:
        return self.value == "NONE"

    def is_some(self) -> bool:
        return not self.is_none()

    is_speculative = is_some

    def has_draft_kv(self) -> bool:
        return self.is_some() and algo.has_draft_kv(self.value)


# SGLang's ``is_*`` predicates: which algorithms each one answers True for.
PREDICATES: dict[str, frozenset[str]] = {
    "is_eagle": frozenset({algo.EAGLE, algo.EAGLE3, algo.FROZEN_KV_MTP}),  # STANDALONE runs its own worker
    "is_eagle3": frozenset({algo.EAGLE3}),
    "is_standalone": frozenset({algo.STANDALONE}),
    "is_frozen_kv_mtp": frozenset({algo.FROZEN_KV_MTP}),
    "is_ngram": frozenset({algo.NGRAM}),
    "is_dflash": frozenset({algo.DFLASH}),
    "is_dspark": frozenset({algo.DSPARK}),
    "is_dflash_family": frozenset(algo.DFLASH_FAMILY),
    "is_uno": frozenset({algo.UNO}),
}


def _predicate(members: frozenset[str]) -> Any:
    def is_one_of(self: _Classification) -> bool:
        return self.value in members

    return is_one_of


for _name, _members in PREDICATES.items():
    setattr(_Classification, _name, _predicate(_members))

# SGLang's algorithm enum: NONE and every algorithm the model knows, with the methods above.
SpeculativeAlgorithm = enum.Enum(  # type: ignore[misc]
    "SpeculativeAlgorithm", [("NONE", "NONE")] + [(a.name, a.value) for a in algo.Algorithm], type=_Classification
)


class NotPublished(ValueError):
    """An accessor read outside a configured call (SGLang: '... not published')."""


class Published:
    """The configuration the accessors answer with, bound for the duration of one call."""

    def __init__(self) -> None:
        self._bags: dict[str, Any] | None = None

    @contextlib.contextmanager
    def bound(self, cfg: ServingConfig, rt: SpecRuntime | None) -> Iterator[None]:
        previous = self._bags
        self._bags = publish(cfg, rt)
        try:
            yield
        finally:
            self._bags = previous

    def read(self, what: str) -> Any:
        if self._bags is None:
            raise NotPublished(f"{what} read before the runtime context was published (at import time?)")
        return self._bags[what]


def publish(cfg: ServingConfig, rt: SpecRuntime | None) -> dict[str, Any]:
    """The bags of one call: launch values, with S and D of the run-time shape ``rt``."""
    spec_on = cfg.spec_on and rt is not None
    spec = dict(
        speculative_algorithm=cfg.speculative_algorithm if spec_on else None,
        speculative_num_steps=rt.num_steps if spec_on and rt is not None else None,
        speculative_eagle_topk=cfg.speculative_eagle_topk if spec_on else None,
        speculative_num_draft_tokens=rt.num_draft_tokens if spec_on and rt is not None else None,
        speculative_adaptive=cfg.speculative_adaptive,
        max_speculative_num_draft_tokens=cfg.max_speculative_num_draft_tokens,
    )
    schedule = dict(
        page_size=cfg.page_size,
        max_running_requests=cfg.max_running_requests,
        disable_overlap_schedule=not cfg.enable_overlap,
        max_total_tokens=cfg.max_total_num_tokens,
    )
    parallel = dict(attn_dcp_size=cfg.attn_dcp_size, tp_size=cfg.tp_size or cfg.attn_dcp_size)
    return {
        "schedule": Bag("schedule", **schedule),
        "parallel": Bag("parallel", **parallel),
        "spec": Bag("spec", **spec),
        "server_args": Bag("server_args", **schedule, **parallel, **spec, context_length=cfg.context_len),
        "dmax": cfg.max_speculative_num_draft_tokens,
    }


class ServerArgs:
    """Only a name for type annotations (0.5.16-0.5.17 import it); calls get the published bag."""


def accessor_modules(published: Published) -> dict[str, types.ModuleType]:
    """The stub modules, and the packages above them, answering from ``published``."""
    rc = types.ModuleType(RUNTIME_CONTEXT, "kvrow-fuzz stand-in: accessors answer from the example's configuration")
    rc.__dict__.update(
        get_schedule=lambda: published.read("schedule"),
        get_parallel=lambda: published.read("parallel"),
        get_spec=lambda: published.read("spec"),
        get_server_args=lambda: published.read("server_args"),
        max_speculative_num_draft_tokens=lambda: published.read("dmax"),
    )
    sa = types.ModuleType(SERVER_ARGS, "kvrow-fuzz stand-in")
    sa.__dict__["ServerArgs"] = ServerArgs
    si = types.ModuleType(SPEC_INFO, "kvrow-fuzz stand-in")
    si.__dict__["SpeculativeAlgorithm"] = SpeculativeAlgorithm
    modules = {m.__name__: m for m in (rc, sa, si)}
    for name in list(modules):  # packages, so `import sglang.srt.x` and `from sglang.srt import x` work too
        parts = name.split(".")
        for i in range(len(parts) - 1, 0, -1):
            parent = ".".join(parts[:i])
            modules.setdefault(parent, types.ModuleType(parent))
            setattr(modules[parent], parts[i], modules[".".join(parts[: i + 1])])
    return modules


def private_builtins(modules: dict[str, types.ModuleType]) -> dict[str, Any]:
    """Builtins whose ``__import__`` serves ``modules`` and refuses any other ``sglang`` module.

    Set as a namespace's ``__builtins__``, it governs every import the code
    run in that namespace makes, at load time and inside functions alike.
    """
    real_import = builtins.__import__
    supplied = ", ".join(sorted(n for n in modules if n.count(".") >= 2))

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError(f"relative import of {name!r}: the sizing loader runs the file outside its package")
        if name in modules:
            return modules[name] if fromlist else modules[name.partition(".")[0]]
        if name == "sglang" or name.startswith("sglang."):
            raise ModuleNotFoundError(f"No module named {name!r} (the loader supplies only {supplied})", name=name)
        return real_import(name, globals, locals, fromlist, level)

    namespace = dict(builtins.__dict__)
    namespace["__import__"] = _import
    return namespace
