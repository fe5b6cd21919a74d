"""Slot ownership, judged on every decode step SGLang's code makes: what the allocator handed out, where it went.

``handed_out(allocator)`` records, for the length of a step, every slot the
release's own allocator object hands out (its ``alloc``, ``alloc_extend``,
``alloc_decode``, ``alloc_logical_only``: the slot-hand-out and slot-source
sites of ``sites``) and every slot handed back (``free``), outermost calls
only, in call order.  ``ownership_problem`` then holds the diff of
``req_to_token`` (before/after the step: every row-writing site of the step
shows there, whichever of them wrote) to these invariants:

1. the new columns of the step's requests, ``[kv_allocated_len before,
   after)`` of each request's own row, taken in batch order, hold exactly
   the slots handed out, in the order handed out: a slot handed to a request
   is written to that request's row (SGLang's allocators hand out one
   request's slots after the other's, in batch order: ``alloc_extend_kernel``
   places request i's at the running sum of the others' extend lengths, and
   ``assign_req_to_token_pool`` reads them back at the same sum), no column
   of the window is skipped or written twice, no slot is written that the
   allocator did not hand out this step (another's, a stale id, slot 0), and
   none handed out is dropped (a leak);
2. each slot so written sits on a page that was free before the step or that
   the request's own row already held (the paged allocator first fills the
   request's last partial page): never on a page another row holds, and
   never a slot a request of the step already held (one slot in two
   columns: two tokens' KV in one place, as a continued page that restarts
   at its last slot would give);
3. no slot handed out is handed back within the step, nor left on the allocator's free list after it (it
   would be written and free at once: the next allocation hands it out again).

Columns outside the windows are the spill checks' business (``rows.changed_outside``),
and a window past the row width is write-within-row's: a write past the row is
not judged here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

HAND_OUT_METHODS = ("alloc", "alloc_extend", "alloc_decode", "alloc_logical_only")
FREE_LISTS = ("free_pages", "release_pages", "staged_pages")  # where SGLang's allocator classes keep free pages


@dataclass
class HandOuts:
    """The slots an allocator handed out (``slots``, in order) and took back (``freed``) during a step."""

    slots: list[int] = field(default_factory=list)
    freed: list[int] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)  # "alloc_extend(12)": the hand-outs, in order
    depth: int = 0


def _ids(value: Any) -> list[int]:
    if isinstance(value, torch.Tensor):
        return [int(x) for x in value.flatten().tolist()]
    return []


@contextlib.contextmanager
def handed_out(allocator: Any) -> Iterator[HandOuts]:
    """Record what ``allocator`` hands out and takes back inside the block (outermost calls only), then put its
    methods back as they were (instance attributes: a wrapper already there, ``free_list_checked_first``'s, stays).
    """
    record = HandOuts()
    saved: dict[str, Any] = {}
    missing = object()

    def wrap(name: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            outer = record.depth == 0
            record.depth += 1
            try:
                out = method(*args, **kwargs)
            finally:
                record.depth -= 1
            if outer:
                ids = _ids(args[0] if args else kwargs.get("free_index")) if name == "free" else _ids(out)
                (record.freed if name == "free" else record.slots).extend(ids)
                if name != "free":
                    record.calls.append(f"{name}({len(ids)})")
            return out

        return call

    for name in (*HAND_OUT_METHODS, "free"):
        method = getattr(allocator, name, None)
        if callable(method):
            saved[name] = allocator.__dict__.get(name, missing)
            setattr(allocator, name, wrap(name, method))
    try:
        yield record
    finally:
        for name, before in saved.items():
            if before is missing:
                delattr(allocator, name)
            else:
                setattr(allocator, name, before)


def free_pages(allocator: Any) -> set[int]:
    """The pages (slots, for the token allocator) the allocator lists as free, wherever its class keeps them."""
    out: set[int] = set()
    for name in FREE_LISTS:
        value = allocator.__dict__.get(name)
        for part in value if isinstance(value, (list, tuple)) else [value]:
            out.update(_ids(part))
    return out


@dataclass(frozen=True)
class Window:
    """The columns ``[cur, nxt)`` of ``row`` a step gave request ``rid``."""

    rid: Any
    row: int
    cur: int
    nxt: int


def _holder(before: torch.Tensor, page: int, page_size: int, skip: int, rows: int) -> int | None:
    """The row (other than ``skip``) whose committed columns before the step hold a slot of ``page``."""
    held = (before[:rows] // page_size == page) & (before[:rows] != 0)
    for r in torch.nonzero(held.any(dim=1)).flatten().tolist():
        if r != skip:
            return int(r)
    return None


def ownership_problem(
    before: torch.Tensor,
    after: torch.Tensor,
    windows: Sequence[Window],
    handed: HandOuts,
    page_size: int,
    free_before: set[int],
    width: int,
    free_after: set[int] | None = None,
) -> str | None:
    """The first break of the module docstring's invariants in one step (None: every slot where it belongs).

    ``before``/``after``: ``Rows.snapshot()``s (guard rows included: ``width`` and the request rows are the
    caller's); ``windows``: the step's requests in batch order; ``free_before`` / ``free_after``:
    ``free_pages(allocator)`` before and after the step.
    """
    if any(w.nxt > width for w in windows):
        return None  # a write past the row: write-within-row names it, its slots land in another row
    rows = before.shape[0]
    given_back = set(handed.freed) & set(handed.slots)
    if given_back:
        slot = min(given_back)
        return f"slot {slot} was handed out and handed back within the same step ({', '.join(handed.calls)})"
    where = [(w, col) for w in windows for col in range(w.cur, w.nxt)]
    written = [int(slot) for w in windows for slot in after[w.row, w.cur : w.nxt].tolist()]  # ``where``'s order
    what = f"the allocator handed out {len(handed.slots)} slots ({', '.join(handed.calls) or 'no call'})"
    for k, ((w, col), slot) in enumerate(zip(where, written, strict=True)):
        if k >= len(handed.slots):
            return (
                f"request {w.rid} (row {w.row}) column {col} holds slot {slot}, but {what}: the step's new columns "
                f"{_spans(windows)} are {len(where)}"
            )
        if slot != handed.slots[k]:
            why = "not one handed out this step" if slot not in handed.slots else "handed out for another column"
            return (
                f"request {w.rid} (row {w.row}) column {col} holds slot {slot} ({why}), where the allocator's "
                f"slot {handed.slots[k]} belongs: {what} for the new columns {_spans(windows)}"
            )
    if len(handed.slots) > len(where):
        lost = handed.slots[len(where) :]
        return (
            f"{what}, but the step's new columns {_spans(windows)} hold only {len(where)}: "
            f"slot(s) {', '.join(map(str, lost[:8]))} written to no request's row (leaked)"
        )
    again = _handed_again(before, windows, written, where)
    if again is not None:
        return f"{again} (the allocator handed it out: {', '.join(handed.calls)})"
    owned: dict[tuple[int, int], set[int]] = {}  # (row, cur) -> the pages of its columns [0, cur) before the step
    for (w, col), slot in zip(where, written, strict=True):
        page = slot // page_size
        if free_after is not None and page in free_after:
            return (
                f"request {w.rid} (row {w.row}) column {col} holds slot {slot} on page {page}, which the allocator "
                f"still lists as free after handing it out ({', '.join(handed.calls)})"
            )
        if page in free_before:
            continue
        mine = owned.get((w.row, w.cur))
        if mine is None:
            mine = owned[w.row, w.cur] = {s // page_size for s in before[w.row, : w.cur].tolist() if s != 0}
        if page in mine:
            continue
        holder = _holder(before, page, page_size, w.row, rows)
        whose = f"row {holder} holds it" if holder is not None else "it was neither free nor the request's own"
        return (
            f"request {w.rid} (row {w.row}) column {col} holds slot {slot} on page {page}: {whose} before the step "
            f"(the allocator handed it out: {', '.join(handed.calls)})"
        )
    return None


def _handed_again(
    before: torch.Tensor, windows: Sequence[Window], written: list[int], where: list[tuple[Window, int]]
) -> str | None:
    """A new column holding a slot some request of the step already held before it (its columns ``[0, cur)``):
    one slot in two columns is two tokens' KV in one place, whatever page it is on (slot 0 is SGLang's padding
    slot, never handed out, so never counted)."""
    held: dict[int, tuple[Window, int]] = {}
    for w in windows:
        for col, slot in enumerate(before[w.row, : w.cur].tolist()):
            if slot != 0:
                held.setdefault(int(slot), (w, col))
    for (w, col), slot in zip(where, written, strict=True):
        if slot in held:
            owner, at = held[slot]
            return (
                f"request {w.rid} (row {w.row}) column {col} holds slot {slot}, which request {owner.rid} (row "
                f"{owner.row}) column {at} already held before the step: handed out again"
            )
    return None


def _spans(windows: Sequence[Window]) -> str:
    return ", ".join(f"row {w.row} [{w.cur}, {w.nxt})" for w in windows) or "none"
