"""What the lifecycle invariants look at: one step's view of the batch, the rows' shadow, and shared wording.

``RowShadow`` remembers what each request itself wrote into its row (what a
neighbour's write is detected against); ``StepView`` is one step as the
checks see it; the helpers word column runs and the write context the same
way for every invariant.
"""

from __future__ import annotations

from functools import cached_property

import torch

from allocator_model.batch import Request, RunningBatch, StepResult, WriteEvent
from allocator_model.decode import Req
from allocator_model.regimes import regime
from fuzz.findings.kinds import SILENT, Outcome, Property
from fuzz.findings.model import Violation
from fuzz.findings.render import row_width_text


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


def runs(cols: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for c in cols:
        if runs and runs[-1][1] == c:
            runs[-1] = (runs[-1][0], c + 1)
        else:
            runs.append((c, c + 1))
    return runs


def cols(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"[{a}, {b})" for a, b in runs)


def row_line(batch: RunningBatch) -> str:
    """The row's width as the story states it: the sizing module's C + extra, or a pool builder's narrower row.

    A kind whose builder sizes its own rows (``KVPool.builder``: upstream's
    unified pools, C + 4 + D) is named with that builder's extra, not the
    headroom it ignores.
    """
    c, width = batch.cfg.context_len, batch.width
    if width < c + batch.extra:
        return (
            f"row width W = context_len {c} + extra_max_context_len {width - c} of "
            f"{batch.cfg.kv_pool.builder} = {width} (the sizing module's headroom {batch.extra} is not used)"
        )
    return f"row width W = {row_width_text(c, batch.extra, width)}"


def context_lines(batch: RunningBatch, w: WriteEvent) -> list[str]:
    x = w.write
    return [
        row_line(batch),
        f"kv_committed_len {w.committed_len} at the allocation, kv_allocated_len {x.cur} -> {x.nxt}, "
        f"reserve {x.reserve}, allocator page {x.page} ({x.path} path)",
    ]


def violation(
    batch: RunningBatch,
    prop: Property,
    headline: str,
    details: list[str],
    overshoot: int = 0,
    outcome: Outcome = SILENT,
) -> Violation:
    return Violation(
        prop, regime(batch.cfg, batch.page).value, headline, details, overshoot, outcome, batch.cfg.kv_pool.variant
    )


def head(w: WriteEvent) -> str:
    return f"request {w.rid} (row {w.row}) wrote columns [{w.write.cur}, {w.write.nxt})"
