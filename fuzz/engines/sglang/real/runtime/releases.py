"""The one table of what each release's decode write path is made of (read in the 11 wheels 0.5.13-0.5.23).

Per release: the SGLang modules executed (``modules.Loader``), the module
holding the sizing functions, the entry point per kind of decode, the
allocator classes, SGLang's own guards, invariant checker and tail free,
and what cannot run and why.  Every ``Where`` is (dotted module, qualified
name, release, and for a guard the statement and its words); its line (of
its ``def``/``class``, or of the guard statement) is the release record's
(``fuzz.engines.sglang.records``, generated from the wheel), never typed here.

Entry points (the highest the scheduler calls; ``ScheduleBatch.prepare_for_decode`` itself lives in
``managers/schedule_batch.py``, which is not executed):

    speculative  0.5.13-0.5.14  ``batch.spec_info.prepare_for_decode(batch)``: EagleDraftInputV2Mixin's
                                (eagle_info_v2.py) for the EAGLE family, DFlashDraftInputV2's (0.5.14)
                 0.5.15-0.5.23  ``spec_utils.spec_prepare_for_decode(batch)``, which routes: the DFLASH
                                family to ``batch.spec_info.prepare_for_decode``, UNO (0.5.20+) to
                                ``UnoDraftInput.prepare_for_decode``, everything else (EAGLE, EAGLE3,
                                STANDALONE, FROZEN_KV_MTP, NGRAM) to ``eagle_utils.eagle_prepare_for_decode``
    non-spec     every release  ``alloc_for_decode(batch, token_per_req=1)`` (mem_cache/common.py to 0.5.15,
                                mem_cache/allocation.py from 0.5.16; from 0.5.22 a per-device table whose
                                default is ``alloc_for_decode_default``)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

from allocator_model import algorithms as algo
from fuzz.engines.sglang.records import record


@dataclass(frozen=True)
class Anchor:
    """A statement inside the named function: its kind and the words its message starts with (a guard)."""

    statement: str  # "assert", "raise"
    says: str


# SGLang's own guards on the row, by the words their messages start with (``writepath._guard`` matches them).
EAGLE_GUARD_SAYS = "spec v2 page>1 topk>1 draft over-allocation"
UNO_GUARD_SAYS = "UNO allocation exceeds"


@dataclass(frozen=True)
class Where:
    module: str  # dotted, "sglang.srt.speculative.eagle_utils"
    name: str  # "eagle_prepare_for_decode", "EagleDraftInputV2Mixin.prepare_for_decode"
    release: str = ""  # whose record holds its line ("": a name only, never cited)
    anchor: Anchor | None = None  # a statement inside ``name`` (a guard), not its definition

    @property
    def key(self) -> str:
        """Its key in the release record's ``where`` section."""
        return f"{self.module}:{self.name}" + (f" {self.anchor.statement}" if self.anchor else "")

    @property
    def line(self) -> int:
        """Its line in the release's wheel: the ``def``/``class``, or the anchored statement (the record's)."""
        return int(record(self.release)["where"][self.key])

    def cite(self) -> str:
        path = self.module.removeprefix("sglang.").replace(".", "/") + ".py"
        return f"{self.release} {path} {self.line}"


EAGLE, DFLASH, UNO, DECODE = "eagle", "dflash", "uno", "decode"  # the kinds of decode step


def kind_of(algorithm: str | None) -> str:
    """Which entry a speculative algorithm's decode step takes (the routing of spec_prepare_for_decode)."""
    if algorithm is None:
        return DECODE
    if algorithm in algo.DFLASH_FAMILY:
        return DFLASH
    if algo.is_uno(algorithm):
        return UNO
    return EAGLE


