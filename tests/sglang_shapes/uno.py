"""The uno API shape of ``allocation_sizing.py`` (SGLang 0.5.20 to 0.5.23), for the test wheel cache.

Written for the tests in this project's words; the arithmetic is that of the
releases (0.5.20 ``sglang/srt/mem_cache/allocation_sizing.py``: ``get_alloc_page_size``,
``get_alloc_len_per_decode`` (L, with its UNO branch), ``get_alloc_reserve_per_decode`` (R),
``page_aligned_decode_alloc_lens``, ``get_req_to_token_extra_context_len`` (the row headroom); 0.5.21 is the
same file, 0.5.22 and 0.5.23 add ``get_mamba_tracking_slots``,
which sizes no row):

* as 0.5.19, plus UNO: L = Dmax + 1 (a clean-root slot), and UNO's headroom
  covers the reserve at every page size; other algorithms still only for
  alloc page > 1 (#33579 open).
"""

from __future__ import annotations

from sglang.srt.runtime_context import get_parallel, get_schedule, get_spec, max_speculative_num_draft_tokens


def get_alloc_page_size() -> int:
    """The page the token-to-KV allocator hands out under decode context parallelism."""
    return get_schedule().page_size * get_parallel().attn_dcp_size


def _algorithm():
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    return SpeculativeAlgorithm.from_string(get_spec().speculative_algorithm)


def get_alloc_len_per_decode() -> int:
    """L at the alloc page: Dmax + 1 for UNO; else S*K or Dmax, a paged tree's branches on their own pages."""
    spec = get_spec()
    if spec.speculative_algorithm is None:
        return 1
    verify = max_speculative_num_draft_tokens()
    algorithm = _algorithm()
    if algorithm.is_uno():
        if verify is None:
            raise RuntimeError("UNO needs speculative_num_draft_tokens")
        return verify + 1
    steps, branches = spec.speculative_num_steps or 1, spec.speculative_eagle_topk or 1
    page = get_alloc_page_size()
    if page > 1 and branches > 1 and algorithm.has_draft_kv():
        return max((page - 1 + steps + page - 1) // page * page * branches, verify)
    return max(steps * branches, verify)


def get_alloc_reserve_per_decode() -> int:
    """R = 2L."""
    return 2 * get_alloc_len_per_decode()


def page_aligned_decode_alloc_lens(reqs, *, reserve: int, page_size: int):
    """(kv_allocated_len per request, its new value: committed + reserve rounded up to pages, the slots needed)."""
    cur = [r.kv.kv_allocated_len for r in reqs]
    nxt = [
        max(a, (r.kv.kv_committed_len + reserve + page_size - 1) // page_size * page_size)
        for r, a in zip(reqs, cur, strict=True)
    ]
    return cur, nxt, sum(n - a for n, a in zip(nxt, cur, strict=True))


def get_req_to_token_extra_context_len() -> int:
    """Row headroom: 4 + Dmax; with speculation, at least R + page - 1 when the alloc page > 1 or for UNO."""
    headroom = 4 + (max_speculative_num_draft_tokens() or 0)
    if get_spec().speculative_algorithm is None:
        return headroom
    page = get_alloc_page_size()
    if page > 1 or _algorithm().is_uno():
        headroom = max(headroom, get_alloc_reserve_per_decode() + page - 1)
    return headroom
