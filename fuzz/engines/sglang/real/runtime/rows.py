"""``req_to_token`` as SGLang builds it, with guard rows below, and the diff of two snapshots.

``Rows(size, width)`` holds ``size + 1`` rows (row 0 is SGLang's padding
row [cite: req-to-token-padding-row]; requests take rows 1..size
[cite: req-to-token-free-slots]) of ``width`` int32 columns, plus ``guard_rows`` rows below filled with
``GUARD_FILL``.  ``req_to_token`` is a view of the first ``size + 1`` rows:
SGLang's kernels index it as ``row * shape[1] + col`` (``pool_len``
[cite: kernel-row-stride] [cite: kernel-pool-len-is-width]), so a column past the width lands in the
next row, and past the last row in the guard rows, never in process memory
(triton's interpreter stores through raw pointers, unchecked).  A write that
reaches the last guard column may have gone further: ``guard_exhausted``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

GUARD_FILL = -0x2A2A2A2A  # no slot id is negative


@dataclass(frozen=True)
class Span:
    """Columns [start, end) of one row changed by a step."""

    row: int
    start: int
    end: int

    def __str__(self) -> str:
        return f"row {self.row} columns [{self.start}, {self.end})"


class Rows:
    def __init__(self, size: int, width: int, guard_rows: int = 1) -> None:
        if size < 1 or width < 1 or guard_rows < 1:
            raise ValueError("Rows needs size >= 1, width >= 1 and at least one guard row")
        self.size, self.width, self.guard_rows = size, width, guard_rows
        self.storage = torch.zeros((size + 1 + guard_rows, width), dtype=torch.int32)
        self.storage[size + 1 :] = GUARD_FILL
        self.req_to_token = self.storage[: size + 1]

    def snapshot(self) -> torch.Tensor:
        """Every row, the guard rows included."""
        return self.storage.clone()

    def guard_spans(self) -> list[Span]:
        """What was written into the guard rows (row numbers continue past ``size``)."""
        return spans(self.storage[self.size + 1 :] != GUARD_FILL, self.size + 1)

    def guard_exhausted(self) -> bool:
        return bool(self.storage[-1, -1] != GUARD_FILL)


def spans(mask: torch.Tensor, first_row: int = 0) -> list[Span]:
    """The contiguous True runs of a 2-D mask, per row."""
    out: list[Span] = []
    for r in torch.nonzero(mask.any(dim=1)).flatten().tolist():
        cols = torch.nonzero(mask[r]).flatten().tolist()
        start = prev = cols[0]
        for c in cols[1:]:
            if c != prev + 1:
                out.append(Span(first_row + r, start, prev + 1))
                start = c
            prev = c
        out.append(Span(first_row + r, start, prev + 1))
    return out


def changed_outside(before: torch.Tensor, after: torch.Tensor, windows: list[tuple[int, int, int]]) -> list[Span]:
    """Every changed (row, column range) outside each writer's own ``[row, cur:nxt)`` window.

    ``before``/``after``: two ``Rows.snapshot()``s; ``windows``: (row, cur, nxt) per writer.
    """
    mask = before != after
    for row, cur, nxt in windows:
        lo, hi = max(0, cur), min(mask.shape[1], nxt)
        if 0 <= row < mask.shape[0] and lo < hi:
            mask[row, lo:hi] = False
    return spans(mask)
