"""An ``allocation_sizing.py`` in SGLang 0.5.23's shape, for the pytest-plugin and action demos (a checkout's file).

Written for the tests in this project's words, with 0.5.23's arithmetic
(``sglang/srt/mem_cache/allocation_sizing.py`` of the 0.5.23 wheel: ``get_alloc_page_size``,
``get_alloc_len_per_decode`` (L, with its UNO branch and the spec v2 tree), ``get_alloc_reserve_per_decode``
(R = 2L), ``page_aligned_decode_alloc_lens``, ``get_req_to_token_extra_context_len`` (the row headroom)).
The headroom covers the reserve only when the alloc page is > 1 or for UNO:
at page 1 a speculative write can end past
its row (#33579, ``write-within-row/alloc-page-1``).

``HEADROOM_AT_EVERY_PAGE`` is the one line a test edits to apply the
reference's rule (``allocator_model.revisions``: the headroom covers
R + page - 1 at every page when speculation is on); 0.5.23 has it off.
"""

from __future__ import annotations

from sglang.srt.runtime_context import get_parallel, get_schedule, get_spec, max_speculative_num_draft_tokens

HEADROOM_AT_EVERY_PAGE = False


def get_alloc_page_size() -> int:
    """The allocator's page: page_size times the decode context parallel size."""
    return get_schedule().page_size * get_parallel().attn_dcp_size


def _algorithm():
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    return SpeculativeAlgorithm.from_string(get_spec().speculative_algorithm)


def get_alloc_len_per_decode() -> int:
    """L: 1 without speculation; Dmax + 1 for UNO; max(S*K, Dmax), a paged tree's branches on whole pages."""
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
    if page == 1 or branches == 1 or not algorithm.has_draft_kv():
        return max(steps * branches, verify)
    pages_per_branch = (page - 1 + steps + page - 1) // page
    return max(pages_per_branch * page * branches, verify)


def get_alloc_reserve_per_decode() -> int:
    """R = 2L, a double buffer for the overlap scheduler's lag."""
    return 2 * get_alloc_len_per_decode()


def page_aligned_decode_alloc_lens(reqs, *, reserve: int, page_size: int):
    """Per request: kv_allocated_len, its new value (committed + R rounded up to pages), and the slots needed."""
    cur = [r.kv.kv_allocated_len for r in reqs]
    nxt = [
        max(a, (r.kv.kv_committed_len + reserve + page_size - 1) // page_size * page_size)
        for r, a in zip(reqs, cur, strict=True)
    ]
    return cur, nxt, sum(n - a for n, a in zip(nxt, cur, strict=True))


def get_req_to_token_extra_context_len() -> int:
    """Row headroom past context_len: 4 + Dmax; with speculation at least R + page - 1 (0.5.23: page > 1 or UNO)."""
    headroom = 4 + (max_speculative_num_draft_tokens() or 0)
    if get_spec().speculative_algorithm is None:
        return headroom
    page = get_alloc_page_size()
    if HEADROOM_AT_EVERY_PAGE or page > 1 or _algorithm().is_uno():
        headroom = max(headroom, get_alloc_reserve_per_decode() + page - 1)
    return headroom
