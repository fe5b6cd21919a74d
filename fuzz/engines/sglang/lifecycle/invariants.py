"""The invariants a running batch keeps after every step, each checked over the whole pool.

| invariant | what must hold after every step |
|---|---|
| `neighbour-rows-untouched` | columns [0, kv_allocated_len) of a live request's row hold what that request wrote |
| `write-within-row` | every write ends within its own row (UNO refusing one counts too) |
| `kv-lens-ordered` | 0 <= kv_committed_len <= kv_allocated_len <= W for every request holding a row |
| `drafts-within-allocation` | a decode batch's draft/verify columns stay below kv_allocated_len |
| `row-holds-own-slots` | every column in [0, kv_allocated_len) holds a slot the request owns |
| `slot-single-owner` | no slot stands in two places of the live rows |
| `no-stranded-page-tail` | after a spec decode allocation on a paged allocator: slots owned == kv_allocated_len |
| `free-list-unique` | nothing is freed twice, the free list has no duplicates and no owned page |
| `no-leak` | a released request owns no slot; with no request holding KV, every slot and row is free |

The order is the order of blame: a write that lands in a neighbour's row is
reported as that, naming the victim request, not as the bad lengths or the
foreign slots it leaves behind.  ``RowShadow`` remembers what each request
itself wrote, which is what a neighbour's write is detected against.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from allocator_model.batch import RunningBatch, StepResult, WriteEvent
from allocator_model.decode import Refusal
from allocator_model.req_to_token import GUARD
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.findings.kinds import Outcome, Property
from fuzz.findings.model import Violation

from .slots import (
    check_free_list_unique,
    check_no_leak,
    check_no_stranded_page_tail,
    check_row_holds_own_slots,
    check_slot_single_owner,
)
from .view import RowShadow, StepView, cols, context_lines, head, held, runs, violation

__all__ = ["INVARIANTS", "CHECKS", "RowShadow", "StepView", "step_violations"]

INVARIANTS: tuple[Property, ...] = (
    Property.NEIGHBOUR_ROWS_UNTOUCHED,
    Property.WRITE_WITHIN_ROW,
    SGLangProperty.KV_LENS_ORDERED,
    SGLangProperty.DRAFTS_WITHIN_ALLOCATION,
    SGLangProperty.ROW_HOLDS_OWN_SLOTS,
    SGLangProperty.SLOT_SINGLE_OWNER,
    SGLangProperty.NO_STRANDED_PAGE_TAIL,
    SGLangProperty.FREE_LIST_UNIQUE,
    SGLangProperty.NO_LEAK,
)


def check_neighbour_rows_untouched(view: StepView) -> Violation | None:
    """No write changes the columns [0, kv_allocated_len) another live request wrote into its own row."""
    batch = view.batch
    for r, now in view.live_slots:
        meant = view.shadow.rows[r.row, : len(now)].to(torch.int64)
        if torch.equal(now, meant):
            continue
        row, changed = r.row, runs((now != meant).nonzero().flatten().tolist())
        writers = [
            w for w in view.result.writes if w.write.record and any(s.victim_row == row for s in w.write.record.spills)
        ]
        victim = f"request {r.rid} (row {row}) columns {cols(changed)}"
        if not writers:
            return violation(batch, Property.NEIGHBOUR_ROWS_UNTOUCHED, f"{victim} changed by no write of its own", [])
        w = writers[0]
        return violation(
            batch,
            Property.NEIGHBOUR_ROWS_UNTOUCHED,
            f"{head(w)} of a row {batch.width} wide and changed {victim}",
            [
                f"victim: request {r.rid} (row {row}), kv_allocated_len {held(r).kv_allocated_len}: its slots in "
                f"{cols(changed)} were overwritten with request {w.rid}'s"
            ]
            + context_lines(batch, w),
            w.write.nxt - batch.width,
        )
    return None


def _victims(w: WriteEvent, owners: dict[int, int]) -> str:
    parts = []
    for s in w.write.record.spills if w.write.record else []:
        who = (
            GUARD
            if s.victim_row == GUARD
            else (
                f"row {s.victim_row} (request {owners[s.victim_row]})"
                if s.victim_row in owners
                else f"row {s.victim_row} (free)"
            )
        )
        parts.append(f"{who} columns [{s.col_start}, {s.col_end})")
    return "; ".join(parts) or "none observed"


def check_write_within_row(view: StepView) -> Violation | None:
    """Every write ends within its own row: nxt <= W (an SGLang guard refusing a write past W counts: it crashes)."""
    batch = view.batch
    for w in view.result.writes:
        x = w.write
        if x.refusal is Refusal.GUARD and x.guard is not None:
            return violation(
                batch,
                Property.WRITE_WITHIN_ROW,
                f"request {w.rid} (row {w.row}) refused: {x.refused}",
                context_lines(batch, w),
                x.nxt - batch.width,
                Outcome.stopped_by(x.guard.value),
            )
        if x.record is None or x.nxt <= batch.width:
            continue
        details = [f"victim: {_victims(w, batch.row_owner())}"]
        if x.record.lost:
            details.append(f"{x.record.lost} columns landed past even the guard rows")
        return violation(
            batch,
            Property.WRITE_WITHIN_ROW,
            f"{head(w)} of a row {batch.width} wide: {x.nxt - batch.width} columns past its end",
            details + context_lines(batch, w),
            x.nxt - batch.width,
        )
    return None


def check_kv_lens_ordered(view: StepView) -> Violation | None:
    """0 <= kv_committed_len <= kv_allocated_len <= W: committed KV sits in allocated columns of the row."""
    batch = view.batch
    for r in batch.holders():
        c, a = held(r).kv_committed_len, held(r).kv_allocated_len
        if 0 <= c <= a <= batch.width:
            continue
        why = (
            "kv_committed_len < 0"
            if c < 0
            else (
                f"kv_committed_len {c} > kv_allocated_len {a}: {c - a} committed tokens have no allocated column"
                if c > a
                else f"kv_allocated_len {a} > row width {batch.width}"
            )
        )
        return violation(
            batch,
            SGLangProperty.KV_LENS_ORDERED,
            f"request {r.rid} (row {r.row}): {why}",
            [
                f"kv_committed_len {c}, kv_allocated_len {a}, row width {batch.width}, "
                f"output_len {r.output_len} of max_new_tokens {r.max_new_tokens}"
            ],
            max(c - a, a - batch.width),
        )
    return None


def check_drafts_within_allocation(view: StepView) -> Violation | None:
    """A decode batch's draft and verify columns, from the device seq_len, stay below kv_allocated_len."""
    batch = view.batch
    for w in view.result.writes:
        if not w.is_decode or w.write.refused or w.draft_end <= w.write.nxt:
            continue
        return violation(
            batch,
            SGLangProperty.DRAFTS_WITHIN_ALLOCATION,
            f"request {w.rid} (row {w.row}) drafts up to column {w.draft_end} but kv_allocated_len is {w.write.nxt}",
            [
                f"device seq_len {w.device_seq_len} (allocated at kv_committed_len {w.committed_len}), topk "
                f"{batch.cfg.topk}: {w.draft_end - w.write.nxt} columns read stale or owned by no one"
            ]
            + context_lines(batch, w),
            w.draft_end - w.write.nxt,
        )
    return None


