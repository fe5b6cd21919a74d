"""The toy allocator: a paged slot allocator and its per-request table, with a planted bug in the table's width.

Each running request owns row ``r`` of a ``[rows, W]`` table kept in one
flat buffer (cell ``r * W + col``), as a KV cache's request-to-slot table
is.  A decode step reserves the slots of its lookahead past the request's
length, and since the allocator hands out whole pages, the reserve ends at
``ceil_page(seq_len + lookahead)``; the step stores those slots into the row
unchecked, as a kernel stores at ``r * W + col``.

The planted bug: ``row_width`` gives the row the context and one step's
lookahead, but not the page rounding of the reserve (the headroom was
computed before the allocator became paged).  So near the context limit, on
a paged allocator, a step's last slots land in the first columns of the next
request's row, or past the last row.  ``fixed_row_width`` is the corrected
twin: the reserve's rounded end at the context limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fuzz.tables import GUARD, Access, AccessKind, Span

from .config import ToyConfig

HERE = "tests/engines/toy/allocator.py"  # how the table's code references name this file (repository-relative)
TABLE_NAME = "toy_slots"

Width = Callable[[ToyConfig], int]


def page_end(config: ToyConfig, end: int) -> int:
    """``end`` rounded up to the allocator's page: it hands out whole pages."""
    return -(-end // config.page_size) * config.page_size


def reserve_end(config: ToyConfig, seq_len: int) -> int:
    """Where a decode step's reserve ends: past the lookahead, rounded up to the allocator's page."""
    return page_end(config, seq_len + config.lookahead)


def row_width(config: ToyConfig) -> int:
    """A row: the context, then headroom for one step's lookahead (planted: without the page rounding)."""
    return config.context_len + config.lookahead


def fixed_row_width(config: ToyConfig) -> int:
    """The corrected row: the reserve's rounded end at the context limit, the furthest any step writes."""
    return reserve_end(config, config.context_len)


class ToyAllocator:
    """The table of ``config.rows`` rows of ``width`` cells, every row filled with its request's own slots, and
    guard cells past the last row (a write past the table lands there, where it can be seen); slots are handed
    out in whole pages, each slot id once."""

    def __init__(self, config: ToyConfig, width: int):
        self.config, self.width = config, width
        cells = config.rows * width
        self.table = list(range(cells))  # each cell a live slot of the row's request
        self.table += [-1] * reserve_end(config, config.context_len)  # guard: no owner's
        self.next_slot = cells

    def allocate(self, start: int, tokens: int) -> list[int]:
        """Fresh slots for columns ``[start, start + tokens)``, the end rounded up to a whole page."""
        count = page_end(self.config, start + tokens) - start
        slots = list(range(self.next_slot, self.next_slot + count))
        self.next_slot += count
        return slots

    def decode_step(self, row: int, seq_len: int) -> int:
        """Reserve the step's lookahead and store its slots in ``row`` at columns ``[seq_len, end)``, unchecked;
        the reserve's end."""
        slots = self.allocate(seq_len, self.config.lookahead)
        end = seq_len + len(slots)
        base = row * self.width
        for col, slot in zip(range(seq_len, end), slots, strict=True):
            self.table[base + col] = slot
        return end


def check_case(config: ToyConfig, row: int, seq_len: int) -> None:
    """A case the toy can run: integers, a row of the batch, a length within the context (a case file is data)."""
    if type(row) is not int or type(seq_len) is not int:
        raise ValueError(f"row and seq_len must be integers, got {row!r:.20} and {seq_len!r:.20}")
    if not 0 <= row < config.rows or not 1 <= seq_len <= config.context_len:
        raise ValueError(f"row {row} or seq_len {seq_len} is outside {config.short()}")


@dataclass(frozen=True)
class StepRun:
    """One decode step on the toy: what it did to the table, as ``Access``es, and how far its write went past the
    row (the search climbs it). ``skipped``: never (every valid case runs; the plugin asks)."""

    accesses: list[Access]
    overshoot: int
    skipped: bool = False


def _outside(cells: list[int], config: ToyConfig, width: int) -> tuple[Span, ...]:
    """Changed cells of the flat buffer as spans of whose part they are: a row's columns, or the guard."""
    spans: list[Span] = []
    for i in cells:
        row, col = divmod(i, width)
        span = Span(row, col, col + 1, f"request {row}") if row < config.rows else None
        if span is None:
            guard = i - config.rows * width
            span = Span(None, guard, guard + 1, GUARD)
        last = spans[-1] if spans else None
        if last is not None and last.row == span.row and last.owner == span.owner and last.end == span.start:
            spans[-1] = Span(last.row, last.start, span.end, last.owner)
        else:
            spans.append(span)
    return tuple(spans)


def run_step(width: Width, config: ToyConfig, row: int, seq_len: int) -> StepRun:
    """One decode step of request ``row`` at ``seq_len`` on a table of rows ``width(config)`` wide, observed: the
    columns it asked for, the row it may touch, and every cell outside that row whose slot changed."""
    check_case(config, row, seq_len)
    w = width(config)
    allocator = ToyAllocator(config, w)
    before = list(allocator.table)
    end = allocator.decode_step(row, seq_len)
    mine = range(row * w, row * w + w)
    changed = [i for i, (a, b) in enumerate(zip(before, allocator.table, strict=True)) if a != b and i not in mine]
    step = f"reserve {config.lookahead} token(s) past seq_len {seq_len}, rounded to the allocator's page"
    access = Access(
        TABLE_NAME,
        f"request {row}",
        AccessKind.WRITE,
        (Span(row, seq_len, end),),
        (Span(row, 0, w),),
        _outside(changed, config, w),
        step=step,
    )
    return StepRun([access], max(0, end - w))
