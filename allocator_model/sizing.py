"""The sizing module: how much KV a decode step may take and how wide a row must be.

Mirrors the functions of SGLang's ``mem_cache/allocation_sizing.py`` as small
pure functions of numbers.  Each one states the invariant it serves.  The
one invariant they all serve together:

    for every request, at every decode allocation,
        ceil_{P_a}(kv_committed_len + reserve) <= row width W = C + extra

because the row write kernel has no ``col < W`` check.  ``ModelSizing``
binds the functions to a ``Revision`` (historical bugs are toggles, like
SGLang's ``SGLANG_DEBUG_REVERT_PR``) and to a ``ServingConfig``.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from . import algorithms as algo
from .config import ServingConfig, SpecRuntime
from .revisions import Revision


def ceil_to_page(x: int, page: int) -> int:
    """x rounded up to a whole number of pages."""
    return -(-x // page) * page


def alloc_page_size(page_size: int, attn_dcp_size: int) -> int:
    """The page the token-to-KV allocator actually hands out.

    Invariant: every rounding done for decode uses the allocator's page.
    Under DCP the paged allocator is built with page_size * attn_dcp_size
    (virtual slots spread over the DCP ranks); sizing with page_size alone
    undersizes the headroom by (dcp - 1) * page_size (the seed bug, #35424).
    """
    return page_size * attn_dcp_size


def tree_pages_per_branch(page: int, num_steps: int) -> int:
    """Pages one topk branch of the spec v2 tree may span: ceil((page - 1 + S) / page).

    A branch starts at the device seq_len's page offset lp (up to page - 1)
    and needs S draft positions after it; each branch gets its own pages.
    """
    return (page - 1 + num_steps + page - 1) // page


def alloc_len_per_decode(
    algorithm: str | None,
    num_steps: int | None,
    topk: int | None,
    max_draft_tokens: int | None,
    page: int,
    *,
    tree_footprint: bool = True,
) -> int:
    """L: the KV length one request may allocate in one decode step.

    Invariant: L covers everything the decode step writes past the device
    seq_len: the draft chain (S per branch), the verify block (Dmax) and, for
    the spec v2 tree (page > 1, topk > 1, draft KV), the page-duplicated
    branches, each ``tree_pages_per_branch`` pages long.  Without that term
    (before #26972) the tree outgrows the allocation.
    """
    if algorithm is None:
        return 1
    if algo.is_uno(algorithm):
        # UNO keeps one clean-root position beside its Q draft slots.
        return max_draft_tokens + 1
    steps = num_steps or 1
    k = topk or 1
    dmax = max_draft_tokens or 0
    if not tree_footprint or page == 1 or k == 1 or not algo.has_draft_kv(algorithm):
        return max(steps * k, dmax)
    return max(tree_pages_per_branch(page, steps) * page * k, dmax)


def alloc_reserve_per_decode(alloc_len: int) -> int:
    """R = 2L: a double buffer.

    Invariant: the allocation computed from the scheduler's kv_committed_len
    still covers the device, which in overlap mode is up to one accept run
    (<= D tokens) ahead of it.
    """
    return 2 * alloc_len


def page_aligned_decode_alloc_len(
    kv_committed_len: int, kv_allocated_len: int, reserve: int, page: int, *, aligned: bool = True
) -> int:
    """nxt: the new kv_allocated_len of a request after a decode allocation.

    Invariants: nxt is a whole number of allocator pages, because the
    allocator hands out whole pages and an unrecorded page tail is stranded
    (#31616); nxt never shrinks below what is already allocated, because an
    adaptive downswitch lowers the reserve (#23336).
    """
    want = kv_committed_len + reserve
    if aligned:
        want = ceil_to_page(want, page)
    return max(kv_allocated_len, want)


def page_aligned_decode_alloc_lens(
    lens: Sequence[tuple[int, int]], reserve: int, page: int, *, aligned: bool = True
) -> tuple[list[int], list[int], int]:
    """Per request (kv_committed_len, kv_allocated_len): (cur, nxt, total new slots)."""
    cur = [a for _, a in lens]
    nxt = [page_aligned_decode_alloc_len(c, a, reserve, page, aligned=aligned) for c, a in lens]
    return cur, nxt, sum(n - a for n, a in zip(nxt, cur))


def req_to_token_extra_context_len(
    max_draft_tokens: int | None, reserves: Iterable[int], page: int, *, covered: bool
) -> int:
    """extra: the row headroom past the context length, W = C + extra.

    Invariant: C + extra >= ceil_P(c + R) for the longest c a decode may
    allocate at (c <= C - 4, see scheduler.max_committed_len_at_decode_alloc)
    and every reserve R a run-time configuration may use.  R + page - 1 is
    enough: c + R < C + R and rounding adds at most page - 1.  ``covered``
    says whether the reserve term applies; upstream applies it only for
    page > 1 or UNO, which leaves page 1 short whenever 2 * max(S*K, Dmax)
    > 4 + Dmax (#33579).
    """
    extra = 4 + (max_draft_tokens or 0)
    if covered:
        extra = max([extra] + [r + page - 1 for r in reserves])
    return extra


class ModelSizing:
    """The sizing functions of one modeled revision, read against a config.

    Same surface as a loaded real module (``fuzz.targets``): every function
    takes the launch config, and the per-batch ones the run-time spec shape.
    """

    def __init__(self, revision: Revision):
        self.revision = revision

    def alloc_page_size(self, cfg: ServingConfig) -> int:
        if self.revision.alloc_page_with_dcp:
            return alloc_page_size(cfg.page_size, cfg.attn_dcp_size)
        return cfg.page_size

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return alloc_len_per_decode(
            cfg.speculative_algorithm,
            rt.num_steps if rt else None,
            cfg.speculative_eagle_topk,
            cfg.max_speculative_num_draft_tokens,
            self.alloc_page_size(cfg),
            tree_footprint=self.revision.tree_alloc_len,
        )

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return alloc_reserve_per_decode(self.alloc_len_per_decode(cfg, rt))

    def page_aligned_decode_alloc_lens(self, lens, reserve: int, page: int):
        return page_aligned_decode_alloc_lens(lens, reserve, page, aligned=self.revision.page_aligned_growth)

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        page = self.alloc_page_size(cfg)
        rev = self.revision
        if not cfg.spec_on or rev.headroom == "none":
            covered = False
        elif rev.headroom == "always":
            covered = True
        else:  # "paged": upstream 0.5.16 to 0.5.23
            covered = page > 1 or algo.is_uno(cfg.speculative_algorithm)
        # The reference sizes for every run-time shape; upstream reads the launch one.
        runtimes = cfg.runtimes() if rev.headroom == "always" else [cfg.launch_runtime]
        reserves = [self.alloc_reserve_per_decode(cfg, rt) for rt in runtimes]
        return req_to_token_extra_context_len(cfg.max_speculative_num_draft_tokens, reserves, page, covered=covered)
