"""The worst decode write of a configuration, in closed form, for many configurations at once (torch).

The step-by-step model (``scenario.run_scenario``) runs one request on a
real pool.  This module answers the same questions for millions of
configurations by arithmetic on int64 tensors, one element per
configuration.  Three facts make that exact:

1. The sizing quantities (allocator page P, reserve R per run-time shape,
   row headroom extra) depend on the launch configuration only, not on the
   context length C or on kv_committed_len c.
2. The write end nxt = max(a, ceil_P(c + R)) never decreases with c, and W = C
   + extra does not depend on c: the worst write of a C is at the largest c
   a decode allocation can see, c = C - gap (``scheduler``: gap 4, or 3 in
   0.5.18's overlap mode).
3. Everything is invariant under C -> C + P (whole pages): only the residue
   r = C mod P matters, and over the P residues the rounding slack
   ceil_P(x) - x takes every value 0..P-1 exactly once.

So the worst over every c <= bound and every residue is

    write-within-row   overshoot = R + P - 1 - gap - extra   (page-rounded growth, P > 1)
                                 = R - gap - extra             (exact growth c + R, or P = 1)

and the number of residues that spill is that overshoot clamped to [0, P]
(page-rounded) or P / 0 (exact).  The draft/verify footprint
(drafts-within-allocation) is piecewise monotone in the page offset of the
device seq_len, so its worst is at one of a few candidate offsets
(``worst_draft_overshoot``).  ``tests/test_prove.py`` checks every formula
against the step-by-step model and against brute-force enumeration.

The vectorized sizing is ``sizing.ModelSizing`` per ``Revision`` toggle on
tensors: L, R, the row headroom, the allocation end and the draft footprint
are called from their one home (``sizing``, ``decode``), written for ints and
tensors alike; validation is ``config``'s tensor twin.  Left here: the grid
bookkeeping and the closed forms (twins registered in ``allocator_model.twins``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch
from torch import Tensor

from . import algorithms as algo
from .config import MAX_CANDIDATE_BITS, ServingConfig, chain_draft_tokens
from .decode import (
    WritePath,
    dflash_reserve,
    draft_end,
    eagle_tree_guarded,
    flat_draft_span,
    grows_unrounded,
    tree_draft_span,
    write_path,
)
from .guards import Guard
from .launch_grid import INT, LaunchGrid, bitmask, bits, highest_bit, valid_mask
from .numeric import ceil_to_page, or_one
from .pools import pool_alloc_page, unified_row_extra
from .revisions import Revision
from .scheduler import decode_alloc_bound
from .sizing import (
    NON_SPEC_DECODE_COLUMNS,
    alloc_len_per_decode,
    alloc_page_size,
    alloc_reserve_per_decode,
    grown_len,
    headroom_covers_reserve,
    page_aligned_decode_alloc_len,
    req_to_token_extra_context_len,
    spec_v2_tree,
)

__all__ = [
    "INT",
    "MAX_CANDIDATE_BITS",
    "WritePath",
    "write_path",
    "alloc_len_per_decode",
    "committed_gap",
    "LaunchGrid",
    "bits",
    "bitmask",
    "highest_bit",
    "valid_mask",
    "DecodeRows",
    "runtime_shapes",
    "model_decode_rows",
    "alloc_end",
    "write_overshoot_at",
    "worst_write_overshoot",
    "draft_extent",
    "draft_overshoot_at",
    "worst_draft_overshoot",
    "unaligned_growth",
    "GUARDS",
    "guard_codes",
]


def committed_gap(revision: Revision, overlap: bool, spec: bool = True) -> int:
    """C - (the longest kv_committed_len a decode allocation sees), derived from the scheduler rules.

    ``spec``: speculative decode (the honest committed length) or not (the
    batch's seq_lens, in-flight token included: ``scheduler.committed_len_at_alloc``).
    Checked at two context lengths: the sweep relies on the gap not depending on C.
    """
    gaps = set()
    args = {"speculative_algorithm": "EAGLE"} if spec else {}
    for context_len in (4096, 4096 + 37):
        cfg = ServingConfig.resolve(context_len=context_len, enable_overlap=overlap, **args)
        bound = decode_alloc_bound(cfg, revision)
        gaps.add(context_len - bound)
    if len(gaps) != 1:
        raise AssertionError(f"the committed-length bound is not C minus a constant: gaps {sorted(gaps)}")
    return gaps.pop()


# -- one row per (launch configuration, run-time shape) ---------------------------------


@dataclass
class DecodeRows:
    """What one decode allocation of one run-time shape of a configuration does.

    ``config`` indexes the LaunchGrid.  ``reserve`` is what the write path
    asks for (the sizing module's 2L, DFLASH/DSPARK's own 2D, 1 without
    speculation), ``aligned`` whether growth rounds to whole allocator pages
    (``nxt = ceil_P(c + R)``) or is exact (``nxt = c + R``).
    """

    config: Tensor
    num_steps: Tensor  # the run-time shape (adaptive spec moves it)
    draft_tokens: Tensor
    alloc_page: Tensor  # P, the allocator's own page
    reserve: Tensor
    extra: Tensor  # row headroom: W = C + extra (or ceil_A(C + extra), see row_align)
    aligned: Tensor  # bool
    row_align: Tensor  # A: the row width is ceil_A(C + extra); 1 (every release) or the allocator page (SGLang main)
    guarded: Tensor  # bool: the target's own guard (main's assert_alloc_within_row_width) stops a write past W

    def __len__(self) -> int:
        return int(self.config.numel())

    def select(self, mask: Tensor) -> DecodeRows:
        return DecodeRows(*(getattr(self, f.name)[mask] for f in fields(self)))


def runtime_shapes(g: LaunchGrid) -> tuple[Tensor, Tensor, Tensor]:
    """(config index, num_steps, num_draft_tokens) of every run-time shape (``ServingConfig.runtimes``).

    A twin over the bitmask encoding, registered in ``allocator_model.twins``.
    """
    n = len(g)
    if g.algorithm is None or not bool(g.adaptive.any()):
        return torch.arange(n), g.num_steps, g.draft_tokens
    fixed = (~g.adaptive).nonzero().flatten()
    width = int(highest_bit(g.candidates).max()) + 1
    on = torch.stack([(g.candidates >> s) & 1 == 1 for s in range(width)], dim=1)
    on[fixed] = False
    idx, steps = on.nonzero(as_tuple=True)
    idx = torch.cat([fixed, idx])
    steps = torch.cat([g.num_steps[fixed], steps.to(INT)])
    drafts = torch.cat([g.draft_tokens[fixed], chain_draft_tokens(steps[len(fixed) :])])
    order = torch.argsort(idx, stable=True)
    return idx[order], steps[order], drafts[order]


def model_decode_rows(g: LaunchGrid, revision: Revision) -> DecodeRows:
    """``ModelSizing(revision)`` and ``decode.prepare_for_decode`` for every configuration of the grid.

    Registered in ``allocator_model.twins`` against the step-by-step functions.
    """
    a, rev = g.algorithm, revision
    idx, steps, drafts = runtime_shapes(g)
    page = pool_alloc_page(g.kv_pool, g.page_size, g.attn_dcp_size)  # the allocator's page, whatever sizing believes
    sizing_page = alloc_page_size(g.page_size, g.attn_dcp_size) if rev.alloc_page_with_dcp else g.page_size
    dmax = g.max_draft_tokens if a is not None else torch.zeros_like(g.draft_tokens)  # `or 0`
    tree = rev.tree_alloc_len
    row_len = alloc_len_per_decode(a, steps, g.topk[idx], dmax[idx], sizing_page[idx], tree_footprint=tree)
    path = write_path(a)
    if path is WritePath.NON_SPEC:
        reserve = torch.full_like(idx, NON_SPEC_DECODE_COLUMNS, dtype=INT)
    elif path is WritePath.DFLASH:
        reserve = dflash_reserve(drafts)
    else:
        reserve = alloc_reserve_per_decode(row_len)
    covered = headroom_covers_reserve(rev.headroom, a, sizing_page, g.topk)
    reserves: list[Tensor] = []
    # planted: the launch shape's D stands for Dmax in the headroom
    sized_d = g.draft_tokens if (rev.headroom_from_launch_shape and a is not None) else dmax
    if covered is not False:
        if rev.headroom.every_runtime and not rev.headroom_from_launch_shape:  # the largest reserve, every shape
            sized = torch.zeros_like(dmax).scatter_reduce(0, idx, alloc_reserve_per_decode(row_len), "amax")
        else:  # the launch shape (upstream)
            launch = alloc_len_per_decode(a, g.num_steps, g.topk, sized_d, sizing_page, tree_footprint=tree)
            sized = alloc_reserve_per_decode(launch)
        reserves.append(sized)
    extra = req_to_token_extra_context_len(
        sized_d, reserves, sizing_page, covered=covered, page_tail=rev.headroom_page_tail
    )
    if g.kv_pool in rev.narrow_rows:  # ModelSizing.req_to_token_row_width: the unified builder's 4 + D
        extra = unified_row_extra(g.draft_tokens)
    aligned = False if grows_unrounded(path, rev) else rev.page_aligned_growth
    aligned_t = torch.full_like(idx, aligned, dtype=torch.bool)
    unaligned_rows = torch.ones_like(idx, dtype=INT)  # ModelSizing.req_to_token_row_width: C + extra
    unguarded = torch.zeros_like(idx, dtype=torch.bool)  # ModelSizing.row_guard_fires: never
    return DecodeRows(idx, steps, drafts, page[idx], reserve, extra[idx], aligned_t, unaligned_rows, unguarded)


# -- write-within-row -----------------------------------------------------------------


def alloc_end(rows: DecodeRows, committed_len: Tensor, allocated_len: Tensor | None = None) -> Tensor:
    """nxt of one decode allocation at kv_committed_len c (kv_allocated_len a, default c).

    ``sizing.page_aligned_decode_alloc_len``, per row.
    """
    allocated = committed_len if allocated_len is None else allocated_len
    return page_aligned_decode_alloc_len(committed_len, allocated, rows.reserve, rows.alloc_page, aligned=rows.aligned)


def row_width(rows: DecodeRows, context_len: Tensor) -> Tensor:
    """W = ceil_A(C + extra): A is 1 for every release's rows, the allocator page for SGLang main's."""
    return ceil_to_page(context_len + rows.extra, rows.row_align)


def write_overshoot_at(rows: DecodeRows, context_len: Tensor, committed_len: Tensor) -> Tensor:
    """Columns past the row end of the write at (C, c): nxt - W; <= 0 is inside."""
    return alloc_end(rows, committed_len) - row_width(rows, context_len)


def worst_write_overshoot(rows: DecodeRows, gap: int) -> tuple[Tensor, Tensor]:
    """(worst overshoot over every residue of C at c = C - gap, how many of a row's P residues spill).

    With d = R - gap - extra and x = C + extra:

    * unaligned rows (W = x): page-rounded growth adds ceil_P(x + d) - x - d,
      which over the P residues takes every value 0..P-1 once: the worst is
      d + P - 1, and the residues that spill are the top ``overshoot`` of
      them.  Exact growth overshoots by d at every residue.
    * rows aligned to A, a multiple of P (W = ceil_A(x), SGLang main): the
      slack W - x is 0 at x = 0 mod A, where the growth adds ceil_P(d)
      (rounded) or d (exact); at x = r mod A (0 < r < A) the overshoot is
      ceil_P(r + d) - A <= ceil_P(d).  min(max(d, 0), A) of the A residues
      spill; counted per P residues like every row (at least one when any does).

    ``calls`` refuses (unproven) any other rule.
    """
    page = rows.alloc_page
    rounded = rows.aligned & (page > 1)
    d = rows.reserve - gap - rows.extra
    align = rows.row_align
    aligned_row = align > 1
    worst = torch.where(
        aligned_row,
        torch.where(rounded, ceil_to_page(d, page), d),
        d + torch.where(rounded, page - 1, 0),
    )
    per_align = d.clamp(min=0).minimum(align)
    scaled = torch.where(per_align > 0, (per_align * page // align).clamp(min=1), 0)
    spilling = torch.where(
        aligned_row,
        scaled,
        torch.where(rounded, worst.clamp(min=0).minimum(page), (worst > 0) * page),
    )
    return worst, spilling


# -- drafts-within-allocation --------------------------------------------------------


def draft_extent(rows: DecodeRows, algorithm: str | None, topk: Tensor, device_seq_len: Tensor) -> Tensor:
    """``decode.draft_end`` per row: the highest column (exclusive) draft and verify touch."""
    return draft_end(algorithm, rows.num_steps, topk, rows.draft_tokens, device_seq_len, rows.alloc_page)


def draft_overshoot_at(
    rows: DecodeRows, algorithm: str | None, topk: Tensor, committed_len: Tensor, lag: Tensor | int
) -> Tensor:
    """Columns the draft of the decode at c, device seq_len c + lag, touches past kv_allocated_len."""
    return draft_extent(rows, algorithm, topk, committed_len + lag) - alloc_end(rows, committed_len)


def worst_draft_overshoot(rows: DecodeRows, algorithm: str, topk: Tensor, lag: Tensor | int) -> tuple[Tensor, Tensor]:
    """(the worst draft overshoot over every c and every device lag in [0, lag], a c that reaches it).

    For a device seq_len v the allocation is smallest at the smallest c =
    v - lag (nxt never decreases with c), so only the page offset d of v is
    free; everything is invariant under v -> v + P (the c returned is valid
    modulo P).  With x = R - lag:

    * flat footprint v + e: the allocation is v - d + ceil_P(d + x) (or
      v + x), at least v + x, reached where d + x = 0 mod P: worst e - x.
    * spec v2 tree (K >= 2): the footprint (K - 1) * P * ceil((d + S) / P)
      + max(d + S, P) steps up by (K - 1) * P >= P at most once in the page,
      at d = P - S mod P + 1; the rounded allocation ceil_P(d + x) steps up
      by P at most once, after d = P - x mod P (and after d = 0 when x = 0
      mod P).  Between steps the overshoot never decreases (rounded growth:
      max(d + S, P) grows), and a footprint step outweighs what the
      allocation gains in the rest of the page, so the worst is at d = 0,
      P - x mod P or P - 1.  Exact growth: the first footprint piece never
      increases (max(S, P - d)) and the last is flat, so d = 0 or P - 1.
    """
    page = rows.alloc_page
    lag = torch.as_tensor(lag, dtype=INT).expand_as(page)
    x = rows.reserve - lag
    d_flat = (-x) % page
    flat = flat_draft_span(algorithm, rows.num_steps, topk, rows.draft_tokens) - x
    base = (lag // page + 2) * page  # c = base + d - lag >= 1
    tree = spec_v2_tree(page, topk) if algo.drafts_tree(algorithm) else None
    if tree is None or not bool(tree.any()):
        return flat, base + d_flat - lag
    steps = or_one(rows.num_steps)
    best_d, *others = torch.zeros_like(page), (page - x % page).minimum(page - 1), page - 1
    worst = tree_draft_span(best_d, steps, topk, page) - grown_len(best_d, x, page, aligned=rows.aligned)
    for d in others:
        o = tree_draft_span(d, steps, topk, page) - grown_len(d, x, page, aligned=rows.aligned)
        better = o > worst
        worst, best_d = torch.where(better, o, worst), torch.where(better, d, best_d)
    return torch.where(tree, worst, flat), base + torch.where(tree, best_d, d_flat) - lag


# -- page-aligned-growth ---------------------------------------------------------------


def unaligned_growth(rows: DecodeRows, algorithm: str | None) -> Tensor:
    """Spec decode on a paged allocator growing kv_allocated_len to c + R: some c leaves a page tail unrecorded."""
    if algorithm is None:
        return torch.zeros_like(rows.aligned)
    return ~rows.aligned & (rows.alloc_page > 1)


# What stops a write past the row, in the order ``guard_codes`` numbers them (None: nothing, a silent spill).
GUARDS: tuple[Guard | None, ...] = (None, Guard.ROW_WIDTH, Guard.UNO_ROW, Guard.EAGLE_TREE_ROW)


def guard_codes(g: LaunchGrid, rows: DecodeRows, revision: Revision) -> Tensor:
    """Per row, the ``GUARDS`` index of what stops a write past W: ``decode.row_guard`` for a block, in its order.

    UNO's own check on its path; the target's own guard (``rows.guarded``:
    SGLang main's); EAGLE's tree assert at allocator page > 1 and topk > 1
    where the revision has it; else nothing (index 0).  Twin of
    ``row_guard`` (``allocator_model.twins``).
    """
    path = write_path(g.algorithm)
    if path is WritePath.UNO:
        return torch.full_like(rows.config, GUARDS.index(Guard.UNO_ROW))
    eagle = torch.as_tensor(eagle_tree_guarded(path, rows.alloc_page, g.topk[rows.config]))
    eagle &= revision.eagle_tree_assert
    tree = torch.where(eagle, GUARDS.index(Guard.EAGLE_TREE_ROW), 0)
    return torch.where(rows.guarded, GUARDS.index(Guard.ROW_WIDTH), tree)
