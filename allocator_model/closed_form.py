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

The vectorized sizing mirrors ``sizing.ModelSizing`` per ``Revision`` toggle,
reusing its arithmetic helpers (they work on tensors as they are).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from . import algorithms as algo
from .config import ServingConfig
from .decode import WritePath, write_path
from .revisions import Revision
from .scheduler import max_committed_len_at_decode_alloc
from .sizing import alloc_page_size, alloc_reserve_per_decode, ceil_to_page, tree_pages_per_branch

# int32 halves the memory traffic; every value here stays far below 2**31 (pages <= 4096 x reserves).
INT = torch.int32
# Adaptive candidate step sets are bitmasks: bit s set <=> s is a candidate.
MAX_CANDIDATE_BITS = 63


def committed_gap(revision: Revision, overlap: bool) -> int:
    """C - (the longest kv_committed_len a decode allocation sees), derived from the scheduler rules.

    Checked at two context lengths: the sweep relies on the gap not depending on C.
    """
    gaps = set()
    for context_len in (4096, 4096 + 37):
        cfg = ServingConfig.resolve(context_len=context_len, enable_overlap=overlap)
        bound = max_committed_len_at_decode_alloc(cfg, overlap_drops_finishing=revision.overlap_drops_finishing)
        gaps.add(context_len - bound)
    if len(gaps) != 1:
        raise AssertionError(f"the committed-length bound is not C minus a constant: gaps {sorted(gaps)}")
    return gaps.pop()


# -- launch configurations ------------------------------------------------------


@dataclass
class LaunchGrid:
    """Launch configurations of one speculative algorithm, one element per configuration.

    Fields use SGLang's names; unused ones (no speculation) hold 0.
    ``candidates`` is the adaptive candidate step set as a bitmask (0: not adaptive).
    """

    algorithm: str | None
    page_size: torch.Tensor
    attn_dcp_size: torch.Tensor
    num_steps: torch.Tensor
    topk: torch.Tensor
    draft_tokens: torch.Tensor
    candidates: torch.Tensor

    def __len__(self) -> int:
        return int(self.page_size.numel())

    @property
    def adaptive(self) -> torch.Tensor:
        return self.candidates != 0

    def select(self, mask_or_index: torch.Tensor) -> "LaunchGrid":
        return LaunchGrid(self.algorithm, *(getattr(self, f.name)[mask_or_index] for f in fields(self)[1:]))

    @property
    def max_draft_tokens(self) -> torch.Tensor:
        """Dmax: D, or for adaptive spec the largest candidate + 1."""
        if not bool(self.candidates.any()):
            return self.draft_tokens
        return torch.where(self.adaptive, highest_bit(self.candidates) + 1, self.draft_tokens)

    def config_kwargs(self, i: int) -> dict:
        """SGLang arguments of configuration i (context length and overlap left to the caller)."""
        kw = dict(page_size=int(self.page_size[i]), attn_dcp_size=int(self.attn_dcp_size[i]))
        if self.algorithm is None:
            return kw
        kw.update(speculative_algorithm=self.algorithm, speculative_num_steps=int(self.num_steps[i]),
                  speculative_eagle_topk=int(self.topk[i]), speculative_num_draft_tokens=int(self.draft_tokens[i]))
        cand = int(self.candidates[i])
        if cand:
            kw.update(speculative_adaptive=True, speculative_adaptive_candidate_steps=bits(cand))
        return kw


def bits(mask: int) -> tuple[int, ...]:
    return tuple(s for s in range(MAX_CANDIDATE_BITS) if mask >> s & 1)


def bitmask(steps) -> int:
    return sum(1 << s for s in set(steps))


def highest_bit(mask: torch.Tensor) -> torch.Tensor:
    """Index of the highest set bit (-1 for 0)."""
    out = torch.full_like(mask, -1)
    top = int(mask.max()).bit_length() if mask.numel() else 0
    for s in range(top):
        out = torch.where((mask >> s) & 1 == 1, s, out)
    return out


def valid_mask(g: LaunchGrid) -> torch.Tensor:
    """server_args validation (``config._validate``) as a mask: which configurations exist."""
    from .config import UNO_MAX_DRAFT_TOKENS, UNO_MAX_TREE_NODES

    ok = (g.page_size >= 1) & (g.attn_dcp_size >= 1)
    a = g.algorithm
    adaptive = g.adaptive
    if a is None:
        return ok & ~adaptive & (g.num_steps == 0) & (g.topk == 0) & (g.draft_tokens == 0)
    s, k, d = g.num_steps, g.topk, g.draft_tokens
    min_steps = 0 if a == algo.NGRAM else torch.where(adaptive, 0, 1)  # adaptive may run 0 steps
    ok &= (k >= 1) & (d >= 1) & (s >= min_steps)
    if a in algo.ADAPTIVE:
        in_candidates = (g.candidates >> s.clamp(0, MAX_CANDIDATE_BITS - 1)) & 1 == 1
        ok &= ~adaptive | ((k == 1) & in_candidates)
    else:
        ok &= ~adaptive
    if a in algo.EAGLE_FAMILY:
        ok &= (k != 1) | (d == s + 1)
    if a in algo.DFLASH_FAMILY:
        ok &= (s == 1) & (k == 1)
    if a == algo.DSPARK:
        ok &= d >= 2
    if a == algo.UNO:
        ok &= (g.attn_dcp_size == 1) & (d >= s + 1) & (d <= UNO_MAX_DRAFT_TOKENS) & (d * k <= UNO_MAX_TREE_NODES)
    return ok


