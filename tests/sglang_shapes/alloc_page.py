"""The alloc-page API shape of ``allocation_sizing.py`` (SGLang 0.5.19), for the test wheel cache.

Written for the tests in this project's words; the arithmetic is that of the
release (0.5.19 ``sglang/srt/mem_cache/allocation_sizing.py``: ``get_alloc_page_size``,
``get_alloc_len_per_decode`` (L), ``get_alloc_reserve_per_decode`` (R), ``page_aligned_decode_alloc_lens``,
``get_req_to_token_extra_context_len`` (the row headroom)):

* the allocator's page ``get_alloc_page_size() = page_size * attn_dcp_size``
  rounds everything (#35424 fixed);
* growth is whole allocator pages, never below what is allocated;
* the headroom still covers the reserve only for alloc page > 1 (#33579).
"""

from __future__ import annotations

from sglang.srt.runtime_context import get_parallel, get_schedule, get_spec, max_speculative_num_draft_tokens


def get_alloc_page_size() -> int:
    """The page the token-to-KV allocator hands out under decode context parallelism."""
    return get_parallel().attn_dcp_size * get_schedule().page_size


def get_alloc_len_per_decode() -> int:
    """L at the alloc page: S*K or Dmax; a paged tree gives each branch its own pages."""
    spec = get_spec()
    if spec.speculative_algorithm is None:
        return 1
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    steps, branches = spec.speculative_num_steps or 1, spec.speculative_eagle_topk or 1
    verify = max_speculative_num_draft_tokens()
    page = get_alloc_page_size()
    flat = max(steps * branches, verify)
    if page == 1 or branches == 1:
        return flat
    if not SpeculativeAlgorithm.from_string(spec.speculative_algorithm).has_draft_kv():
        return flat
    return max(-(-(page - 1 + steps) // page) * page * branches, verify)


def get_alloc_reserve_per_decode() -> int:
    """R = 2L."""
    return 2 * get_alloc_len_per_decode()


def page_aligned_decode_alloc_lens(reqs, *, reserve: int, page_size: int):
    """(kv_allocated_len per request, its new value: committed + reserve rounded up to pages, the slots needed)."""
    before = [r.kv.kv_allocated_len for r in reqs]
    after = []
    for r, allocated in zip(reqs, before, strict=True):
        wanted = r.kv.kv_committed_len + reserve
        after.append(max(allocated, -(-wanted // page_size) * page_size))
    return before, after, sum(after) - sum(before)


def get_req_to_token_extra_context_len() -> int:
    """Row headroom: 4 + Dmax; with speculation on an alloc page > 1, at least R + page - 1."""
    headroom = 4 + (max_speculative_num_draft_tokens() or 0)
    page = get_alloc_page_size()
    if get_spec().speculative_algorithm is not None and page > 1:
        headroom = max(headroom, get_alloc_reserve_per_decode() + page - 1)
    return headroom
