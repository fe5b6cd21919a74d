"""The sizing module: how much KV a decode step may take and how wide a row must be.

Mirrors the functions of SGLang's ``mem_cache/allocation_sizing.py`` as small
pure functions of numbers.  Each one states the invariant it serves.  The
one invariant they all serve together:

    for every request, at every decode allocation,
        ceil_{P_a}(kv_committed_len + reserve) <= row width W = C + extra

because the row write kernel has no ``col < W`` check.  ``model_sizing.ModelSizing``
binds the functions to a ``Revision`` (historical bugs are toggles, like
SGLang's ``SGLANG_DEBUG_REVERT_PR``) and to a ``ServingConfig``.

Every formula here is written once and works on ints (one configuration)
and on int tensors (one element per configuration, ``closed_form``): it
uses operators and the ``numeric`` helpers, never ``if``/``max`` on values.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import overload

from torch import Tensor

from . import algorithms as algo
from .numeric import Int, ceil_to_page, full_like, maximum, or_one, where
from .revisions import Headroom

# Without speculation a decode step writes one column, at seq_len: its L, its reserve, its growth, its footprint.
NON_SPEC_DECODE_COLUMNS = 1
# The headroom every row has past the context length, spec or not: 4 (+ Dmax with speculation).
BASE_EXTRA_CONTEXT_LEN = 4


def alloc_page_size(page_size: Int, attn_dcp_size: Int) -> Int:
    """The page the token-to-KV allocator actually hands out.

    Invariant: every rounding done for decode uses the allocator's page.
    Under DCP the paged allocator is built with page_size * attn_dcp_size
    (virtual slots spread over the DCP ranks); sizing with page_size alone
    undersizes the headroom by (dcp - 1) * page_size (the seed bug, #35424).
    """
    return page_size * attn_dcp_size


@overload
def spec_v2_tree(page: int, topk: int) -> bool: ...
@overload
def spec_v2_tree(page: Tensor, topk: Tensor) -> Tensor: ...
def spec_v2_tree(page: int | Tensor, topk: int | Tensor) -> bool | Tensor:
    """Whether the spec v2 tree layout applies: page > 1 and topk > 1 (for an algorithm with draft KV).

    Then each of the K branches gets its own pages (``tree_pages_per_branch``)
    instead of sharing one flat run of S * K slots.
    """
    return (page > 1) & (topk > 1)


def tree_pages_per_branch(page: Int, num_steps: Int) -> Int:
    """Pages one topk branch of the spec v2 tree may span: ceil((page - 1 + S) / page).

    A branch starts at the device seq_len's page offset lp (up to page - 1)
    and needs S draft positions after it; each branch gets its own pages.
    """
    return (page - 1 + num_steps + page - 1) // page


def alloc_len_per_decode(
    algorithm: str | None,
    num_steps: Int,
    topk: Int,
    max_draft_tokens: Int,
    page: Int,
    *,
    tree_footprint: bool = True,
) -> Int:
    """L: the KV length one request may allocate in one decode step.

    Invariant: L covers everything the decode step writes past the device
    seq_len: the draft chain (S per branch), the verify block (Dmax) and, for
    the spec v2 tree (page > 1, topk > 1, draft KV), the page-duplicated
    branches, each ``tree_pages_per_branch`` pages long.  Without that term
    (before #26972) the tree outgrows the allocation.

    Speculation off (``algorithm`` None): one column; the other counts are
    not read.  ``num_steps`` 0 (an adaptive 0-step batch) counts as 1.
    """
    if algorithm is None:
        return full_like(page, NON_SPEC_DECODE_COLUMNS)
    if algo.is_uno(algorithm):
        # UNO keeps one clean-root position beside its Q draft slots.
        return max_draft_tokens + 1
    steps = or_one(num_steps)
    flat = maximum(steps * topk, max_draft_tokens)
    if not tree_footprint or not algo.drafts_tree(algorithm):
        return flat
    tree = maximum(tree_pages_per_branch(page, steps) * page * topk, max_draft_tokens)
    return where(spec_v2_tree(page, topk), tree, flat)


def alloc_reserve_per_decode(alloc_len: Int) -> Int:
    """R = 2L: a double buffer.

    Invariant: the allocation computed from the scheduler's kv_committed_len
    still covers the device, which in overlap mode is up to one accept run
    (<= D tokens) ahead of it.
    """
    return 2 * alloc_len


def grown_len(kv_committed_len: Int, reserve: Int, page: Int, *, aligned: bool | Tensor = True) -> Int:
    """c + R, rounded up to whole allocator pages when ``aligned``: what a decode allocation asks to reach.

    Rounding is the fix of #31616 (an unrecorded page tail is stranded);
    ``aligned`` False is exact growth (before it, and 0.5.18's DFLASH).
    """
    want = kv_committed_len + reserve
    return where(aligned, ceil_to_page(want, page), want)


def page_aligned_decode_alloc_len(
    kv_committed_len: Int, kv_allocated_len: Int, reserve: Int, page: Int, *, aligned: bool | Tensor = True
) -> Int:
    """nxt: the new kv_allocated_len of a request after a decode allocation.

    Invariants: nxt is a whole number of allocator pages, because the
    allocator hands out whole pages and an unrecorded page tail is stranded
    (#31616); nxt never shrinks below what is already allocated, because an
    adaptive downswitch lowers the reserve (#23336).
    """
    return maximum(kv_allocated_len, grown_len(kv_committed_len, reserve, page, aligned=aligned))


def page_aligned_decode_alloc_lens(
    lens: Sequence[tuple[int, int]], reserve: int, page: int, *, aligned: bool = True
) -> tuple[list[int], list[int], int]:
    """Per request (kv_committed_len, kv_allocated_len): (cur, nxt, total new slots)."""
    cur = [a for _, a in lens]
    nxt = [page_aligned_decode_alloc_len(c, a, reserve, page, aligned=aligned) for c, a in lens]
    return cur, nxt, sum(n - a for n, a in zip(nxt, cur, strict=True))


def headroom_covers_reserve(headroom: Headroom, algorithm: str | None, page: Int, topk: Int) -> bool | Tensor:
    """Whether the row headroom covers the decode reserve (``req_to_token_extra_context_len``'s ``covered``).

    Never without speculation; the reference always; upstream (PAGED) only
    for alloc page > 1 or UNO, which leaves page 1 short (#33579); 0.5.13 to
    0.5.15 (TREE) only for the spec v2 tree condition page > 1 and topk > 1,
    which leaves page 1 and every topk-1 launch short; NONE (before #26972)
    never.  ``page`` is the page the sizing module reads, ``topk`` the launch
    ``speculative_eagle_topk`` (1 when unset).
    """
    if algorithm is None or headroom is Headroom.NONE:
        return False
    if headroom is Headroom.ALWAYS:
        return True
    if headroom is Headroom.TREE:
        return spec_v2_tree(page, topk)
    return (page > 1) | algo.is_uno(algorithm)


def req_to_token_extra_context_len(
    max_draft_tokens: Int, reserves: Iterable[Int], page: Int, *, covered: bool | Tensor, page_tail: bool = True
) -> Int:
    """extra: the row headroom past the context length, W = C + extra.

    Invariant: C + extra >= ceil_P(c + R) for the longest c a decode may
    allocate at (c <= C - 4, see scheduler.max_committed_len_at_decode_alloc)
    and every reserve R a run-time configuration may use.  R + page - 1 is
    enough: c + R < C + R and rounding adds at most page - 1.  ``covered``
    says whether the reserve term applies; upstream applies it only for
    page > 1 or UNO, which leaves page 1 short whenever 2 * max(S*K, Dmax)
    > 4 + Dmax (#33579).  ``page_tail`` False sizes the reserve alone, enough
    for exact growth c + R only (0.5.13-0.5.15, before growth was rounded).
    ``max_draft_tokens``: Dmax, 0 without speculation.
    """
    extra = BASE_EXTRA_CONTEXT_LEN + max_draft_tokens
    tail = page - 1 if page_tail else 0
    sized = extra
    for r in reserves:
        sized = maximum(sized, r + tail)
    return where(covered, sized, extra)