# -- one row per (launch configuration, run-time shape) ---------------------------------


@dataclass
class DecodeRows:
    """What one decode allocation of one run-time shape of a configuration does.

    ``config`` indexes the LaunchGrid.  ``reserve`` is what the write path
    asks for (the sizing module's 2L, DFLASH/DSPARK's own 2D, 1 without
    speculation), ``aligned`` whether growth rounds to whole allocator pages
    (``nxt = ceil_P(c + R)``) or is exact (``nxt = c + R``).
    """

    config: torch.Tensor
    num_steps: torch.Tensor  # the run-time shape (adaptive spec moves it)
    draft_tokens: torch.Tensor
    alloc_page: torch.Tensor  # P, the allocator's own page
    reserve: torch.Tensor
    extra: torch.Tensor  # row headroom: W = C + extra
    aligned: torch.Tensor  # bool

    def __len__(self) -> int:
        return int(self.config.numel())

    def select(self, mask: torch.Tensor) -> "DecodeRows":
        return DecodeRows(*(getattr(self, f.name)[mask] for f in fields(self)))


def runtime_shapes(g: LaunchGrid) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(config index, num_steps, num_draft_tokens) of every run-time shape (``ServingConfig.runtimes``)."""
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
    drafts = torch.cat([g.draft_tokens[fixed], steps[len(fixed):] + 1])
    order = torch.argsort(idx, stable=True)
    return idx[order], steps[order], drafts[order]


def alloc_len_per_decode(algorithm, num_steps, topk, max_draft_tokens, page, *, tree_footprint: bool = True):
    """Tensor twin of ``sizing.alloc_len_per_decode`` (same branches, per element)."""
    if algorithm is None:
        return torch.ones_like(page)
    if algo.is_uno(algorithm):
        return max_draft_tokens + 1
    steps = torch.where(num_steps == 0, 1, num_steps)  # `num_steps or 1`
    flat = torch.maximum(steps * topk, max_draft_tokens)
    if not tree_footprint or not algo.has_draft_kv(algorithm):
        return flat
    tree = torch.maximum(tree_pages_per_branch(page, steps) * page * topk, max_draft_tokens)
    return torch.where((page > 1) & (topk > 1), tree, flat)


def model_decode_rows(g: LaunchGrid, revision: Revision) -> DecodeRows:
    """``ModelSizing(revision)`` and ``decode.prepare_for_decode`` for every configuration of the grid."""
    a, rev = g.algorithm, revision
    idx, steps, drafts = runtime_shapes(g)
    page = alloc_page_size(g.page_size, g.attn_dcp_size)  # the allocator's page, whatever sizing believes
    sizing_page = page if rev.alloc_page_with_dcp else g.page_size
    dmax = g.max_draft_tokens
    tree = rev.tree_alloc_len
    row_len = alloc_len_per_decode(a, steps, g.topk[idx], dmax[idx], sizing_page[idx], tree_footprint=tree)
    path = write_path(a)
    if path is WritePath.NON_SPEC:
        reserve = torch.ones_like(idx, dtype=INT)
    elif path is WritePath.DFLASH:
        reserve = 2 * drafts
    else:
        reserve = alloc_reserve_per_decode(row_len)
    extra = 4 + (dmax if a is not None else torch.zeros_like(dmax))
    if a is not None and rev.headroom != "none":
        if rev.headroom == "always":  # every run-time shape
            sized = torch.zeros_like(extra).scatter_reduce(0, idx, alloc_reserve_per_decode(row_len), "amax")
            covered = torch.ones_like(extra, dtype=torch.bool)
        else:  # "paged": the launch shape, only for page > 1 or UNO (upstream)
            launch = alloc_len_per_decode(a, g.num_steps, g.topk, dmax, sizing_page, tree_footprint=tree)
            sized = alloc_reserve_per_decode(launch)
            covered = (sizing_page > 1) | algo.is_uno(a)
        extra = torch.where(covered, torch.maximum(extra, sized + sizing_page - 1), extra)
    if path is WritePath.NON_SPEC or (path is WritePath.DFLASH and not rev.dflash_page_rounded):
        aligned = False  # one column at seq_len / the unrounded DFLASH reserve
    else:
        aligned = rev.page_aligned_growth
    return DecodeRows(idx, steps, drafts, page[idx], reserve, extra[idx], torch.full_like(idx, aligned, dtype=torch.bool))


# -- write-within-row -----------------------------------------------------------------


def alloc_end(rows: DecodeRows, committed_len: torch.Tensor, allocated_len: torch.Tensor | None = None) -> torch.Tensor:
    """nxt of one decode allocation at kv_committed_len c (kv_allocated_len a, default c)."""
    want = committed_len + rows.reserve
    want = torch.where(rows.aligned, ceil_to_page(want, rows.alloc_page), want)
    return torch.maximum(committed_len if allocated_len is None else allocated_len, want)


def write_overshoot_at(rows: DecodeRows, context_len: torch.Tensor, committed_len: torch.Tensor) -> torch.Tensor:
    """Columns past the row end of the write at (C, c): nxt - (C + extra); <= 0 is inside."""
    return alloc_end(rows, committed_len) - (context_len + rows.extra)


def worst_write_overshoot(rows: DecodeRows, gap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(worst overshoot over every residue of C mod P at c = C - gap, number of residues that spill).

    Page-rounded growth adds ceil_P(x) - x, which over the P residues takes
    every value 0..P-1 once: the worst adds P - 1, and the residues that
    spill are the top ``overshoot`` of them.  Exact growth is the same for
    every residue.
    """
    rounded = rows.aligned & (rows.alloc_page > 1)
    worst = rows.reserve + torch.where(rounded, rows.alloc_page - 1, 0) - gap - rows.extra
    spilling = torch.where(rounded, worst.clamp(min=0).minimum(rows.alloc_page), (worst > 0) * rows.alloc_page)
    return worst, spilling