CHECKS: dict[Property, Callable[[StepView], Violation | None]] = {
    Property.NEIGHBOUR_ROWS_UNTOUCHED: check_neighbour_rows_untouched,
    Property.WRITE_WITHIN_ROW: check_write_within_row,
    SGLangProperty.KV_LENS_ORDERED: check_kv_lens_ordered,
    SGLangProperty.DRAFTS_WITHIN_ALLOCATION: check_drafts_within_allocation,
    SGLangProperty.ROW_HOLDS_OWN_SLOTS: check_row_holds_own_slots,
    SGLangProperty.SLOT_SINGLE_OWNER: check_slot_single_owner,
    SGLangProperty.NO_STRANDED_PAGE_TAIL: check_no_stranded_page_tail,
    SGLangProperty.FREE_LIST_UNIQUE: check_free_list_unique,
    SGLangProperty.NO_LEAK: check_no_leak,
}


def step_violations(batch: RunningBatch, result: StepResult, shadow: RowShadow, checks=INVARIANTS) -> list[Violation]:
    """Every invariant in ``checks`` the step broke, in the order of blame (record the step in ``shadow`` first)."""
    view = StepView(batch, result, shadow)
    return [v for v in (CHECKS[name](view) for name in INVARIANTS if name in checks) if v is not None]
