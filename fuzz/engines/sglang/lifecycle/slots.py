"""The invariants of slot ownership: every allocated column holds the request's own slot, once;
nothing freed twice; nothing leaked (see ``invariants`` for the table and the order of blame)."""

from __future__ import annotations

import torch

from allocator_model.batch import FREE, ReleaseEvent
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.findings.model import Violation

from .view import StepView, cols, context_lines, head, held, runs, violation


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
        return violation(
            batch,
            SGLangProperty.ROW_HOLDS_OWN_SLOTS,
            f"request {r.rid} (row {r.row}) column {col} holds slot {slot}, owned by {_owner_name(owner)}",
            [f"{len(bad)} of its {len(slots)} allocated columns hold foreign slots: columns {cols(runs(bad))}"],
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
    return violation(
        view.batch,
        SGLangProperty.SLOT_SINGLE_OWNER,
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
        return violation(
            batch,
            SGLangProperty.NO_STRANDED_PAGE_TAIL,
            f"{head(w)}: it owns {owned} slots ({owned // x.page} pages of {x.page}) but kv_allocated_len is "
            f"{held(r).kv_allocated_len}",
            [
                f"{owned - held(r).kv_allocated_len} slots past column {held(r).kv_allocated_len} are allocated but "
                f"recorded nowhere (a stranded page tail)"
            ]
            + context_lines(batch, w),
        )
    return None


def check_free_list_unique(view: StepView) -> Violation | None:
    """No page is freed while free (SGLang's list would then hold it twice); the free list holds free pages once."""
    batch = view.batch
    for rel in view.result.releases:
        doubles = [p.page for p in rel.problems if p.owner is None]
        if doubles:
            return violation(
                batch,
                SGLangProperty.FREE_LIST_UNIQUE,
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
        return violation(batch, SGLangProperty.FREE_LIST_UNIQUE, f"pages {dup} stand twice in the free list", [])
    owners = alloc.page_owner_t[free]
    owned = [p for p, o in zip(free, owners.tolist(), strict=True) if o != FREE]
    if owned:
        return violation(
            batch,
            SGLangProperty.FREE_LIST_UNIQUE,
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
            where.append(f"request {r.rid} (row {r.row}) columns {cols(runs(hit))}")
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
            return violation(
                batch,
                SGLangProperty.NO_LEAK,
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
        return violation(
            batch,
            SGLangProperty.NO_LEAK,
            f"no request holds KV, yet {lost} of {alloc.size()} slots and {rows_out} rows are not free",
            [f"pages still owned by requests {owners}"],
            lost,
        )
    return None
