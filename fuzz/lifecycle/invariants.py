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
from functools import cached_property

import torch

from allocator_model.batch import FREE, ReleaseEvent, Request, RunningBatch, StepResult, WriteEvent
from allocator_model.decode import Refusal, Req
from allocator_model.req_to_token import GUARD
from fuzz.findings.kinds import Property, regime
from fuzz.findings.model import Violation

INVARIANTS: tuple[Property, ...] = (
    Property.NEIGHBOUR_ROWS_UNTOUCHED,
    Property.WRITE_WITHIN_ROW,
    Property.KV_LENS_ORDERED,
    Property.DRAFTS_WITHIN_ALLOCATION,
    Property.ROW_HOLDS_OWN_SLOTS,
    Property.SLOT_SINGLE_OWNER,
    Property.NO_STRANDED_PAGE_TAIL,
    Property.FREE_LIST_UNIQUE,
    Property.NO_LEAK,
)


def held(r: Request) -> Req:
    """The KV bookkeeping of a request that holds a row (``RunningBatch.holders``)."""
    assert r.kv is not None, f"request {r.rid} holds no row"
    return r.kv


class RowShadow:
    """What each request itself wrote into its row, column by column (the slots it meant to store)."""

    def __init__(self, batch: RunningBatch):
        self.rows = torch.zeros_like(batch.pool.req_to_token)
        self.width = batch.width

    def record(self, result: StepResult) -> None:
        for w in result.writes:
            end = min(w.write.nxt, self.width)
            if w.write.record and end > w.write.cur:
                self.rows[w.row, w.write.cur : end] = w.slots[: end - w.write.cur].to(self.rows.dtype)


class StepView:
    """One step as the checks see it: the batch after it, what it did, and each live row's allocated slots."""

    def __init__(self, batch: RunningBatch, result: StepResult, shadow: RowShadow):
        self.batch, self.result, self.shadow = batch, result, shadow

    @cached_property
    def live_slots(self) -> list[tuple[Request, torch.Tensor]]:
        """(request, its row's columns [0, min(kv_allocated_len, W)) as int64) for every request holding a row."""
        b = self.batch
        return [
            (r, b.pool.req_to_token[r.row, : min(held(r).kv_allocated_len, b.width)].to(torch.int64))
            for r in b.holders()
        ]


