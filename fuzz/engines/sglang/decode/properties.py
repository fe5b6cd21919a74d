"""The properties every decode write must keep, each a check of one observed write.

A violation reads like the specification it breaks: it names the request,
its row, the columns written, the row width and the victim row.  Its
signature (property / regime) groups failures into distinct bugs: the seed
bug is ``write-within-row/dcp>1``, the open page-1 gap ``write-within-row/alloc-page-1``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from allocator_model.decode import Refusal, WritePath
from allocator_model.pools import KVPool
from allocator_model.regimes import regime
from allocator_model.req_to_token import GUARD, Spill
from allocator_model.scenario import ScenarioRun, WriteObservation
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.findings.kinds import STALE_READ, Outcome, Property
from fuzz.findings.model import Violation
from fuzz.findings.render import row_width_text

WRITE_WITHIN_ROW = Property.WRITE_WITHIN_ROW
NEIGHBOUR_ROWS_UNTOUCHED = Property.NEIGHBOUR_ROWS_UNTOUCHED
DRAFTS_WITHIN_ALLOCATION = SGLangProperty.DRAFTS_WITHIN_ALLOCATION
PAGE_ALIGNED_GROWTH = SGLangProperty.PAGE_ALIGNED_GROWTH

PROPERTIES: tuple[Property, ...] = (
    WRITE_WITHIN_ROW,
    NEIGHBOUR_ROWS_UNTOUCHED,
    DRAFTS_WITHIN_ALLOCATION,
    PAGE_ALIGNED_GROWTH,
)


def _who(obs: WriteObservation, row: int | str) -> str:
    if isinstance(row, str):  # GUARD
        return GUARD
    owner = obs.row_owner.get(row)
    return f"row {row} (request {owner})" if owner is not None else f"row {row} (free)"


def _victims(obs: WriteObservation, spills: list[Spill]) -> str:
    return "; ".join(f"{_who(obs, s.victim_row)} columns [{s.col_start}, {s.col_end})" for s in spills)


def _context(run: ScenarioRun, obs: WriteObservation) -> list[str]:
    w = obs.write
    sized = "" if run.sizing_page in (None, run.alloc_page) else f" (sized for alloc page {run.sizing_page})"
    return [
        f"row width W = {_width(run)}{sized}",
        f"kv_committed_len {obs.kv_committed_len}, kv_allocated_len {w.cur} -> {w.nxt}, "
        f"reserve {w.reserve}, allocator page {w.page} ({obs.step}, {w.path} path)",
    ]


def _width(run: ScenarioRun) -> str:
    """How W came about: C + extra (page-aligned on main), or a pool builder's own, narrower extra."""
    cfg, kind = run.config, run.config.kv_pool
    if kind is KVPool.STANDARD or run.width >= cfg.context_len + run.extra:
        return row_width_text(cfg.context_len, run.extra, run.width)
    return (
        f"context_len {cfg.context_len} + extra_max_context_len {run.width - cfg.context_len} = {run.width}, "
        f"sized by KVCacheConfigurator.{kind.builder} for the {kind.value} pool (the sizing module's extra is "
        f"{run.extra})"
    )


def _head(obs: WriteObservation) -> str:
    w = obs.write
    return f"request {obs.req.rid} (row {obs.req.req_pool_idx}) wrote columns [{w.cur}, {w.nxt})"


def check_write_within_row(run: ScenarioRun, obs: WriteObservation) -> Violation | None:
    """Every rounded write ends within its own row: nxt <= W."""
    w = obs.write
    if w.refusal is Refusal.GUARD and w.guard is not None:
        return Violation(
            WRITE_WITHIN_ROW,
            regime(run.config, run.alloc_page),
            f"request {obs.req.rid} (row {obs.req.req_pool_idx}) would write columns [{w.cur}, {w.nxt}) of a row "
            f"{run.width} wide; SGLang's own guard {w.guard.value} stops the step instead (the server crashes)",
            _context(run, obs),
            w.nxt - run.width,
            Outcome.stopped_by(w.guard.value),
        )
    if w.nxt <= run.width:
        return None
    spills = w.record.spills if w.record else []
    details = [f"victim: {_victims(obs, spills)}" if spills else "victim: none observed"]
    leaked = w.record.slots_past_width if w.record else []
    if leaked:
        shown = ", ".join(map(str, leaked[:8])) + (", ..." if len(leaked) > 8 else "")
        details.append(
            f"leaked: {len(leaked)} slots ({shown}) sit past the row; the free of "
            f"req_to_token[{obs.req.req_pool_idx}, :{w.nxt}] clamps at {run.width} and never returns them"
        )
    details += _context(run, obs)
    return Violation(
        WRITE_WITHIN_ROW,
        regime(run.config, run.alloc_page),
        f"{_head(obs)} of a row {run.width} wide: {w.nxt - run.width} columns past its end",
        details,
        w.nxt - run.width,
    )


