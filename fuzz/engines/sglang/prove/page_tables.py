"""A backend's page tables over prove's whole space at once: the closed form of ``page_tables`` as tensors.

Each launch configuration of the space is swept at every residue of its
context length mod the page (near ``WITNESS_CONTEXT_LEN``), overlap off and
on, every run-time shape, at the longest committed length the scheduler
lets a decode allocation see plus the largest overlap lag: where each
mode's published length is longest (``page_tables.closed_form``, whose
tensor twin ``allocator_model.page_table_grid.reach_grid`` is).  Each group's
worst configuration comes back with its ``Reach`` from the scalar closed
form, which must agree: a sweep the scalar form contradicts is an error,
never a witness.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from allocator_model import algorithms as algo
from allocator_model import closed_form as cf
from allocator_model.config import ServingConfig
from allocator_model.numeric import ceil_to_page
from allocator_model.page_table_grid import reach_grid
from allocator_model.page_tables import GraphSizing, TableWidth, judged, widths
from allocator_model.pools import KVPool
from allocator_model.regimes import REGIMES, regime_codes
from fuzz.findings.kinds import Property
from fuzz.tables.declared import Reach, Sweep, Swept

from .grid import unique_rows
from .witness import WITNESS_CONTEXT_LEN, witness_config

OVER = "every residue of context_len mod the page, and mod the builders' grid block where one masks by length"


def _profiles(keys: torch.Tensor, context: torch.Tensor, algorithm: str | None, page: int, sizing: GraphSizing) -> Any:
    """Each distinct configuration key's overshoots at every residue: (spill, read past), each [keys, residues]."""
    offset, draft, steps, extra, align, topk = (keys[:, i].unsqueeze(1) for i in range(6))
    c = context.unsqueeze(0).expand(len(keys), len(context))
    w, write, read = reach_grid(
        algorithm,
        torch.tensor(page),
        topk,
        draft,
        c,
        ceil_to_page(c + extra, align),  # ``closed_form.row_width``
        c + offset,  # the device's length: the committed bound C - gap, plus the lag
        sizing,
        steps,
    )
    spill = write - w
    return spill, torch.where(spill > 0, torch.full_like(read, -1), read - w)  # a spill is the write's group


def _swept_profiles(
    keys: torch.Tensor, context: torch.Tensor, algorithm: str | None, page: int, sizing: GraphSizing
) -> Any:
    """``_profiles`` over the residues of ``context`` where a key can break, computed in full only for the keys that
    can: (spill, read past, the residues they are of).

    A builder that masks by length over a grid of blocks spills ``min(need, grid end) - width``: at most what it
    would with no grid end at all, which depends on the context mod the page alone (as every unpadded width and
    length does; a width padded to whole blocks overshoots no further than unpadded).  So the keys whose
    overshoots, with the grid end removed, stay at or below 0 over the page's residues break at none of the
    block's residues (their read past the row does not depend on the grid); only the others are swept, over every
    residue (the block's are 64 times the page's for FlashMLA's), or where a padded width can be passed
    (``_padded_residues``).  A residue left out breaks for no key.
    """
    if sizing.block_tokens is None or len(context) <= page:
        return (*_profiles(keys, context, algorithm, page, sizing), context)
    # a grid that never ends, on the width unpadded: the overshoots' bound (a padded width is a whole number of
    # blocks, at least the unpadded one: its grid ends with it, so it spills nothing and reads past no further)
    endless = dataclasses.replace(sizing, block_tokens=page << 40, pad_to=())
    bound, past = _profiles(keys, context[:page], algorithm, page, endless)
    maybe = ((bound > 0) | (past > 0)).any(dim=1)
    if not bool(maybe.any()):
        none = torch.zeros((len(keys), 1), dtype=torch.long)
        return none, none, context[:1]
    residues = context[_padded_residues(context, page, sizing, int(torch.maximum(bound, past)[maybe].max()))]
    spill = torch.zeros((len(keys), len(residues)), dtype=torch.long)
    read = torch.zeros_like(spill)
    spill[maybe], read[maybe] = _profiles(keys[maybe], residues, algorithm, page, sizing)
    return spill, read, residues


def _padded_residues(context: torch.Tensor, page: int, sizing: GraphSizing, most: int) -> torch.Tensor:
    """The residues of ``context`` where a build can pass a width padded to whole blocks of ``per`` pages (all of
    them for an unpadded width, or one sized from the row, whose residues are the row's).

    A length reaching ``most`` pages past the unpadded width ``u`` passes the padded one, ``u`` rounded up to a
    multiple of ``per``, only where that rounding adds fewer than ``most`` pages: the contexts just below a whole
    number of blocks (or on one); the others overshoot nothing (0, as a key that cannot break)."""
    per = sizing.pad_pages(page)
    if per == 1 or sizing.width is TableWidth.ROW:
        return torch.arange(len(context))
    unpadded: torch.Tensor = widths(sizing.width, context, context, torch.full_like(context, page))
    return ((-unpadded) % per < most).nonzero().flatten()


def _rows(target: Any, g: Any, sizing: Any) -> Any:
    """The rows of ``g``'s configurations: the model's formulas, or (a real target's table sized from its row) its
    own sizing functions, traced as the sizing sweep does (its configurations that raised left out)."""
    if target.is_model or sizing.width is not TableWidth.ROW:
        return cf.model_decode_rows(g, target.revision)
    from .calls import CountingSizing
    from .result import TraceStats
    from .traced_rows import traced_rows

    return traced_rows(target, CountingSizing(target.sizing), g, TraceStats()).rows


