"""The one table of what each release's decode write path is made of (read in the 11 wheels 0.5.13-0.5.23).

Per release: the SGLang modules executed (``modules.Loader``), the module
holding the sizing functions, the entry point per kind of decode, the
allocator classes, SGLang's own guards, invariant checker and tail free,
and what cannot run and why.  Every ``Where`` is (dotted module, qualified
name, line of its ``def``/``class``, or of the guard statement) in that
release's wheel.

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

from dataclasses import dataclass, field

from allocator_model import algorithms as algo


@dataclass(frozen=True)
class Where:
    module: str  # dotted, "sglang.srt.speculative.eagle_utils"
    name: str  # "eagle_prepare_for_decode", "EagleDraftInputV2Mixin.prepare_for_decode"
    line: int

    def cite(self, release: str) -> str:
        path = self.module.removeprefix("sglang.").replace(".", "/") + ".py"
        return f"{release} {path} {self.line}"


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


def _new(
    version: str,
    *,
    eagle: int,
    guard: int,
    dispatcher: int,
    dflash: int,
    decode: int,
    paged: int,
    kernel: int,
    write: int,
    aux: int | None,
    checker: int,
    tail: int,
    uno: bool = False,
) -> Release:
    modules = _CORE_NEW + (("sglang.srt.mem_cache.allocator.page_interleave", _UNO) if uno else ())
    entries = {
        EAGLE: Where(_EAGLE, "eagle_prepare_for_decode", eagle),
        DFLASH: Where(_DFLASH, "DFlashDraftInputV2.prepare_for_decode", dflash),
        DECODE: Where(_ALLOCATION, "alloc_for_decode", decode),
    }
    if uno:
        entries[UNO] = Where(_UNO, "UnoDraftInput.prepare_for_decode", 81)
    return Release(
        version,
        modules + (CHECKER_MODULE,),
        _SIZING,
        entries,
        Where(_SPEC_UTILS, "spec_prepare_for_decode", dispatcher),
        Where(_PAGED, "PagedTokenToKVPoolAllocator", paged),
        Where(_TOKEN, "TokenToKVPoolAllocator", 28),
        Where(_ALLOCATION, "assign_req_to_token_pool", kernel),
        Where(_POOL, "ReqToTokenPool.write", write),
        Where(_EAGLE, "eagle_prepare_for_decode", guard),
        Where(_UNO, "UnoDraftInput.prepare_for_decode", 143) if uno else None,
        Where(_POOL, "ReqToTokenPool.alloc_aux_to_lengths", aux) if aux else None,
        Where(CHECKER_MODULE, "SchedulerInvariantChecker._check_kv_page_invariants", checker),
        Where(_COMMON, "_release_overallocated_kv_indices", tail),
        {} if uno else _pre_uno(version),
    )


# fmt: off
RELEASES: dict[str, Release] = {
    "0.5.13": Release(
        "0.5.13",
        _CORE_OLD + (_EAGLE_V2,),
        _COMMON,
        {
            EAGLE: Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", 126),
            DECODE: Where(_COMMON, "alloc_for_decode", 438),
        },
        None,
        Where(_PAGED, "PagedTokenToKVPoolAllocator", 98),
        Where(_TOKEN, "TokenToKVPoolAllocator", 28),
        Where(_CACHE_LOCS, "assign_req_to_token_pool", 43),
        Where(_POOL, "ReqToTokenPool.write", 174),
        Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", 186),
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
            EAGLE: Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", 30),
            DFLASH: Where(_DFLASH, "DFlashDraftInputV2.prepare_for_decode", 131),
            DECODE: Where(_COMMON, "alloc_for_decode", 574),
        },
        None,
        Where(_PAGED, "PagedTokenToKVPoolAllocator", 98),
        Where(_TOKEN, "TokenToKVPoolAllocator", 28),
        Where(_CACHE_LOCS, "assign_req_to_token_pool", 16),
        Where(_POOL, "ReqToTokenPool.write", 257),
        Where(_EAGLE_V2, "EagleDraftInputV2Mixin.prepare_for_decode", 76),
        unsupported={algo.DSPARK: _NO_DSPARK, algo.UNO: _NO_UNO},
    ),
    "0.5.15": Release(
        "0.5.15",
        _CORE_OLD + (_EAGLE, _DFLASH, CHECKER_MODULE),
        _COMMON,
        {
            EAGLE: Where(_EAGLE, "eagle_prepare_for_decode", 771),
            DFLASH: Where(_DFLASH, "DFlashDraftInputV2.prepare_for_decode", 117),
            DECODE: Where(_COMMON, "alloc_for_decode", 581),
        },
        Where(_SPEC_UTILS, "spec_prepare_for_decode", 676),
        Where(_PAGED, "PagedTokenToKVPoolAllocator", 105),
        Where(_TOKEN, "TokenToKVPoolAllocator", 28),
        Where(_CACHE_LOCS, "assign_req_to_token_pool", 17),
        Where(_POOL, "ReqToTokenPool.write", 270),
        Where(_EAGLE, "eagle_prepare_for_decode", 813),
        checker=Where(CHECKER_MODULE, "SchedulerInvariantChecker._check_kv_page_invariants", 303),
        unsupported={algo.DSPARK: _NO_DSPARK, algo.UNO: _NO_UNO},
    ),
    "0.5.16": _new("0.5.16", eagle=803, guard=850, dispatcher=832, dflash=113, decode=539, paged=105, kernel=597, write=273, aux=None, checker=305, tail=177),  # noqa: E501
    "0.5.17": _new("0.5.17", eagle=879, guard=925, dispatcher=1026, dflash=113, decode=539, paged=105, kernel=597, write=285, aux=None, checker=305, tail=178),  # noqa: E501
    "0.5.18": _new("0.5.18", eagle=897, guard=943, dispatcher=1032, dflash=113, decode=512, paged=105, kernel=569, write=285, aux=None, checker=300, tail=241),  # noqa: E501
    "0.5.19": _new("0.5.19", eagle=928, guard=960, dispatcher=1042, dflash=114, decode=521, paged=105, kernel=588, write=286, aux=357, checker=325, tail=299),  # noqa: E501
    "0.5.20": _new("0.5.20", eagle=1004, guard=1036, dispatcher=1081, dflash=114, decode=587, paged=116, kernel=654, write=292, aux=369, checker=350, tail=321, uno=True),  # noqa: E501
    "0.5.21": _new("0.5.21", eagle=1050, guard=1082, dispatcher=1144, dflash=114, decode=587, paged=116, kernel=654, write=311, aux=388, checker=371, tail=339, uno=True),  # noqa: E501
    "0.5.22": _new("0.5.22", eagle=1112, guard=1142, dispatcher=1189, dflash=114, decode=722, paged=136, kernel=685, write=411, aux=490, checker=350, tail=425, uno=True),  # noqa: E501
    "0.5.23": _new("0.5.23", eagle=857, guard=894, dispatcher=1249, dflash=114, decode=729, paged=136, kernel=692, write=413, aux=492, checker=350, tail=447, uno=True),  # noqa: E501
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


# What ``ScheduleBatch.prepare_for_decode`` (managers/schedule_batch.py, not executed) adds to each request
# after the non-speculative ``alloc_for_decode``: (field, line).  From 0.5.16 alloc_for_decode grows
# kv_allocated_len itself, from 0.5.19 kv_committed_len too [cite: decode-grows-both-lengths].
AFTER_DECODE: dict[str, tuple[tuple[str, int], ...]] = {
    "0.5.13": (("decode_batch_idx", 2550), ("kv_committed_len", 2551), ("kv_allocated_len", 2552)),
    "0.5.14": (("decode_batch_idx", 2639), ("kv_committed_len", 2640), ("kv_allocated_len", 2641)),
    "0.5.15": (("decode_batch_idx", 2650), ("kv_committed_len", 2651), ("kv_allocated_len", 2652)),
    "0.5.16": (("decode_batch_idx", 2818), ("kv_committed_len", 2819)),
    "0.5.17": (("decode_batch_idx", 2982), ("kv_committed_len", 2983)),
    "0.5.18": (("decode_batch_idx", 3073), ("kv_committed_len", 3074)),
    "0.5.19": (("decode_batch_idx", 3325),),
    "0.5.20": (("decode_batch_idx", 3467),),
    "0.5.21": (("decode_batch_idx", 3602),),
    "0.5.22": (("decode_batch_idx", 3608),),
    "0.5.23": (("decode_batch_idx", 3783),),
}


# Each non-standard kind of pool's own allocator class (allocator/<module>.py, line of its ``class``), where the
# release ships it in mem_cache/allocator/ (``SGLangRuntime.pool_allocator_classes`` loads them).
POOL_ALLOCATOR_NAMES = {
    "swa": "SWATokenToKVPoolAllocator",
    "hisparse": "HiSparseTokenToKVPoolAllocator",
    "unified-mamba": "UnifiedMambaTokenToKVPoolAllocator",
    "unified-swa": "UnifiedSWATokenToKVPoolAllocator",
    "unified-mamba-swa": "UnifiedMambaSWATokenToKVPoolAllocator",
}
_U20 = {"unified-mamba": ("unified_mamba", 42)}
# fmt: off
POOL_ALLOCATORS: dict[str, dict[str, tuple[str, int]]] = {
    "0.5.13": {"swa": ("swa", 18)},
    "0.5.14": {"swa": ("swa", 20), "hisparse": ("hisparse", 15)},
    "0.5.15": {"swa": ("swa", 20), "hisparse": ("hisparse", 15)},
    "0.5.16": {"swa": ("swa", 20), "hisparse": ("hisparse", 15)},
    "0.5.17": {"swa": ("swa", 20), "hisparse": ("hisparse", 15)},
    "0.5.18": {"swa": ("swa", 20), "hisparse": ("hisparse", 15)},
    "0.5.19": {"swa": ("swa", 20), "hisparse": ("hisparse", 15)},
    "0.5.20": {"swa": ("swa", 32), "hisparse": ("hisparse", 15), **_U20, "unified-swa": ("unified_hybrid_swa", 45), "unified-mamba-swa": ("unified_hybrid_swa", 799)},  # noqa: E501
    "0.5.21": {"swa": ("swa", 33), "hisparse": ("hisparse", 21), **_U20, "unified-swa": ("unified_hybrid_swa", 823), "unified-mamba-swa": ("unified_hybrid_swa", 1258)},  # noqa: E501
    "0.5.22": {"swa": ("swa", 34), "hisparse": ("hisparse", 22), **_U20, "unified-swa": ("unified_hybrid_swa", 783), "unified-mamba-swa": ("unified_hybrid_swa", 1289)},  # noqa: E501
    "0.5.23": {"swa": ("swa", 41), "hisparse": ("hisparse", 22), **_U20, "unified-swa": ("unified_hybrid_swa", 808), "unified-mamba-swa": ("unified_hybrid_swa", 1340)},  # noqa: E501
}
# fmt: on
