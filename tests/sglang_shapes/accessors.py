"""The accessors API shape of ``allocation_sizing.py`` (SGLang 0.5.18), for the test wheel cache.

Written for the tests in this project's words; the arithmetic is that of the
release (0.5.18 ``sglang/srt/mem_cache/allocation_sizing.py``: its ``get_alloc_len_per_decode`` (L),
``get_alloc_reserve_per_decode`` (R) and ``get_req_to_token_extra_context_len`` (the row headroom)):

* no arguments: every function reads the published bags (``get_spec``,
  ``get_schedule``, ``max_speculative_num_draft_tokens``);
* pages are ``get_schedule().page_size``, without ``attn_dcp_size`` (the seed bug #35424);
* the headroom covers the reserve only when ``page_size > 1`` (#33579);
* no ``get_alloc_page_size`` and no ``page_aligned_decode_alloc_lens``.
"""

from __future__ import annotations

from sglang.srt.runtime_context import get_schedule, get_spec, max_speculative_num_draft_tokens


def get_alloc_len_per_decode() -> int:
    """L of the batch's spec shape: S*K or Dmax; a paged tree gives each branch its own pages."""
    spec = get_spec()
    if spec.speculative_algorithm is None:
        return 1
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    steps, branches = spec.speculative_num_steps or 1, spec.speculative_eagle_topk or 1
    verify = max_speculative_num_draft_tokens()
    page = get_schedule().page_size
    if page > 1 and branches > 1 and SpeculativeAlgorithm.from_string(spec.speculative_algorithm).has_draft_kv():
        per_branch = (page - 1 + steps + page - 1) // page
        return max(per_branch * page * branches, verify)
    return max(steps * branches, verify)


def get_alloc_reserve_per_decode() -> int:
    """R = 2L."""
    return get_alloc_len_per_decode() * 2


def get_req_to_token_extra_context_len() -> int:
    """Row headroom: 4 + Dmax; with speculation on pages > 1, at least R + page - 1."""
    base = 4 + (max_speculative_num_draft_tokens() or 0)
    page = get_schedule().page_size
    spec_on = get_spec().speculative_algorithm is not None
    return max(base, get_alloc_reserve_per_decode() + page - 1) if spec_on and page > 1 else base
