"""The ``mem_cache/common.py`` shape (SGLang 0.5.13), for the test wheel cache.

Written for the tests in this project's words; the arithmetic is that of the
release (0.5.13 ``sglang/srt/mem_cache/common.py``: ``get_alloc_len_per_decode`` (L),
``get_alloc_reserve_per_decode`` (R), ``get_req_to_token_extra_context_len`` (the row headroom)).  Before 0.5.16 the
three sizing functions live among the cache helpers, so the file also does
what ``common.py`` does at import: it imports numpy, torch and cache modules
the sizing functions never use (stand-in placeholders), and probes the
platform (``is_hip``/``is_npu``/``is_cuda``, answered by the loader's stand-ins):

* every function takes the ``server_args`` object (``None``: the global one);
* pages are ``server_args.page_size``, without the DCP size;
* the headroom covers the reserve, with no ``page - 1``, only when
  ``page_size > 1`` and ``topk > 1``;
* no ``page_aligned_decode_alloc_lens``: growth is the decode path's (the model's).
"""

from __future__ import annotations

import numpy as np
import torch
from sglang.srt.mem_cache.memory_pool import ReqToTokenPool
from sglang.srt.mem_cache.triton_ops.common import write_req_to_token_pool_triton
from sglang.srt.server_args import ServerArgs, get_global_server_args
from sglang.srt.utils import is_cuda, is_hip, is_npu

_is_npu = is_npu()
_is_hip = is_hip()
_is_cuda = is_cuda()

TREE_NEEDS_DRAFT_KV = False  # 0.5.13: the paged tree term applies to NGRAM too (no has_draft_kv check)


def _args(server_args: ServerArgs | None) -> ServerArgs:
    """The object passed in, else the process' global server args."""
    return get_global_server_args() if server_args is None else server_args


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
    tree = page > 1 and branches > 1 and (algorithm.has_draft_kv() or not TREE_NEEDS_DRAFT_KV)
    if not tree:
        return max(steps * branches, verify)
    pages_per_branch = -(-(page - 1 + steps) // page)
    return max(pages_per_branch * page * branches, verify)


def get_alloc_reserve_per_decode(server_args: ServerArgs | None = None) -> int:
    """R = 2L, the overlap double buffer."""
    return 2 * get_alloc_len_per_decode(server_args)


def get_req_to_token_extra_context_len(server_args: ServerArgs) -> int:
    """Row headroom: 4 + Dmax, raised to R (no page tail) for a paged tree launch only."""
    headroom = 4 + (server_args.max_speculative_num_draft_tokens or 0)
    tree = server_args.page_size > 1 and (server_args.speculative_eagle_topk or 1) > 1
    if server_args.speculative_algorithm is None or not tree:
        return headroom
    return max(headroom, get_alloc_reserve_per_decode(server_args))


def write_rows(pool: ReqToTokenPool, rows: torch.Tensor, locs: np.ndarray) -> None:
    """A cache helper beside the sizing functions: it uses placeholders, and the loader never calls it."""
    write_req_to_token_pool_triton(pool.req_to_token, rows, torch.from_numpy(locs))
