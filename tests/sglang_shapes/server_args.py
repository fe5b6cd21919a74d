"""The server-args API shape of ``allocation_sizing.py`` (SGLang 0.5.16 and 0.5.17), for the test wheel cache.

Written for the tests in this project's words; the arithmetic is that of the
release (0.5.16 ``mem_cache/allocation_sizing.py``: ``get_alloc_len_per_decode`` (L), ``get_alloc_reserve_per_decode``
(R), ``get_req_to_token_extra_context_len`` (the row headroom); 0.5.17's file is the same):

* every function takes the ``server_args`` object (``None``: the published one);
* pages are ``server_args.page_size``, without ``attn_dcp_size`` (#35424);
* the headroom covers the reserve only when ``page_size > 1`` (#33579);
* no ``page_aligned_decode_alloc_lens``: growth is the decode path's (the model's).
"""

from __future__ import annotations

from sglang.srt.runtime_context import get_server_args
from sglang.srt.server_args import ServerArgs


def _args(server_args: ServerArgs | None) -> ServerArgs:
    """The object passed in, else the process' published server args."""
    return get_server_args() if server_args is None else server_args


def get_alloc_len_per_decode(server_args: ServerArgs | None = None) -> int:
    """L: one column without speculation; S*K (or Dmax) flat; page-duplicated branches for a paged tree."""
    args = _args(server_args)
    if args.speculative_algorithm is None:
        return 1
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    algorithm = SpeculativeAlgorithm.from_string(args.speculative_algorithm)
    steps = args.speculative_num_steps or 1
    branches = args.speculative_eagle_topk or 1
    verify = args.max_speculative_num_draft_tokens
    page = args.page_size
    tree = page > 1 and branches > 1 and algorithm.has_draft_kv()
    if not tree:
        return max(steps * branches, verify)
    pages_per_branch = -(-(page - 1 + steps) // page)
    return max(pages_per_branch * page * branches, verify)


def get_alloc_reserve_per_decode(server_args: ServerArgs | None = None) -> int:
    """R = 2L, the overlap double buffer."""
    return 2 * get_alloc_len_per_decode(server_args)


def get_req_to_token_extra_context_len(server_args: ServerArgs) -> int:
    """Row headroom: 4 + Dmax, raised to R + page - 1 with speculation on pages > 1 only."""
    headroom = 4 + (server_args.max_speculative_num_draft_tokens or 0)
    page = server_args.page_size
    if server_args.speculative_algorithm is None or page == 1:
        return headroom
    return max(headroom, get_alloc_reserve_per_decode(server_args) + page - 1)
