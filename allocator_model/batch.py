"""The running batch: one scheduler's request lifecycle over a shared req_to_token pool and KV allocator.

Requests are admitted with the scheduler's clamp, prefilled (at once or in
chunks), decoded batch after batch (speculative or not), retracted under
memory pressure and released when they finish.  Every row write goes through
the unchecked flat-offset kernel (``ReqToTokenPool.write``) and every release
frees the clamped slice (``ReqToTokenPool.read``): a write past a row really
lands in the neighbour's row, and the slots written there leak, as in SGLang.

Overlap mode is a one-batch pipeline: the scheduler allocates and launches
batch N+1 before it processes batch N's results.  A request whose batch is
still in flight joins the next decode batch as if that batch had already
added its one sure token (``scheduler.allocates_next_batch`` and
``committed_len_at_alloc`` with ``overlap=True``), while the device is up to
one accept run ahead of the scheduler's kv_committed_len.  Which requests
join a batch and the length they allocate with come from ``scheduler``;
nothing here bounds a length by a constant of its own.

A step is a small dict, ``{"op": ..., args}``: what the fuzzer draws, what a
case file stores, and what ``RunningBatch.apply`` replays.  The requests and
the events a step reports are in ``requests``; the page-owning allocator is
``allocator.OwnershipAllocator`` (both re-exported here under their old names).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from .allocator import FREE, OwnershipAllocator
from .config import ServingConfig, SpecRuntime, adaptive_runtime
from .decode import Refusal, Req, RowWrite, commit, decode_reserve, draft_extent, prefill, prepare_for_decode
from .numeric import ceil_to_page
from .req_to_token import ReqToTokenPool
from .requests import (
    OPS,
    UNLIMITED_NEW_TOKENS,
    InFlight,
    Op,
    ReleaseEvent,
    Request,
    RequestState,
    Step,
    StepError,
    StepResult,
    WriteEvent,
    step_accepted,
    step_int,
    step_optional_int,
)
from .revisions import Revision
from .scheduler import (
    allocates_next_batch,
    clamp_max_new_tokens,
    committed_len_at_alloc,
    decode_alloc_bound,
    is_finished,
    max_prompt_len,
)
from .surface import Surface

__all__ = [
    "FREE",
    "OPS",
    "UNLIMITED_NEW_TOKENS",
    "InFlight",
    "OwnershipAllocator",
    "ReleaseEvent",
    "Request",
    "RequestState",
    "RunningBatch",
    "StepError",
    "StepResult",
    "WriteEvent",
]

WAITING, PREFILLING, RUNNING, FINISHED = RequestState  # the old names of the states
PREFILL, DECODE = InFlight


class RunningBatch:
    """The scheduler's requests, one req_to_token pool of max_running_requests rows, one paged allocator."""

    allocator_class = OwnershipAllocator

    def __init__(self, cfg: ServingConfig, sizing: Surface, revision: Revision, *, own_allocator: bool = True) -> None:
        """``own_allocator``: the target's own allocator class (``Surface.kv_allocator``); False: the model's."""
        self.cfg, self.sizing, self.revision = cfg, sizing, revision
        self.page = sizing.allocator_page_size(cfg)
        self.extra = sizing.req_to_token_extra_context_len(cfg)
        self.width = sizing.req_to_token_row_width(cfg)
        self.bound = decode_alloc_bound(cfg, revision)
        worst_end = self._worst_write_end()
        rows = cfg.max_running_requests
        # Guard rows stand for the memory after the tensor: a runaway write is observed, not lost.
        self.pool = ReqToTokenPool(rows, self.width, guard_rows=1 + worst_end // self.width)
        # The scheduler's KV budget if set, else enough for every row at its worst.
        capacity = cfg.kv_capacity() or rows * (worst_end + self.page)
        if own_allocator and type(self).allocator_class is OwnershipAllocator:  # the target's own (or the model's)
            self.allocator = sizing.kv_allocator(cfg, capacity, self.page)
        else:  # a test's planted allocator
            self.allocator = self.allocator_class(capacity, self.page)
        self.requests: dict[int, Request] = {}
        self.running: list[int] = []  # batch order: the order requests finished their prefill
        self.in_flight: dict[int, tuple[InFlight, int]] = {}  # overlap: rid -> (what, tokens it adds)
        self.runtime = cfg.launch_runtime
        self.max_committed_len_at_decode_alloc: int | None = None  # observed, over every decode allocation

    def _worst_write_end(self) -> int:
        """The furthest column any allocation may reach: the bound plus the largest reserve, page-rounded."""
        reserve = max(decode_reserve(self.cfg, rt, self.sizing) for rt in self.cfg.runtimes())
        return max(self.width, ceil_to_page(self.bound + reserve, self.page) + self.page)

    # -- queries ------------------------------------------------------------

    def holders(self) -> list[Request]:
        """Requests that hold a row (prefilling or running), by rid."""
        return [r for r in self.requests.values() if r.kv is not None]

    def row_owner(self) -> dict[int, int]:
        return {r.held.req_pool_idx: r.rid for r in self.holders()}

    def waiting(self) -> list[int]:
        """Requests admitted but not yet running: waiting for a row, or part-way through a chunked prefill."""
        return [r.rid for r in self.requests.values() if r.state in (RequestState.WAITING, RequestState.PREFILLING)]

    def prefillable(self) -> list[int]:
        """Requests a prefill can take now: chunked ones holding a row, waiting ones if a row is free."""
        row_free = bool(self.pool.free_slots)
        return [
            r.rid
            for r in self.requests.values()
            if r.state is RequestState.PREFILLING or (r.state is RequestState.WAITING and row_free)
        ]

    def running_requests(self) -> list[int]:
        return list(self.running)

    def decode_members(self) -> list[Request]:
        """The running requests the next decode batch allocates for (scheduler rules 3 and overlap)."""
        out = []
        for rid in self.running:
            r = self.requests[rid]
            if allocates_next_batch(
                r.output_len,
                r.max_new_tokens,
                overlap=rid in self.in_flight,
                drops_finishing=self.revision.overlap_drops_finishing,
            ):
                out.append(r)
        return out

    def max_accept(self) -> int:
        """The longest accept run a verify of the current shape may report (1 without speculation)."""
        return self.runtime.num_draft_tokens if self.runtime else 1

    def adaptive_steps(self) -> tuple[int, ...]:
        return self.cfg.candidate_steps

    # -- steps --------------------------------------------------------------

    def apply(self, step: Step) -> StepResult:
        """Run one step (a dict from the fuzzer or a case file); StepError if it cannot be taken now."""
        if not isinstance(step, Mapping):
            raise StepError(f"a step must be an object with an op, got {step!r}")
        op = Op.of(step)
        if op is Op.ADMIT:
            return self.admit(step_int(step, "input_len", minimum=1), step_int(step, "max_new_tokens"))
        if op is Op.PREFILL:
            return self.prefill(step_int(step, "rid"), step_optional_int(step, "chunk", minimum=1))
        if op is Op.DECODE:
            return self.decode(step_accepted(step))
        if op is Op.SET_NUM_STEPS:
            return self.set_num_steps(step_int(step, "num_steps"))
        if op is Op.RETRACT:
            return self.retract(step_int(step, "rid"))
        if op is Op.STOP:
            return self.stop(step_int(step, "rid"))
        raise StepError(f"unknown op {step.get('op')!r:.80} (known: {', '.join(OPS)})")

    def admit(self, input_len: int, max_new_tokens: int) -> StepResult:
        """A new request; max_new_tokens clamped (rule 1); a prompt past the limit is aborted at once."""
        result = StepResult({"op": Op.ADMIT, "input_len": input_len, "max_new_tokens": max_new_tokens})
        rid = len(self.requests)
        clamped = clamp_max_new_tokens(self.cfg, input_len, max_new_tokens, self.revision.memory_clamp, self.page)
        r = Request(rid, input_len, clamped, fill_len=input_len)
        self.requests[rid] = r
        if input_len > max_prompt_len(self.cfg):  # SGLang aborts a prompt of max_req_input_len tokens or more
            r.state, r.finish_reason = RequestState.FINISHED, "aborted: prompt past the admission limit"
            result.notes.append(f"request {rid}: input_len {input_len} > {max_prompt_len(self.cfg)}: aborted")
        else:
            result.notes.append(f"request {rid}: input_len {input_len}, max_new_tokens {max_new_tokens} -> {clamped}")
        return result

    def prefill(self, rid: int, chunk: int | None) -> StepResult:
        """Extend one waiting request by ``chunk`` tokens (None: the rest); the last chunk samples a token."""
        result = StepResult({"op": Op.PREFILL, "rid": rid, "chunk": chunk})
        r = self._request(rid, (RequestState.WAITING, RequestState.PREFILLING), "prefill")
        if r.kv is None:
            row = self.pool.alloc()
            if row is None:
                result.notes.append(f"request {rid}: no free row; stays waiting")
                return result
            r.kv, r.state = Req(rid, row), RequestState.PREFILLING
        kv = r.held
        start = kv.kv_allocated_len
        end = r.fill_len if chunk is None else min(r.fill_len, start + chunk)
        w = prefill(self.pool, self.allocator, kv, end)
        if w.refusal is not None:
            if start == 0:  # nothing of it is in the pool yet: give the row back
                self.pool.free(kv.req_pool_idx)
                r.kv, r.state = None, RequestState.WAITING
            result.notes.append(f"request {rid}: {w.refused}; stays waiting")
            return result
        result.writes.append(self._event(r, w, end, end, end, None))
        if end == r.fill_len:
            r.state = RequestState.RUNNING
            self.running.append(rid)
            self._launch(result, {rid: (InFlight.PREFILL, 1)})
        else:
            self._launch(result, {})
        return result

    def decode(self, accepted: Mapping[int, int]) -> StepResult:
        """One decode batch: allocate for its members, launch it (each verify accepts ``accepted[rid]``, default 1).

        Out of memory at a request's allocation retracts that request, as the
        scheduler does before a batch it cannot fit.
        """
        members = self.decode_members()
        result = StepResult({"op": Op.DECODE, "accepted": [[r.rid, accepted.get(r.rid, 1)] for r in members]})
        ids = {r.rid for r in members}
        for rid, k in accepted.items():
            if rid not in ids:
                raise StepError(f"decode: request {rid} is not in this decode batch (members: {sorted(ids)})")
            if not 1 <= k <= self.max_accept():
                raise StepError(f"decode: request {rid} accepts {k} tokens, outside [1, {self.max_accept()}]")
        if not members and not self.in_flight:
            raise StepError("decode: no request to decode and no batch in flight")
        rt = self.runtime
        launched: dict[int, tuple[InFlight, int]] = {}
        for r in members:
            flight = self.in_flight.get(r.rid)
            c_alloc = committed_len_at_alloc(
                r.input_len,
                r.output_len,
                overlap=flight is not None,
                counts_in_flight=self.revision.overlap_counts_in_flight or not self.cfg.spec_on,
            )
            device = r.held.kv_committed_len + (flight[1] if flight and flight[0] is InFlight.DECODE else 0)
            w = prepare_for_decode(
                self.pool, self.allocator, r.held, self.cfg, rt, self.sizing, self.revision, committed_len=c_alloc
            )
            if w.refusal is Refusal.OUT_OF_MEMORY:
                result.notes.append(f"request {r.rid}: {w.refused}: retracted")
                self._retract(result, r, "retracted (out of memory)")
                continue
            seen = self.max_committed_len_at_decode_alloc
            self.max_committed_len_at_decode_alloc = c_alloc if seen is None else max(seen, c_alloc)
            result.writes.append(self._event(r, w, c_alloc, device, draft_extent(self.cfg, rt, device, self.page), rt))
            if w.refusal is None:
                launched[r.rid] = (InFlight.DECODE, accepted.get(r.rid, 1))
        self._launch(result, launched)
        return result

    def set_num_steps(self, num_steps: int) -> StepResult:
        """Adaptive speculative decoding switches S (and D = S + 1) for the batches that follow."""
        if num_steps not in self.adaptive_steps():
            raise StepError(f"set_num_steps: {num_steps} is not an adaptive candidate {list(self.adaptive_steps())}")
        self.runtime = adaptive_runtime(num_steps)
        return StepResult({"op": Op.SET_NUM_STEPS, "num_steps": num_steps}, notes=[f"num_steps {num_steps}"])

    def retract(self, rid: int) -> StepResult:
        """Take a request that holds a row back to the waiting queue; it keeps its outputs and re-prefills them."""
        result = StepResult({"op": Op.RETRACT, "rid": rid})
        self._retract(
            result, self._request(rid, (RequestState.PREFILLING, RequestState.RUNNING), "retract"), "retracted"
        )
        return result

    def stop(self, rid: int) -> StepResult:
        """The request's next processed result carries an EOS: it finishes then, before its max_new_tokens."""
        r = self._request(rid, (RequestState.RUNNING,), "stop")
        r.stop = True
        return StepResult({"op": Op.STOP, "rid": rid}, notes=[f"request {rid}: EOS with its next result"])

    # -- the pipeline -------------------------------------------------------

    def _request(self, rid: int, states: tuple[RequestState, ...], op: str) -> Request:
        r = self.requests.get(rid)
        if r is None:
            raise StepError(f"{op}: no request {rid}")
        if r.state not in states:
            raise StepError(f"{op}: request {rid} is {r.state}, not {' or '.join(states)}")
        return r

    def _event(
        self, r: Request, w: RowWrite, c_alloc: int, device: int, draft_end: int, rt: SpecRuntime | None
    ) -> WriteEvent:
        width, row = self.width, r.held.req_pool_idx
        flat = self.pool.storage[row * width + w.cur : row * width + w.nxt].clone() if w.record else torch.empty(0)
        return WriteEvent(r.rid, row, w, flat, c_alloc, device, draft_end, rt)

    def _launch(self, result: StepResult, batch: dict[int, tuple[InFlight, int]]) -> None:
        """Overlap: launch ``batch``, then process the one in flight; otherwise run and process ``batch``."""
        if self.cfg.enable_overlap:
            previous, self.in_flight = self.in_flight, batch
            self._process(result, previous)
        else:
            self._process(result, batch)

    def _process(self, result: StepResult, batch: dict[int, tuple[InFlight, int]]) -> None:
        """Results: a prefill adds its first token; a verify commits its accept run; finished requests go."""
        for rid, (what, tokens) in batch.items():
            r = self.requests[rid]
            if r.state is not RequestState.RUNNING:
                continue  # retracted or finished since: its result is dropped
            if what is InFlight.DECODE:
                commit(r.held, tokens)
            r.output_len += tokens
            if r.stop or is_finished(r.output_len, r.max_new_tokens):
                reason = "finished (stop)" if r.stop else f"finished (length {r.output_len} >= {r.max_new_tokens})"
                self._release(result, r, reason)
                r.state, r.finish_reason = RequestState.FINISHED, reason

    def _retract(self, result: StepResult, r: Request, reason: str) -> None:
        self._release(result, r, reason)
        r.state, r.fill_len, r.stop = RequestState.WAITING, r.input_len + r.output_len, False

    def overallocated_start(self, kv_committed_len: int) -> int:
        """Where the free of the over-allocated tail starts: kv_committed_len rounded up to the allocator page.

        The committed part's free already released the page holding its last
        slot; starting the tail at an unaligned column would free that page again.
        """
        return ceil_to_page(kv_committed_len, self.page)

    def _release(self, result: StepResult, r: Request, reason: str) -> None:
        """Give the row and its KV back: the committed columns, then the over-allocated tail.

        Both frees read the row through the slice that clamps at the row
        width, so slots a write put past the width are never handed back.
        """
        row, c, a = r.held.req_pool_idx, r.held.kv_committed_len, r.held.kv_allocated_len
        committed = self.pool.read(row, 0, min(c, a))
        tail = self.pool.read(row, self.overallocated_start(c), a)
        problems = self.allocator.free(committed, r.rid) + self.allocator.free(tail, r.rid)
        self.pool.free(row)
        self.in_flight.pop(r.rid, None)
        if r.rid in self.running:
            self.running.remove(r.rid)
        r.kv = None
        result.releases.append(
            ReleaseEvent(r.rid, row, c, a, len(committed) + len(tail), problems, reason, self.allocator.pages_of(r.rid))
        )
