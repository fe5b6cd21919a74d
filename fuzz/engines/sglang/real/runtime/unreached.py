"""The sites of the executed write path (``sites.scan``) that the decode steps this tool runs never reach, each
with its reason; every other site is judged on each step that reaches it (``ownership``), and
tests/test_write_sites.py holds each reached site of 0.5.23's to a plant that is found."""

from __future__ import annotations

from .sites import Site

# The sites the decode steps this tool runs never reach, and why (keyed by qualified function, or by
# "function anchor" for one branch of a function that runs).  Every other site is judged on each step it is
# reached by (``ownership``): tests/test_write_sites.py holds each of 0.5.23's to a plant that is found.
_PREFILL = "prefill: the harness's (runtime.checks.prefill), not SGLang's extend path"
_FREE = "freeing: the decode steps free nothing (a finished request's free is the lifecycle's)"
_ABSTRACT = "the base class's method: every allocator built here overrides it"
_INTERLEAVE = "the page-interleaved (sharded) pool: not built (only the standard kind's allocators are)"
NOT_RUN: dict[str, str] = {
    "alloc_extend_kernel out_indices + output_start_loc + num_part1 + num_part2 + offset_one_page": "a new "
    "partial page: every decode allocation ends on a page (page_aligned_decode_alloc_lens; prefill is the harness's)",
    "get_and_clear_swa_pages_kernel": "the SWA allocator: not built (only the standard kind's allocators are)",
    "write_req_to_token_pool_triton": _PREFILL,
    "write_cache_indices": _PREFILL,
    "alloc_for_extend": _PREFILL,
    "PagedTokenToKVPoolAllocator.alloc": _PREFILL + " (it calls this hand-out, outside the decode step)",
    "alloc_for_decode_default batch.tree_cache.token_to_kv_pool_allocator.free": "the error path of "
    "alloc_aux_to_lengths (it raises only for a pool with aux buffers)",
    "alloc_for_spec_decode allocator.alloc_logical_only": "HiSparse (batch.hisparse_coordinator): not built",
    "BaseTokenToKVPoolAllocator.alloc": _ABSTRACT,
    "BaseTokenToKVPoolAllocator.alloc_decode": _ABSTRACT,
    "BaseTokenToKVPoolAllocator.alloc_extend": _ABSTRACT,
    "BaseTokenToKVPoolAllocator.free": _ABSTRACT,
    "BaseTokenToKVPoolAllocator.free_full": _FREE,
    "BaseTokenToKVPoolAllocator.free_full_segment": _FREE,
    "BaseTokenToKVPoolAllocator.free_full_segments": _FREE,
    "BaseTokenToKVPoolAllocator.free_group_end": _FREE,
    "BaseTokenToKVPoolAllocator.free_segment": _FREE,
    "BaseTokenToKVPoolAllocator.free_segments": _FREE,
    "PageInterleavePoolAllocator.alloc": _INTERLEAVE,
    "PageInterleavePoolAllocator.alloc_cyclic": _INTERLEAVE,
    "PageInterleavePoolAllocator.alloc_decode": _INTERLEAVE,
    "PageInterleavePoolAllocator.alloc_extend": _INTERLEAVE,
    "PageInterleavePoolAllocator.free": _INTERLEAVE,
    "PageInterleavePoolAllocator.free_segment": _INTERLEAVE,
    "PagedTokenToKVPoolAllocator.free": _FREE,
    "PagedTokenToKVPoolAllocator.free_segment": _FREE,
    "TokenToKVPoolAllocator.free": _FREE,
    "TokenToKVPoolAllocator.free_page_ids": _FREE,
    "_release_overallocated_kv_indices": _FREE,
    "free_kv_row_segments": _FREE,
    "release_kv_cache": _FREE,
}


def not_run(site: Site) -> str | None:
    """Why the decode steps this tool runs never reach ``site`` (None: they do, and it is judged there)."""
    return NOT_RUN.get(f"{site.function} {site.anchor}") or NOT_RUN.get(site.function)
