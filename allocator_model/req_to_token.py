"""``req_to_token``: one int32 row per running request, column i = KV slot of token i.

The tensor is real, and it is written the way SGLang's
``assign_req_to_token_pool`` kernel writes it: at flat offset
``row * W + col`` with ``col < end`` as the only mask.  A column >= W
therefore lands in row + 1 (the request admitted before this one, since rows
are handed out last-in-first-out from the top) and, past the last row, in a
guard region standing for the memory after the tensor.  Reads and frees use
the ``req_to_token[row, start:end]`` slice, which clamps at W: slots written
past the row are never seen again by their owner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .numeric import ceil_to_page

GUARD = "guard past the last row"


@dataclass
class Spill:
    """Columns of one foreign row (or the guard) a write landed in."""

    victim_row: int | str  # a row index, or GUARD
    col_start: int
    col_end: int

    def describe(self) -> str:
        where = self.victim_row if self.victim_row == GUARD else f"row {self.victim_row}"
        return f"{where} columns [{self.col_start}, {self.col_end})"


@dataclass
class WriteRecord:
    row: int
    start: int
    end: int
    width: int
    spills: list[Spill] = field(default_factory=list)
    lost: int = 0  # columns past even the guard: memory we do not model
    # Slot ids written at columns >= W: the owner's clamped slice never sees them again.
    slots_past_width: list[int] = field(default_factory=list)

    @property
    def overshoot(self) -> int:
        return self.end - self.width


class ReqToTokenPool:
    # Memory past the last row is modeled as a guard region that grows on demand
    # up to this many entries; anything further is counted as lost.
    MAX_STORAGE = 1 << 26

    def __init__(self, size: int, width: int, guard_rows: int = 1):
        self.size = size
        self.width = width
        self.rows = size + 1  # row 0 is padding
        self.storage = torch.zeros((self.rows + guard_rows) * width, dtype=torch.int32)
        self.req_to_token = self.storage[: self.rows * width].view(self.rows, width)
        # pop() from the end: the first request gets the last row.
        self.free_slots = list(range(1, size + 1))

    def _grow_guard(self, numel: int) -> None:
        """Extend the guard so a write ending at flat offset ``numel`` is observed, not lost."""
        numel = min(ceil_to_page(numel, self.width), self.MAX_STORAGE)  # whole rows
        if numel <= self.storage.numel():
            return
        grown = torch.zeros(numel, dtype=torch.int32)
        grown[: self.storage.numel()] = self.storage
        self.storage = grown
        self.req_to_token = grown[: self.rows * self.width].view(self.rows, self.width)

    def alloc(self) -> int | None:
        return self.free_slots.pop() if self.free_slots else None

    def free(self, row: int) -> None:
        self.free_slots.append(row)

    def write(self, row: int, start: int, end: int, values: torch.Tensor) -> WriteRecord:
        """assign_req_to_token_pool: store values at row * W + col for col in [start, end).

        The flat offsets are one contiguous run, so the store is one slice of
        the flat storage: the same elements the kernel's ``col < end`` mask
        lets through, past the row included.
        """
        record = WriteRecord(row, start, end, self.width)
        if end <= start:
            return record
        first, stop = row * self.width + start, row * self.width + end  # flat [first, stop)
        self._grow_guard(stop)
        kept = max(0, min(stop, self.storage.numel()) - first)
        record.lost = (stop - first) - kept
        if kept:
            self.storage[first : first + kept] = values[:kept].to(torch.int32)
        if end > self.width:
            record.slots_past_width = values[max(0, self.width - start) : end - start].tolist()
        self._record_spills(record)
        return record

    def _record_spills(self, record: WriteRecord) -> None:
        first = record.row * self.width + max(record.start, self.width)
        last = record.row * self.width + record.end  # exclusive
        while first < last and first < self.storage.numel():
            victim, col = divmod(first, self.width)
            stop = min(last, (victim + 1) * self.width)
            label = victim if victim < self.rows else GUARD
            record.spills.append(Spill(label, col, col + stop - first))
            first = stop

    def read(self, row: int, start: int, end: int) -> torch.Tensor:
        """The slice req_to_token[row, start:end] (clamps at the row width)."""
        return self.req_to_token[row, start:end]

    def snapshot(self) -> torch.Tensor:
        return self.storage.clone()

    def changed_outside(self, before: torch.Tensor, row: int) -> list[Spill]:
        """Every place outside ``row`` whose contents differ from ``before``, as column runs."""
        if before.numel() < self.storage.numel():  # the guard grew: it held zeros before
            before = torch.cat([before, torch.zeros(self.storage.numel() - before.numel(), dtype=before.dtype)])
        diff = self.storage != before
        diff[row * self.width : (row + 1) * self.width] = False
        if not bool(diff.any()):  # the common case: nothing outside the row changed
            return []
        runs: list[Spill] = []
        for off in diff.nonzero().flatten().tolist():
            victim, col = divmod(off, self.width)
            label = victim if victim < self.rows else GUARD
            if runs and runs[-1].victim_row == label and runs[-1].col_end == col:
                runs[-1].col_end += 1
            else:
                runs.append(Spill(label, col, col + 1))
        return runs
