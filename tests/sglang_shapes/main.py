"""A sizing module in the shape of SGLang main's ``mem_cache/allocation_sizing.py`` (the row-width generation).

Written for kvrow-fuzz in its own words, not copied: the same names, signatures
and arithmetic as main at sgl-project/sglang 84be7ff, so the loader, ``run``,
``prove`` and ``fidelity`` can be tested on main's API without a network.
What makes it that generation:

- every function takes an optional ``server_args`` (else the process-wide one)
  and reads the DCP size as ``server_args.dcp_size``;
- the decode length and reserve take the allocator page as keyword ``page_size``;
- the row headroom is the largest reserve over the candidate allocator pages
  (``page_size`` and ``page_size * dcp_size``): the page-1 gap (#33579) closed;
- the row width has its own function and is page-aligned;
- a guard asserts an allocation end fits the row.

It imports a helper (``ceil_align``) from a module the loader has never heard
of, and types under TYPE_CHECKING, as main does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sglang.srt.runtime_context import get_server_args
from sglang.srt.server_args import ServerArgs
from sglang.srt.utils.common import ceil_align

if TYPE_CHECKING:
    from sglang.srt.configs.model_config import ModelConfig


def get_alloc_page_size_upper_bound(server_args: ServerArgs | None = None) -> int:
    args = server_args if server_args is not None else get_server_args()
    return args.page_size * args.dcp_size


def get_alloc_len_per_decode(server_args: ServerArgs | None = None, *, page_size: int | None = None) -> int:
    args = server_args if server_args is not None else get_server_args()
    page = args.page_size if page_size is None else page_size
    if args.speculative_algorithm is None:
        return 1
    steps = args.speculative_num_steps or 1
    topk = args.speculative_eagle_topk or 1
    drafts = args.max_speculative_num_draft_tokens or 0
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    algorithm = SpeculativeAlgorithm.from_string(args.speculative_algorithm)
    if page > 1 and topk > 1 and algorithm.has_draft_kv():
        pages_per_branch = (page - 1 + steps + page - 1) // page  # each branch gets its own pages
        return max(pages_per_branch * page * topk, drafts)
    return max(steps * topk, drafts)


def get_alloc_reserve_per_decode(server_args: ServerArgs | None = None, *, page_size: int | None = None) -> int:
    """Twice the decode length: a double buffer for the overlap scheduler's lag."""
    return 2 * get_alloc_len_per_decode(server_args, page_size=page_size)


def get_candidate_alloc_page_sizes(server_args: ServerArgs) -> tuple[int, ...]:
    return (server_args.page_size, get_alloc_page_size_upper_bound(server_args))


def get_req_to_token_extra_context_len(server_args: ServerArgs) -> int:
    headroom = 4 + (server_args.max_speculative_num_draft_tokens or 0)
    if server_args.speculative_algorithm is None:
        return headroom
    reserves = [
        get_alloc_reserve_per_decode(server_args, page_size=p) for p in get_candidate_alloc_page_sizes(server_args)
    ]
    return max(headroom, *reserves)


def get_req_to_token_row_width(*, server_args: ServerArgs, model_config: ModelConfig) -> int:
    return ceil_align(
        model_config.context_len + get_req_to_token_extra_context_len(server_args),
        get_alloc_page_size_upper_bound(server_args),
    )


def assert_alloc_within_row_width(*, max_alloc_len: int, row_width: int) -> None:
    assert max_alloc_len <= row_width, f"allocation end {max_alloc_len} is past the row width {row_width}"