# -- drafts-within-allocation --------------------------------------------------------


def draft_extent(rows: DecodeRows, algorithm: str | None, topk: torch.Tensor, device_seq_len: torch.Tensor) -> torch.Tensor:
    """Tensor twin of ``decode.draft_extent``: the highest column (exclusive) draft and verify touch."""
    if algorithm is None:
        return device_seq_len + 1
    d = rows.draft_tokens
    if algo.is_uno(algorithm):
        return device_seq_len + d + 1
    if not algo.has_draft_kv(algorithm):
        return device_seq_len + d
    steps = torch.where(rows.num_steps == 0, 1, rows.num_steps)
    page = rows.alloc_page
    lp = device_seq_len % page
    pb = device_seq_len - lp
    nnp = -(-(lp + steps) // page)
    tree = pb + (topk - 1) * nnp * page + torch.maximum(lp + steps, page)
    return torch.where((page > 1) & (topk > 1), tree, device_seq_len + torch.maximum(steps * topk, d))


def draft_overshoot_at(rows, algorithm, topk, committed_len, lag) -> torch.Tensor:
    """Columns the draft of the decode at c, device seq_len c + lag, touches past kv_allocated_len."""
    return draft_extent(rows, algorithm, topk, committed_len + lag) - alloc_end(rows, committed_len)


def worst_draft_overshoot(
    rows: DecodeRows, algorithm: str, topk: torch.Tensor, lag: torch.Tensor | int
) -> tuple[torch.Tensor, torch.Tensor]:
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
    if algo.is_uno(algorithm):
        flat = rows.draft_tokens + 1 - x
    elif not algo.has_draft_kv(algorithm):
        flat = rows.draft_tokens - x
    else:
        steps = torch.where(rows.num_steps == 0, 1, rows.num_steps)
        flat = torch.maximum(steps * topk, rows.draft_tokens) - x
    base = (lag // page + 2) * page  # c = base + d - lag >= 1
    tree = (page > 1) & (topk > 1) if algo.has_draft_kv(algorithm) and not algo.is_uno(algorithm) else None
    if tree is None or not bool(tree.any()):
        return flat, base + d_flat - lag
    rounded = rows.aligned
    worst, best_d = None, None
    for d in (torch.zeros_like(page), (page - x % page).minimum(page - 1), page - 1):
        footprint = (topk - 1) * page * ((d + steps + page - 1) // page) + torch.maximum(d + steps, page)
        o = footprint - torch.where(rounded, ceil_to_page(d + x, page), d + x)
        if worst is None:
            worst, best_d = o, d
        else:
            better = o > worst
            worst, best_d = torch.where(better, o, worst), torch.where(better, d, best_d)
    return torch.where(tree, worst, flat), base + torch.where(tree, best_d, d_flat) - lag


# -- page-aligned-growth ---------------------------------------------------------------


def unaligned_growth(rows: DecodeRows, algorithm: str | None) -> torch.Tensor:
    """Spec decode on a paged allocator growing kv_allocated_len to c + R: some c leaves a page tail unrecorded."""
    if algorithm is None:
        return torch.zeros_like(rows.aligned)
    return ~rows.aligned & (rows.alloc_page > 1)