def check_neighbour_rows_untouched(run: ScenarioRun, obs: WriteObservation) -> Violation | None:
    """No other row of the tensor changes when a request writes its own row."""
    if not obs.changed_outside:
        return None
    changed = sum(s.col_end - s.col_start for s in obs.changed_outside)
    return Violation(
        NEIGHBOUR_ROWS_UNTOUCHED,
        regime(run.config, run.alloc_page),
        f"{_head(obs)} and changed {changed} entries outside its row",
        [f"victim: {_victims(obs, obs.changed_outside)}"] + _context(run, obs),
        obs.write.nxt - run.width,
    )


def check_drafts_within_allocation(run: ScenarioRun, obs: WriteObservation) -> Violation | None:
    """The draft and verify phases touch only columns below kv_allocated_len."""
    if obs.write.refused or obs.draft_end <= obs.req.kv_allocated_len:
        return None
    cfg = run.config
    return Violation(
        DRAFTS_WITHIN_ALLOCATION,
        regime(cfg, run.alloc_page),
        f"request {obs.req.rid} (row {obs.req.req_pool_idx}) drafts up to column {obs.draft_end} "
        f"but kv_allocated_len is {obs.req.kv_allocated_len}",
        [
            f"device seq_len {obs.device_seq_len} (committed {obs.kv_committed_len} + lag "
            f"{obs.device_seq_len - obs.kv_committed_len}), topk {cfg.topk}, "
            f"{obs.draft_end - obs.req.kv_allocated_len} columns read stale or owned by no one"
        ]
        + _context(run, obs),
        obs.draft_end - obs.req.kv_allocated_len,
        STALE_READ,  # req_to_token past kv_allocated_len holds stale slot ids: the step reads and writes their KV
    )


def check_page_aligned_growth(run: ScenarioRun, obs: WriteObservation) -> Violation | None:
    """On a paged allocator, spec decode grows kv_allocated_len to whole pages (allocated == recorded)."""
    w = obs.write
    if (
        w.refused
        or w.path in (WritePath.NON_SPEC, WritePath.PREFILL)
        or w.page == 1
        or w.nxt == w.cur
        or w.nxt % w.page == 0
    ):
        return None
    return Violation(
        PAGE_ALIGNED_GROWTH,
        regime(run.config, run.alloc_page),
        f"{_head(obs)}: kv_allocated_len {w.nxt} is not a multiple of the allocator page {w.page}",
        [f"the last page's {w.page - w.nxt % w.page} slots past column {w.nxt} are allocated but unrecorded"]
        + _context(run, obs),
        0,
    )


CHECKS: dict[Property, Callable[[ScenarioRun, WriteObservation], Violation | None]] = {
    WRITE_WITHIN_ROW: check_write_within_row,
    NEIGHBOUR_ROWS_UNTOUCHED: check_neighbour_rows_untouched,
    DRAFTS_WITHIN_ALLOCATION: check_drafts_within_allocation,
    PAGE_ALIGNED_GROWTH: check_page_aligned_growth,
}


def violations(run: ScenarioRun, props=PROPERTIES) -> list[Violation]:
    """Every violation of ``props`` in the run, in property order, first write first.

    A write past its row always changes the neighbour too; the write-within-row
    report already names that victim, so the neighbour check is not counted twice.
    """
    found = []
    for prop in (p for p in props if p in CHECKS):  # sizing-raised is no check of a run: the run itself raised
        for obs in run.writes:
            if prop == NEIGHBOUR_ROWS_UNTOUCHED and WRITE_WITHIN_ROW in props and check_write_within_row(run, obs):
                continue
            v = CHECKS[prop](run, obs)
            if v is not None:
                found.append(replace(v, variant=run.config.kv_pool.variant))  # the deployment names the group too
                break
    return found


def reported_as(prop: Property, run: ScenarioRun) -> tuple[Property, ...]:
    """The properties ``violations`` may name a break of ``prop`` in ``run`` under: a neighbour overwritten by
    a write past the row is named once, as write-within-row (the rule above); anything else as itself."""
    spilled = any(obs.changed_outside for obs in run.writes)
    return (prop, WRITE_WITHIN_ROW) if prop == NEIGHBOUR_ROWS_UNTOUCHED and spilled else (prop,)


def overshoot(run: ScenarioRun) -> int:
    """How far the worst write ends past the row width (negative: slack); what target() climbs."""
    return max((obs.write.nxt - run.width for obs in run.writes), default=-run.width)
