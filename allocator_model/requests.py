"""The requests of a running batch and what its steps report: states, row writes, releases.

A step is a small dict, ``{"op": ..., args}``: what the fuzzer draws, what a
case file stores, and what ``batch.RunningBatch.apply`` replays.  The step
parsing lives here too (``step_int``, ``step_accepted``), so a malformed case
file is refused with a one-line ``StepError`` before the batch is touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from fuzz.common.compat import StrEnum

from .allocator import FreeProblem
from .config import SpecRuntime
from .decode import Req, RowWrite, WritePath
from .req_to_token import GUARD

# SGLang's max_new_tokens when a request sets none; the admission clamp decides the real one.
UNLIMITED_NEW_TOKENS = 1 << 30


class Op(StrEnum):
    """A lifecycle step's ``"op"``: what a case file's step script says to do (a ``str`` enum: JSON as is)."""

    ADMIT = "admit"
    PREFILL = "prefill"
    DECODE = "decode"
    SET_NUM_STEPS = "set_num_steps"
    RETRACT = "retract"
    STOP = "stop"

    @classmethod
    def of(cls, step: object) -> Op | None:
        """The op of a step (None: not a step of a known op)."""
        op = step.get("op") if isinstance(step, Mapping) else None
        try:
            return cls(op) if isinstance(op, str) else None
        except ValueError:
            return None


OPS = tuple(Op)

Step = Mapping[str, Any]


class StepError(ValueError):
    """A step this batch cannot take in its present state (an invalid step script)."""


class RequestState(StrEnum):
    """Where a request is in its lifecycle."""

    WAITING = "waiting"  # admitted, no row (or given back by a retraction)
    PREFILLING = "prefilling"  # holds a row, part-way through a chunked prefill
    RUNNING = "running"  # prefilled: decoded batch after batch
    FINISHED = "finished"  # by length, by stop, or aborted at admission


class InFlight(StrEnum):
    """What an in-flight batch did for a request (overlap mode): its result adds tokens when processed."""

    PREFILL = "prefill"  # the last prefill chunk: its first sampled token
    DECODE = "decode"  # a verify: its accept run


@dataclass
class Request:
    """One request's lifecycle around its KV bookkeeping ``kv`` (a row and its lens, while it holds one)."""

    rid: int
    input_len: int
    max_new_tokens: int  # after the admission clamp
    output_len: int = 0  # tokens whose results the scheduler has processed
    fill_len: int = 0  # what a (re)prefill covers: the prompt, plus the outputs kept over a retraction
    state: RequestState = RequestState.WAITING
    kv: Req | None = None
    stop: bool = False  # an EOS comes with its next processed result
    finish_reason: str | None = None

    @property
    def row(self) -> int | None:
        return self.kv.req_pool_idx if self.kv else None

    @property
    def held(self) -> Req:
        """``kv`` of a request that holds a row (prefilling or running)."""
        if self.kv is None:
            raise StepError(f"request {self.rid} is {self.state} and holds no row")
        return self.kv


@dataclass
class WriteEvent:
    """One row write: who wrote, with which lengths, and the slot ids the kernel stored (column order)."""

    rid: int
    row: int
    write: RowWrite
    slots: torch.Tensor  # read back at the flat offsets right after the write
    committed_len: int  # the kv_committed_len the allocation used
    device_seq_len: int  # where the device stands when this batch runs
    draft_end: int  # exclusive end of what the draft and verify phases touch (prefill: nxt)
    runtime: SpecRuntime | None = None

    @property
    def is_decode(self) -> bool:
        return self.write.path is not WritePath.PREFILL

    @property
    def spec(self) -> bool:
        return self.write.path not in (WritePath.PREFILL, WritePath.NON_SPEC)

    def describe(self, row_owner: Mapping[int, int], width: int) -> str:
        w = self.write
        if w.path is WritePath.PREFILL:
            text = f"request {self.rid} (row {self.row}) prefill wrote columns [{w.cur}, {w.nxt})"
        else:
            lens = f"kv_committed_len {self.committed_len}, kv_allocated_len {w.cur} -> {w.nxt}"
            text = (
                f"request {self.rid} (row {self.row}) {w.path} decode: {lens}, reserve {w.reserve}, "
                f"allocator page {w.page}, device seq_len {self.device_seq_len}"
            )
            if w.refusal is not None:
                return f"{text}: refused: {w.refused}"
            text += f"; wrote columns [{w.cur}, {w.nxt})"
        if w.record and w.record.spills:
            where = "; ".join(
                _where(s.victim_row, row_owner) + f" columns [{s.col_start}, {s.col_end})" for s in w.record.spills
            )
            text += f" of a row {width} wide: {w.nxt - width} columns past its end landed in {where}"
        return text


@dataclass
class ReleaseEvent:
    """A request gave its row and KV back (finished or retracted)."""

    rid: int
    row: int
    kv_committed_len: int
    kv_allocated_len: int
    freed: int  # slots the clamped row slices handed to the allocator
    problems: list[FreeProblem]
    reason: str
    still_owned: list[int]  # pages the allocator still lists as the request's afterwards

    def describe(self, page: int) -> str:
        text = (
            f"request {self.rid} (row {self.row}) {self.reason}: freed the {self.freed} slots of columns "
            f"[0, {self.kv_allocated_len}) its row slice holds"
        )
        for p in self.problems:
            text += f"; {p.describe()}"
        if self.still_owned:
            text += f"; still owns pages {self.still_owned} (slots {_slot_ranges(self.still_owned, page)})"
        return text


@dataclass
class StepResult:
    step: dict[str, Any]
    writes: list[WriteEvent] = field(default_factory=list)
    releases: list[ReleaseEvent] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _where(row: int | str, row_owner: Mapping[int, int]) -> str:
    if isinstance(row, str):  # GUARD
        return GUARD
    owner = row_owner.get(row)
    return f"row {row} (request {owner})" if owner is not None else f"row {row} (free)"


def _slot_ranges(pages: list[int], page: int) -> str:
    return ", ".join(f"[{p * page}, {(p + 1) * page})" for p in pages)


def step_optional_int(step: Step, key: str, *, minimum: int = 0) -> int | None:
    """``step[key]``: None if absent or null, else an integer >= ``minimum`` (StepError otherwise)."""
    if step.get(key) is None:
        return None
    return step_int(step, key, minimum=minimum)


def step_int(step: Step, key: str, *, minimum: int = 0) -> int:
    """``step[key]``, an integer >= ``minimum`` (StepError otherwise)."""
    v = step.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise StepError(f"{step.get('op')}: {key} must be an integer, got {v!r}")
    if v < minimum:
        raise StepError(f"{step.get('op')}: {key} must be >= {minimum}, got {v}")
    return v


def step_accepted(step: Step) -> dict[int, int]:
    """A decode step's accept runs: ``accepted`` as [[rid, tokens], ...] -> {rid: tokens}."""
    pairs = step.get("accepted", [])
    ok = isinstance(pairs, list) and all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in p)
        for p in pairs
    )
    if not ok:
        raise StepError(f"decode: accepted must be a list of [rid, tokens] integer pairs, got {pairs!r}")
    return {rid: k for rid, k in pairs}
