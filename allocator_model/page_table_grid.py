"""The tensor twin of the page tables' builds (``page_tables.graph_builds``): what ``prove`` sweeps over a whole
space of launches at once, each row reduced to its width and the furthest its builds write and read."""

from __future__ import annotations

import torch
from torch import Tensor

from . import algorithms as algo
from .page_tables import LENGTH_GRID, GraphSizing, Mode, judged, pages


def reach_grid(
    algorithm: str | None,
    page: Tensor,
    topk: Tensor,
    draft_tokens: Tensor,
    context_len: Tensor,
    row_width: Tensor,
    seq_len: Tensor,
    sizing: GraphSizing,
    num_steps: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """``graph_builds`` of many rows at once, reduced to each row's (width, furthest write end, furthest read end):
    its tensor twin (``tests/test_page_tables.py`` holds them equal).  The furthest length a step publishes is
    the verify's (and the draft extend's) ``seq + D``: a draft step's ``seq + s + 1`` stays below it (s + 1 < D at
    topk 1), though its builder may write further (its own grid, or a row no step reads) or be stopped (its
    assert); a table of the draft steps alone reaches theirs.  A build its assert
    stops reaches what it asked for, written nowhere.  A row this table does not judge reaches nothing.
    """
    w = sizing.widths_of(context_len, row_width, page.expand_as(context_len))
    page = sizing.unit(page)

    def reach(need: Tensor, mode: Mode) -> Tensor:
        """The end a build of ``need`` pages by ``mode``'s builder reaches: what it asked where its assert stops
        it past the width, else what it writes (its grid's end, or the width, at most)."""
        block = sizing.block(mode)
        if block is None:
            wrote = torch.minimum(need, w)
        elif block == LENGTH_GRID:
            wrote = need
        else:
            per_block = torch.div(block, page, rounding_mode="floor").expand_as(w)
            wrote = torch.minimum(need, pages(w, per_block) * per_block)
        return torch.where((need > w) & torch.tensor(mode in sizing.asserts), need, wrote)

    zero = torch.zeros_like(seq_len)
    if algorithm is None:
        read = pages(seq_len, page.expand_as(seq_len)) if Mode.DECODE in sizing.modes else zero
        return w, reach(read, Mode.DECODE), read
    eagle = algorithm in algo.EAGLE_FAMILY
    read = write = zero
    if sizing.modes & {Mode.TARGET_VERIFY, Mode.DRAFT_EXTEND}:
        read = pages(seq_len + draft_tokens, page.expand_as(seq_len))
        write = reach(read, Mode.TARGET_VERIFY)
    if eagle and Mode.DRAFT_EXTEND in sizing.modes:
        write = torch.maximum(write, reach(read, Mode.DRAFT_EXTEND))
    if eagle and num_steps is not None and Mode.DRAFT_DECODE in sizing.modes:
        # the last draft step read: seq + S - 1 (S >= 2), or seq; a backend that fills every step's row also
        # writes step S - 1's, seq + S, which no step reads
        offset = num_steps - 1 if sizing.backend.draft_steps_publish_their_step else torch.zeros_like(num_steps)
        last = torch.where(num_steps >= 2, pages(seq_len + offset, page.expand_as(seq_len)), 0)
        write, read = torch.maximum(write, reach(last, Mode.DRAFT_DECODE)), torch.maximum(read, last)
        if sizing.backend.fills_every_draft_step:
            stored = torch.where(num_steps >= 2, pages(seq_len + num_steps, page.expand_as(seq_len)), 0)
            write = torch.maximum(write, reach(stored, Mode.DRAFT_DECODE))
    on = torch.as_tensor(judged(algorithm, topk))
    return w, torch.where(on, write, zero), torch.where(on, read, zero)