@dataclass(frozen=True)
class Release:
    version: str
    modules: tuple[str, ...]  # executed, dotted
    sizing: str  # where get_alloc_reserve_per_decode & co live
    entries: dict[str, Where]  # kind -> the function that kind of step enters
    dispatcher: Where | None  # spec_prepare_for_decode (0.5.15+)
    paged_allocator: Where
    token_allocator: Where
    kernel: Where  # assign_req_to_token_pool, the unchecked writer
    pool_write: Where  # ReqToTokenPool.write (sliced onto the pool stand-in)
    eagle_guard: Where  # ``assert max_alloc_len <= row_width`` (page > 1 and topk > 1)
    uno_guard: Where | None = None  # RuntimeError("UNO allocation exceeds the req_to_token row")
    pool_aux: Where | None = None  # ReqToTokenPool.alloc_aux_to_lengths (0.5.19+)
    checker: Where | None = None  # SchedulerInvariantChecker._check_kv_page_invariants (0.5.15+)
    tail_free: Where | None = None  # _release_overallocated_kv_indices (0.5.16+)
    unsupported: dict[str, str] = field(default_factory=dict)  # algorithm -> why it has no decode entry here

    def wheres(self) -> Iterator[tuple[str, Where]]:
        """Every ``Where`` of the row, with the field that holds it (``entries[eagle]`` for a dict's)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Where):
                yield f.name, value
            elif isinstance(value, dict):
                yield from ((f"{f.name}[{k}]", w) for k, w in value.items() if isinstance(w, Where))


_CORE_OLD = (
    "sglang.srt.mem_cache.common",
    "sglang.srt.mem_cache.allocator.base",
    "sglang.srt.mem_cache.allocator.paged",
    "sglang.srt.mem_cache.allocator.token",
    "sglang.srt.mem_cache.triton_ops.common",
    "sglang.srt.mem_cache.triton_ops.allocator",
    "sglang.srt.speculative.triton_ops.cache_locs",
    "sglang.srt.speculative.spec_info",
    "sglang.srt.speculative.spec_utils",
)
_CORE_NEW = (
    "sglang.srt.mem_cache.allocation",
    "sglang.srt.mem_cache.allocation_sizing",
    "sglang.srt.mem_cache.common",
    "sglang.srt.mem_cache.allocator.base",
    "sglang.srt.mem_cache.allocator.paged",
    "sglang.srt.mem_cache.allocator.token",
    "sglang.kernels.ops.memory.allocator",
    "sglang.kernels.ops.memory.common",
    "sglang.srt.speculative.spec_info",
    "sglang.srt.speculative.spec_utils",
    "sglang.srt.speculative.eagle_utils",
    "sglang.srt.speculative.dflash_info_v2",
)
CHECKER_MODULE = "sglang.srt.managers.scheduler_components.invariant_checker"
_EAGLE_V2 = "sglang.srt.speculative.eagle_info_v2"
_EAGLE = "sglang.srt.speculative.eagle_utils"
_DFLASH = "sglang.srt.speculative.dflash_info_v2"
_UNO = "sglang.srt.speculative.uno_info"
_SPEC_UTILS = "sglang.srt.speculative.spec_utils"
_ALLOCATION = "sglang.srt.mem_cache.allocation"
_COMMON = "sglang.srt.mem_cache.common"
_PAGED = "sglang.srt.mem_cache.allocator.paged"
_TOKEN = "sglang.srt.mem_cache.allocator.token"
_POOL = "sglang.srt.mem_cache.memory_pool"
_SIZING = "sglang.srt.mem_cache.allocation_sizing"
_CACHE_LOCS = "sglang.srt.speculative.triton_ops.cache_locs"
# Why 0.5.13 has no decode entry for an algorithm (messages a run prints; the facts:
# [cite: ngram-verify-input-class] [cite: ngram-v1-verify-alloc]; [cite: spec-v2-runs-draft-prepare]
# [cite: supports-spec-v2]; [cite: dflash-v1-verify-alloc]).
_NO_NGRAM_0513 = (
    "0.5.13's NgramVerifyInput (speculative/ngram_info.py) does not mix in EagleDraftInputV2Mixin: "
    "NGRAM allocates at verify (NgramVerifyInput.prepare_for_verify), not in a decode prepare"
)
_NO_FROZEN_0513 = (
    "0.5.13 runs the draft input's prepare_for_decode only for spec v2 (managers/schedule_batch.py), and "
    "supports_spec_v2 excludes FROZEN_KV_MTP (speculative/spec_info.py)"
)
_NO_DFLASH_0513 = (
    "0.5.13 has only DFLASH v1 (speculative/dflash_info.py: DFlashDraftInput has no prepare_for_decode; "
    "its KV is allocated at verify, DFlashVerifyInput.prepare_for_verify)"
)
_NO_DSPARK = "DSPARK first ships in 0.5.16 (speculative/spec_info.py SpeculativeAlgorithm)"
_NO_UNO = "UNO first ships in 0.5.20 (speculative/uno_info.py)"


def _pre_uno(version: str) -> dict[str, str]:
    return {algo.UNO: _NO_UNO}


def _new(version: str, *, aux: bool, uno: bool = False) -> Release:
    modules = _CORE_NEW + (("sglang.srt.mem_cache.allocator.page_interleave", _UNO) if uno else ())
    entries = {
        EAGLE: Where(_EAGLE, "eagle_prepare_for_decode", version),
        DFLASH: Where(_DFLASH, "DFlashDraftInputV2.prepare_for_decode", version),
        DECODE: Where(_ALLOCATION, "alloc_for_decode", version),
    }
    if uno:
        entries[UNO] = Where(_UNO, "UnoDraftInput.prepare_for_decode", version)
    return Release(
        version,
        modules + (CHECKER_MODULE,),
        _SIZING,
        entries,
        Where(_SPEC_UTILS, "spec_prepare_for_decode", version),
        Where(_PAGED, "PagedTokenToKVPoolAllocator", version),
        Where(_TOKEN, "TokenToKVPoolAllocator", version),
        Where(_ALLOCATION, "assign_req_to_token_pool", version),
        Where(_POOL, "ReqToTokenPool.write", version),
        Where(_EAGLE, "eagle_prepare_for_decode", version, Anchor("assert", EAGLE_GUARD_SAYS)),
        Where(_UNO, "UnoDraftInput.prepare_for_decode", version, Anchor("raise", UNO_GUARD_SAYS)) if uno else None,
        Where(_POOL, "ReqToTokenPool.alloc_aux_to_lengths", version) if aux else None,
        Where(CHECKER_MODULE, "SchedulerInvariantChecker._check_kv_page_invariants", version),
        Where(_COMMON, "_release_overallocated_kv_indices", version),
        {} if uno else _pre_uno(version),
    )


# fmt: off
RELEASES: dict[str, Release] = {
    "0.5.13": Release(
        "0.5.13",
        _CORE_OLD + (_EAGLE_V2,),
        _COMMON,
        {
            EAGLE: Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", "0.5.13"),
            DECODE: Where(_COMMON, "alloc_for_decode", "0.5.13"),
        },
        None,
        Where(_PAGED, "PagedTokenToKVPoolAllocator", "0.5.13"),
        Where(_TOKEN, "TokenToKVPoolAllocator", "0.5.13"),
        Where(_CACHE_LOCS, "assign_req_to_token_pool", "0.5.13"),
        Where(_POOL, "ReqToTokenPool.write", "0.5.13"),
        Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", "0.5.13", Anchor("assert", EAGLE_GUARD_SAYS)),
        unsupported={
            algo.NGRAM: _NO_NGRAM_0513,
            algo.FROZEN_KV_MTP: _NO_FROZEN_0513,
            algo.DFLASH: _NO_DFLASH_0513,
            algo.DSPARK: _NO_DSPARK,
            algo.UNO: _NO_UNO,
        },
    ),
    "0.5.14": Release(
        "0.5.14",
        _CORE_OLD + (_EAGLE_V2, _DFLASH),
        _COMMON,
        {
            EAGLE: Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", "0.5.14"),
            DFLASH: Where(_DFLASH, "DFlashDraftInputV2.prepare_for_decode", "0.5.14"),
            DECODE: Where(_COMMON, "alloc_for_decode", "0.5.14"),
        },
        None,
        Where(_PAGED, "PagedTokenToKVPoolAllocator", "0.5.14"),
        Where(_TOKEN, "TokenToKVPoolAllocator", "0.5.14"),
        Where(_CACHE_LOCS, "assign_req_to_token_pool", "0.5.14"),
        Where(_POOL, "ReqToTokenPool.write", "0.5.14"),
        Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", "0.5.14", Anchor("assert", EAGLE_GUARD_SAYS)),
        unsupported={algo.DSPARK: _NO_DSPARK, algo.UNO: _NO_UNO},
    ),
    "0.5.15": Release(
        "0.5.15",
        _CORE_OLD + (_EAGLE, _DFLASH, CHECKER_MODULE),
        _COMMON,
        {
            EAGLE: Where(_EAGLE, "eagle_prepare_for_decode", "0.5.15"),
            DFLASH: Where(_DFLASH, "DFlashDraftInputV2.prepare_for_decode", "0.5.15"),
            DECODE: Where(_COMMON, "alloc_for_decode", "0.5.15"),
        },
        Where(_SPEC_UTILS, "spec_prepare_for_decode", "0.5.15"),
        Where(_PAGED, "PagedTokenToKVPoolAllocator", "0.5.15"),
        Where(_TOKEN, "TokenToKVPoolAllocator", "0.5.15"),
        Where(_CACHE_LOCS, "assign_req_to_token_pool", "0.5.15"),
        Where(_POOL, "ReqToTokenPool.write", "0.5.15"),
        Where(_EAGLE, "eagle_prepare_for_decode", "0.5.15", Anchor("assert", EAGLE_GUARD_SAYS)),
        checker=Where(CHECKER_MODULE, "SchedulerInvariantChecker._check_kv_page_invariants", "0.5.15"),
        unsupported={algo.DSPARK: _NO_DSPARK, algo.UNO: _NO_UNO},
    ),
    "0.5.16": _new("0.5.16", aux=False),
    "0.5.17": _new("0.5.17", aux=False),
    "0.5.18": _new("0.5.18", aux=False),
    "0.5.19": _new("0.5.19", aux=True),
    "0.5.20": _new("0.5.20", aux=True, uno=True),
    "0.5.21": _new("0.5.21", aux=True, uno=True),
    "0.5.22": _new("0.5.22", aux=True, uno=True),
    "0.5.23": _new("0.5.23", aux=True, uno=True),
}
# fmt: on


def release_for(version: str | None) -> Release:
    """The table row of ``version``; an unknown version (a checkout) takes the newest row not after it."""
    if version in RELEASES:
        return RELEASES[version]  # type: ignore[index]
    newest = next(reversed(RELEASES.values()))
    if version is None:
        return newest
    try:
        wanted = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
    except ValueError:
        return newest
    older = [r for v, r in RELEASES.items() if tuple(map(int, v.split("."))) <= wanted]
    return older[-1] if older else next(iter(RELEASES.values()))


# Each non-standard kind of pool's own allocator class, by SGLang's name: where a release defines it (its module of
# mem_cache/allocator/ and its line) is read from the wheel, the release record's ``pool_allocators``.
POOL_ALLOCATOR_NAMES = {
    "swa": "SWATokenToKVPoolAllocator",
    "hisparse": "HiSparseTokenToKVPoolAllocator",
    "unified-mamba": "UnifiedMambaTokenToKVPoolAllocator",
    "unified-swa": "UnifiedSWATokenToKVPoolAllocator",
    "unified-mamba-swa": "UnifiedMambaSWATokenToKVPoolAllocator",
}