def sweep(
    target: Any, prover: Any, closed_form: Callable[[Any, ServingConfig], Reach | None], sizing: GraphSizing, table: Any
) -> Sweep:
    """Every group ``table`` (a ``page_tables.GraphTable``) breaks over the prover's space, with its count and worst
    configuration (each worst one's ``Reach`` from ``closed_form``, the scalar form it is the twin of), under
    ``sizing`` (the target's builders').

    A configuration's overshoot at a residue depends on a few numbers only: its device length's offset from C
    (the lag less the committed gap), the largest D and S of its run-time shapes (published lengths only grow
    with them), its row's extra and alignment, and its topk; so each distinct key is swept once over the residues.
    A builder that masks by length over a grid of blocks spills where the width is no whole number of blocks: its
    residues are those of C mod the block, not the page alone.
    """
    revision = target.revision
    found: dict[tuple[Property, str], Swept] = {}  # each group's worst so far
    counts: dict[tuple[Property, str], int] = {}
    swept = 0  # the launches it judges (``GraphTable.coverage``), each at every residue of its period, overlap off/on
    period_tokens = sizing.block_tokens or 1
    for g, taken in prover.launch_grids(attn_dcp_size=1):  # the standard pool without DCP (``GraphTable.takes``)
        page, n = int(g.page_size[0]), len(g)
        keep = taken & torch.as_tensor(judged(g.algorithm, g.topk)).expand(n)  # topk 1, UNO out (``steps``)
        if g.kv_pool is not KVPool.STANDARD or not bool(keep.any()):
            continue
        if page not in table.pages or table.draft_steps_only and g.algorithm not in algo.EAGLE_FAMILY:
            continue  # a page the backend does not run, or no draft step on a table of them (``GraphTable.takes``)
        rows = _rows(target, g, sizing)
        keep &= torch.zeros(n, dtype=torch.bool).index_fill(0, rows.config.long(), True)  # one its sizing had
        spec = g.algorithm is not None
        dmax = torch.zeros(n, dtype=torch.long).scatter_reduce(0, rows.config, rows.draft_tokens.long(), "amax")
        smax = torch.zeros(n, dtype=torch.long).scatter_reduce(0, rows.config, rows.num_steps.long(), "amax")
        extra = torch.zeros(n, dtype=torch.long).scatter_reduce(0, rows.config, rows.extra.long(), "amax")
        align = torch.ones(n, dtype=torch.long).scatter_reduce(0, rows.config, rows.row_align.long(), "amax")
        if table.draft_steps_only:  # a multi-step draft: S >= 2 (``graph_tables.draft_steps``)
            keep &= g.num_steps >= 2
            if not bool(keep.any()):
                continue
        period = max(page, period_tokens)  # the page divides the block (``build_trtllm_mha_page_table`` asserts it)
        context = max(2, -(-WITNESS_CONTEXT_LEN // period)) * period + torch.arange(period)
        codes = regime_codes(g, torch.arange(n), torch.full((n,), page))
        for overlap in (False, True):
            gap = cf.committed_gap(revision, overlap, spec=spec)
            lag = g.max_draft_tokens.long() if overlap and spec else torch.zeros(n, dtype=torch.long)
            offset = lag - gap
            if sizing.width is not TableWidth.ROW:  # the row's width does not enter: one key per lead
                extra, align = torch.zeros_like(extra), torch.ones_like(align)
            keys, inverse = unique_rows(torch.stack([offset, dmax, smax, extra, align, g.topk.long()], dim=1)[keep])
            configs = keep.nonzero().flatten()
            swept += len(configs) * period
            spill, past, swept_context = _swept_profiles(keys, context, g.algorithm, page, sizing)
            for prop, over in ((Property.WRITE_WITHIN_ROW, spill), (Property.READ_WITHIN_ROW, past)):
                breaks, worst = (over > 0).sum(dim=1), over.max(dim=1)
                hit = breaks[inverse] > 0
                for code in codes[configs[hit]].unique().tolist():
                    mine = hit & (codes[configs] == code)
                    key = (prop, REGIMES[code].value)
                    counts[key] = counts.get(key, 0) + int(breaks[inverse[mine]].sum())
                    values = worst.values[inverse[mine]]
                    at = int(torch.argmax(values))
                    if key in found and found[key].worst >= int(values[at]):
                        continue
                    k = int(configs[mine][at])
                    residue = int(worst.indices[inverse[mine][at]])
                    kw = {**witness_config(g, k, page, 0, overlap), "context_len": int(swept_context[residue])}
                    cfg = ServingConfig.from_dict(kw)
                    reach = closed_form(target, cfg)
                    if reach is None or reach.prop is not prop or reach.end - reach.width != int(values[at]):
                        said = "does not judge it" if reach is None else f"{reach.prop} {reach.end - reach.width}"
                        raise AssertionError(
                            f"{table.name}: the sweep and the closed form disagree at {cfg.short()}: "
                            f"{prop} {int(values[at])} past, the closed form {said}"
                        )
                    found[key] = Swept(prop, key[1], 0, int(values[at]), cfg, reach)
    over = f"the launches it judges ({table.coverage}), {OVER}"
    if not swept:
        none = f"no configuration of the {prover.space} space is one it judges: {table.coverage}"
        return Sweep(0, over, (), refused=none)
    groups = tuple(Swept(s.prop, s.group, counts[key], s.worst, s.config, s.reach) for key, s in found.items())
    return Sweep(swept, over, groups)
