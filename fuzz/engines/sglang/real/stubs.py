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
    get_parallel().dcp_enabled          attn_dcp_size > 1 (``runtime_context.py`` [cite: runtime-context-dcp-enabled])
    get_memory().enable_hisparse        the HiSparse kind of pool (``allocator_model.pools``)
    get_spec().speculative_*            algorithm name, S, K, D of the run-time shape
    max_speculative_num_draft_tokens()  Dmax, fixed at launch (adaptive spec moves S and D, not Dmax)
    get_server_args()                   all of the above as one object (0.5.16-0.5.17 and main take it
                                        as an argument; main reads the DCP size as ``dcp_size``)

Outside a bound call every accessor raises, as the real ones do before
publish, so a file that reads its configuration at import time fails to load.

Loading survives upstream's churn: EVERY ``sglang.*`` module the file
imports resolves, privately, to a ``StandInModule``.  The names in ``KNOWN``
answer from the example's configuration wherever the file imports them from,
the small helpers of ``HELPERS`` answer faithfully, and any other name is
``Unsupplied``: harmless while the sizing functions never use it, and a use
names the missing piece in one line (``StandInMissing``, exit 2).
"""

from __future__ import annotations

import contextlib
import enum
import types
from collections.abc import Iterator
from typing import Any

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.numeric import ceil_div, ceil_to_page
from allocator_model.pools import KVPool
from fuzz.targets.base import TargetError


class Bag:
    """A read-only config bag; reading a leaf that is not published names it."""

    def __init__(self, name: str, **leaves: Any):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_leaves", leaves)

    def __getattr__(self, leaf: str) -> Any:
        try:
            return self._leaves[leaf]
        except KeyError:
            raise self._missing(leaf) from None

    def _missing(self, leaf: str) -> Exception:
        return AttributeError(
            f"the {self._name} bag has no leaf {leaf!r} (kvrow-fuzz publishes {', '.join(sorted(self._leaves))})"
        )

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
    parallel = dict(
        attn_dcp_size=cfg.attn_dcp_size,
        dcp_size=cfg.attn_dcp_size,
        dcp_enabled=cfg.attn_dcp_size > 1,
        tp_size=cfg.tp_size or cfg.attn_dcp_size,
    )
    memory = dict(enable_hisparse=cfg.kv_pool is KVPool.HISPARSE)
    return {
        "schedule": Bag("schedule", **schedule),
        "parallel": Bag("parallel", **parallel),
        "spec": Bag("spec", **spec),
        "memory": Bag("memory", **memory),
        "server_args": Bag("server_args", **schedule, **parallel, **spec, **memory, context_length=cfg.context_len),
        "dmax": cfg.max_speculative_num_draft_tokens,
    }


class ServerArgs:
    """Only a name for type annotations (0.5.16-0.5.17 and main import it); calls get the published bag."""


class StandInMissing(TargetError):
    """The sizing file used a piece of SGLang that kvrow-fuzz does not stand in for: bad input, exit 2.

    Not a finding: the real code never ran, so nothing is known about it.
    """


# Small helpers of ``sglang.srt.utils.common`` with a documented meaning, answered faithfully (cdiv,
# next_power_of_2, round_up, ceil_align, ceil_div).  Each is the same arithmetic the model uses, written once there.
HELPERS: dict[str, Any] = {
    "ceil_div": ceil_div,
    "cdiv": ceil_div,
    "ceil_align": ceil_to_page,
    "round_up": ceil_to_page,
    "next_power_of_2": lambda n: 1 << (n - 1).bit_length() if n > 0 else 1,
    # Platform probes, which 0.5.13-0.5.15 ``mem_cache/common.py`` call at import (``_is_npu = is_npu()``,
    # ``_is_hip = is_hip()``, ``_is_cuda = is_cuda()`` [cite: common-platform-probes], the probes of
    # ``utils/common.py``).  The model is a CUDA deployment: its allocator is the non-NPU branch's
    # ``PagedTokenToKVPoolAllocator`` with page_size * dcp_size (``model_executor/model_runner_kv_cache_mixin.py``:
    # the NPU branch [cite: mixin-npu-allocator-branch], the CUDA one [cite: paged-allocator-page-dcp]), so
    # CUDA answers True and ROCm (HIP) and Ascend (NPU) False.  The sizing functions never read them.
    "is_cuda": lambda: True,
    "is_hip": lambda: False,
    "is_npu": lambda: False,
}


def _unsupplied_op(self: Unsupplied, *args: Any, **kwargs: Any) -> Any:
    raise StandInMissing(
        f"the sizing file uses {self._qualname}, which kvrow-fuzz has no stand-in for "
        "(the stand-ins are listed in fuzz/engines/sglang/real/stubs.py: KNOWN, HELPERS)"
    )


# SGLang classes no modeled deployment has an instance of: ``isinstance`` against them is False.
NOT_MODELED = frozenset({"DeepSeekV4TokenToKVPool"})


class Unsupplied:
    """A name an ``sglang`` module was asked for that has no stand-in: harmless until used.

    Importing it, annotating with it, passing it around: fine (the sizing
    functions never touch most of what a file imports).  Calling it, reading
    a value from it, doing arithmetic with it or subclassing it raises
    ``StandInMissing`` naming it, and the command exits 2 with that line.
    """

    def __init__(self, qualname: str) -> None:
        object.__setattr__(self, "_qualname", qualname)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return Unsupplied(f"{self._qualname}.{name}")

    def __repr__(self) -> str:
        return f"<kvrow-fuzz: no stand-in for {self._qualname}>"

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return _unsupplied_op(self)  # type: ignore[no-any-return]

    def __instancecheck__(self, obj: Any) -> bool:
        """``isinstance(x, C)`` for an SGLang class C with no stand-in: False for ``NOT_MODELED``, else stop.

        The pool builders ask ``isinstance(pool, DeepSeekV4TokenToKVPool)``
        (``kv_cache_configurator.py`` [cite: configurator-dsv4-isinstance]): no modeled deployment
        has that pool, so False is SGLang's answer.  For any other class the
        real object may well be one, so the run stops naming it rather than
        guess (``StandInMissing``).
        """
        if self._qualname.rpartition(".")[2] in NOT_MODELED:
            return False
        return _unsupplied_op(self)  # type: ignore[no-any-return]


for _op in (
    "__call__ __bool__ __int__ __float__ __index__ __len__ __iter__ __contains__ __getitem__ __setattr__ "
    "__lt__ __le__ __gt__ __ge__ __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __floordiv__ "
    "__rfloordiv__ __truediv__ __rtruediv__ __mod__ __rmod__ __neg__ __pow__ __and__ __or__ __enter__"
).split():
    setattr(Unsupplied, _op, _unsupplied_op)


class StandInModule(types.ModuleType):
    """Any ``sglang.*`` module the file imports: known names answer, anything else is ``Unsupplied``."""

    def __init__(self, name: str, known: dict[str, Any], used: set[str]) -> None:
        super().__init__(name, "kvrow-fuzz stand-in: known accessors answer from the example's configuration")
        self.__dict__["_known"] = known
        self.__dict__["_used"] = used

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._used.add(name)
        return self._known.get(name, Unsupplied(f"{self.__name__}.{name}"))


# What the stand-ins answer, by name, from whichever ``sglang`` module the file imports it
# (upstream moves these between modules; their meaning stays).
KNOWN = frozenset(
    {
        "get_schedule",
        "get_parallel",
        "get_spec",
        "get_memory",
        "get_server_args",
        "get_global_server_args",
        "max_speculative_num_draft_tokens",
        "ServerArgs",
        "SpeculativeAlgorithm",
        "current_platform",
    }
)


class CudaPlatform:
    """``sglang.srt.platforms.current_platform`` on the CUDA machine the model stands for.

    In-tree (``platforms/device_mixin.py``: out of tree only for an externally
    registered platform [cite: platform-is-out-of-tree]), with the default paged
    allocator (``platforms/interface.py``: None for the in-tree default
    [cite: platform-paged-allocator-cls]).  The pool builders ask both (``kv_cache_configurator.py``).
    """

    def is_out_of_tree(self) -> bool:
        return False

    def get_paged_allocator_cls(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise StandInMissing(
            f"current_platform.{name}: kvrow-fuzz's CUDA platform stand-in answers only "
            "is_out_of_tree() and get_paged_allocator_cls()"
        )


class StandInBag(Bag):
    """A stand-in object of the pool builders (the configurator's ``self``, the pool sizes): a leaf it does not
    publish stops the run naming it (``StandInMissing``), never a guess (``hasattr`` included)."""

    def _missing(self, leaf: str) -> Exception:
        return StandInMissing(f"{self._name}.{leaf}: kvrow-fuzz's stand-in publishes {', '.join(sorted(self._leaves))}")


def known_names(published: Published) -> dict[str, Any]:
    """The stand-ins by name: accessors bound to ``published``, the two types, the helpers."""
    known: dict[str, Any] = dict(
        get_schedule=lambda: published.read("schedule"),
        get_parallel=lambda: published.read("parallel"),
        get_spec=lambda: published.read("spec"),
        get_memory=lambda: published.read("memory"),
        get_server_args=lambda: published.read("server_args"),
        get_global_server_args=lambda: published.read("server_args"),
        max_speculative_num_draft_tokens=lambda: published.read("dmax"),
        ServerArgs=ServerArgs,
        SpeculativeAlgorithm=SpeculativeAlgorithm,
        current_platform=CudaPlatform(),
    )
    assert set(known) == KNOWN
    return known | HELPERS