def _runs(cols: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in cols:
        if runs and runs[-1][1] == c:
            runs[-1] = (runs[-1][0], c + 1)
        else:
            runs.append((c, c + 1))
    return runs


def _cols(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"[{a}, {b})" for a, b in runs)


def _context(batch: RunningBatch, w: WriteEvent) -> list[str]:
    x = w.write
    return [
        f"row width W = context_len {batch.cfg.context_len} + extra {batch.extra} = {batch.width}",
        f"kv_committed_len {w.committed_len} at the allocation, kv_allocated_len {x.cur} -> {x.nxt}, "
        f"reserve {x.reserve}, allocator page {x.page} ({x.path} path)",
    ]


def _violation(batch: RunningBatch, prop: Property, headline: str, details: list[str], overshoot: int = 0) -> Violation:
    return Violation(prop, regime(batch.cfg, batch.page).value, headline, details, overshoot)


def _head(w: WriteEvent) -> str:
    return f"request {w.rid} (row {w.row}) wrote columns [{w.write.cur}, {w.write.nxt})"


def check_neighbour_rows_untouched(view: StepView) -> Violation | None:
    """No write changes the columns [0, kv_allocated_len) another live request wrote into its own row."""
    batch = view.batch
    for r, now in view.live_slots:
        meant = view.shadow.rows[r.row, : len(now)].to(torch.int64)
        if torch.equal(now, meant):
            continue
        row, runs = r.row, _runs((now != meant).nonzero().flatten().tolist())
        writers = [
            w for w in view.result.writes if w.write.record and any(s.victim_row == row for s in w.write.record.spills)
        ]
        victim = f"request {r.rid} (row {row}) columns {_cols(runs)}"
        if not writers:
            return _violation(batch, Property.NEIGHBOUR_ROWS_UNTOUCHED, f"{victim} changed by no write of its own", [])
        w = writers[0]
        return _violation(
            batch,
            Property.NEIGHBOUR_ROWS_UNTOUCHED,
            f"{_head(w)} of a row {batch.width} wide and changed {victim}",
            [
                f"victim: request {r.rid} (row {row}), kv_allocated_len {held(r).kv_allocated_len}: its slots in "
                f"{_cols(runs)} were overwritten with request {w.rid}'s"
            ]
            + _context(batch, w),
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
    """Every write ends within its own row: nxt <= W (UNO refusing a write past W counts: the server raises)."""
    batch = view.batch
    for w in view.result.writes:
        x = w.write
        if x.refusal is Refusal.UNO_GUARD:
            return _violation(
                batch,
                Property.WRITE_WITHIN_ROW,
                f"request {w.rid} (row {w.row}) refused: {x.refused}",
                _context(batch, w),
                x.nxt - batch.width,
            )
        if x.record is None or x.nxt <= batch.width:
            continue
        details = [f"victim: {_victims(w, batch.row_owner())}"]
        if x.record.lost:
            details.append(f"{x.record.lost} columns landed past even the guard rows")
        return _violation(
            batch,
            Property.WRITE_WITHIN_ROW,
            f"{_head(w)} of a row {batch.width} wide: {x.nxt - batch.width} columns past its end",
            details + _context(batch, w),
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
        return _violation(
            batch,
            Property.KV_LENS_ORDERED,
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
        return _violation(
            batch,
            Property.DRAFTS_WITHIN_ALLOCATION,
            f"request {w.rid} (row {w.row}) drafts up to column {w.draft_end} but kv_allocated_len is {w.write.nxt}",
            [
                f"device seq_len {w.device_seq_len} (allocated at kv_committed_len {w.committed_len}), topk "
                f"{batch.cfg.topk}: {w.draft_end - w.write.nxt} columns read stale or owned by no one"
            ]
            + _context(batch, w),
            w.draft_end - w.write.nxt,
        )
    return None


def _owner_name(owner: int) -> str:
    return "no one (free)" if owner == FREE else f"request {owner}"


def check_row_holds_own_slots(view: StepView) -> Violation | None:
    """Every column in [0, kv_allocated_len) of a row holds a slot the allocator says the request owns."""
    batch = view.batch
    owner_t, page = batch.allocator.page_owner_t, batch.page
    for r, slots in view.live_slots:
        owners = owner_t[(slots // page).clamp(0, len(owner_t) - 1)]
        bad = (owners != r.rid).nonzero().flatten().tolist()
        if not bad:
            continue
        col = bad[0]
        slot, owner = int(slots[col]), int(owners[col])
        return _violation(
            batch,
            Property.ROW_HOLDS_OWN_SLOTS,
            f"request {r.rid} (row {r.row}) column {col} holds slot {slot}, owned by {_owner_name(owner)}",
            [f"{len(bad)} of its {len(slots)} allocated columns hold foreign slots: columns {_cols(_runs(bad))}"],
        )
    return None


def check_slot_single_owner(view: StepView) -> Violation | None:
    """No slot stands twice among the live rows' columns [0, kv_allocated_len): one slot, one token."""
    if not view.live_slots:
        return None
    every = torch.cat([s for _, s in view.live_slots])
    every = every[every > 0]  # slot 0 is never handed out: an unwritten column is row-holds-own-slots' to report
    twice = (torch.bincount(every) > 1).nonzero().flatten().tolist() if len(every) else []
    if not twice:
        return None
    slot = twice[0]
    where = [
        f"request {r.rid} (row {r.row}) column {c}"
        for r, s in view.live_slots
        for c in (s == slot).nonzero().flatten().tolist()
    ]
    return _violation(
        view.batch,
        Property.SLOT_SINGLE_OWNER,
        f"slot {slot} stands in {len(where)} places: {'; '.join(where)}",
        [f"{len(twice)} slots stand more than once"],
    )


def check_no_stranded_page_tail(view: StepView) -> Violation | None:
    """After a spec decode allocation on a paged allocator, allocated == recorded: owned slots == kv_allocated_len."""
    batch = view.batch
    for w in view.result.writes:
        x = w.write
        r = batch.requests[w.rid]
        if not w.spec or x.refused or x.page == 1 or x.nxt == x.cur or r.kv is None:
            continue
        owned = len(batch.allocator.pages_of(w.rid)) * x.page
        if owned == held(r).kv_allocated_len:
            continue
        return _violation(
            batch,
            Property.NO_STRANDED_PAGE_TAIL,
            f"{_head(w)}: it owns {owned} slots ({owned // x.page} pages of {x.page}) but kv_allocated_len is "
            f"{held(r).kv_allocated_len}",
            [
                f"{owned - held(r).kv_allocated_len} slots past column {held(r).kv_allocated_len} are allocated but "
                f"recorded nowhere (a stranded page tail)"
            ]
            + _context(batch, w),
        )
    return None


def check_free_list_unique(view: StepView) -> Violation | None:
    """No page is freed while free (SGLang's list would then hold it twice); the free list holds free pages once."""
    batch = view.batch
    for rel in view.result.releases:
        doubles = [p.page for p in rel.problems if p.owner is None]
        if doubles:
            return _violation(
                batch,
                Property.FREE_LIST_UNIQUE,
                f"request {rel.rid} (row {rel.row}) {rel.reason} and freed pages {doubles} a second time",
                [
                    f"kv_committed_len {rel.kv_committed_len}, kv_allocated_len {rel.kv_allocated_len}, "
                    f"allocator page {batch.page}: SGLang's free list would now hold them twice"
                ],
            )
    alloc = batch.allocator
    free = alloc.free_page_list()
    if not free:
        return None
    if len(set(free)) != len(free):
        dup = sorted({p for p in free if free.count(p) > 1})
        return _violation(batch, Property.FREE_LIST_UNIQUE, f"pages {dup} stand twice in the free list", [])
    owners = alloc.page_owner_t[free]
    owned = [p for p, o in zip(free, owners.tolist(), strict=True) if o != FREE]
    if owned:
        return _violation(
            batch,
            Property.FREE_LIST_UNIQUE,
            f"pages {owned} are on the free list and owned by {_owner_name(int(alloc.page_owner_t[owned[0]]))}",
            [],
        )
    return None


def _leak_details(view: StepView, rel: ReleaseEvent) -> list[str]:
    batch = view.batch
    slots = batch.allocator.slots_of_pages(rel.still_owned)
    details = [f"leaked slots {slots[:16]}{' ...' if len(slots) > 16 else ''} ({len(slots)} in all)"]
    where = []
    for r, row in view.live_slots:
        hit = torch.isin(row // batch.page, torch.tensor(rel.still_owned)).nonzero().flatten().tolist()
        if hit:
            where.append(f"request {r.rid} (row {r.row}) columns {_cols(_runs(hit))}")
    details.append(
        "now referenced by " + "; ".join(where)
        if where
        else f"referenced by no live row: written past row {rel.row}'s width, beyond its clamped slice"
    )
    return details


def check_no_leak(view: StepView) -> Violation | None:
    """A released request owns no slot; with no request holding KV, every slot and every row is free."""
    batch = view.batch
    for rel in view.result.releases:
        if rel.still_owned:
            n = len(rel.still_owned) * batch.page
            return _violation(
                batch,
                Property.NO_LEAK,
                f"request {rel.rid} (row {rel.row}) {rel.reason} but still owns {n} slots (pages {rel.still_owned})",
                _leak_details(view, rel),
                n,
            )
    if not batch.requests or view.live_slots:
        return None
    alloc = batch.allocator
    lost = alloc.size() - alloc.available_size()
    rows_out = batch.pool.size - len(batch.pool.free_slots)
    if lost or rows_out:
        owners = sorted({int(o) for o in alloc.page_owner_t.tolist() if o != FREE})
        return _violation(
            batch,
            Property.NO_LEAK,
            f"no request holds KV, yet {lost} of {alloc.size()} slots and {rows_out} rows are not free",
            [f"pages still owned by requests {owners}"],
            lost,
        )
    return None


CHECKS: dict[Property, Callable[[StepView], Violation | None]] = {
    Property.NEIGHBOUR_ROWS_UNTOUCHED: check_neighbour_rows_untouched,
    Property.WRITE_WITHIN_ROW: check_write_within_row,
    Property.KV_LENS_ORDERED: check_kv_lens_ordered,
    Property.DRAFTS_WITHIN_ALLOCATION: check_drafts_within_allocation,
    Property.ROW_HOLDS_OWN_SLOTS: check_row_holds_own_slots,
    Property.SLOT_SINGLE_OWNER: check_slot_single_owner,
    Property.NO_STRANDED_PAGE_TAIL: check_no_stranded_page_tail,
    Property.FREE_LIST_UNIQUE: check_free_list_unique,
    Property.NO_LEAK: check_no_leak,
}


def step_violations(batch: RunningBatch, result: StepResult, shadow: RowShadow, checks=INVARIANTS) -> list[Violation]:
    """Every invariant in ``checks`` the step broke, in the order of blame (record the step in ``shadow`` first)."""
    view = StepView(batch, result, shadow)
    return [v for v in (CHECKS[name](view) for name in INVARIANTS if name in checks) if v is not None]
