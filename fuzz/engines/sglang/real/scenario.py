"""A decode scenario on SGLang's own write path: the real answer to the surface's ``decode_step`` entry.

``SGLangPath`` loads the target's own tree (its wheel, its checkout, the
installed package) through ``runtime`` once, lazily, and ``run`` plays a
``DecodeScenario`` the way ``allocator_model.scenario.run_scenario`` plays
it on the model, with SGLang's code doing every decode step:

* the same two requests on a real int32 ``req_to_token`` of the target's
  own row width (the subject in the row just above its neighbour's, guard
  rows below the last row), the release's own allocator class at the
  target's own allocator page (a pool whose own allocator does not load:
  the release's ``PagedTokenToKVPoolAllocator`` at that pool's page, and the
  run says "allocator substituted");
* the prefills and the verify (``kv_committed_len += accepted``) are the
  harness's (``runtime.checks.prefill``, ``runtime.verify``); every decode
  allocation is SGLang's entry point of the algorithm and release;
* after each step every row is compared with the tensor before it: what
  changed outside the writer's ``[row, cur:nxt)`` is a spill, and the
  columns a report names come from that diff, never from the model.

The result is the model's own ``ScenarioRun``, so the properties
(``fuzz.engines.sglang.decode.properties``) judge both paths with the same code; its
``sglang`` field keeps what only SGLang's run has (the functions entered,
its checker's verdict, the free slots, substitutions).
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field
from typing import Any

import torch

from allocator_model.decode import Refusal, Req, RowWrite, decode_alloc_ends, decode_reserve, draft_extent, write_path
from allocator_model.guards import Guard
from allocator_model.pools import KVPool
from allocator_model.req_to_token import GUARD, Spill, WriteRecord
from allocator_model.revisions import Revision
from allocator_model.scenario import NEIGHBOUR, SUBJECT, DecodeScenario, ScenarioRun, WriteObservation
from allocator_model.scheduler import decode_alloc_bound
from allocator_model.surface import Surface
from fuzz.targets.base import TargetError

GUARDS = {"eagle-tree-row": Guard.EAGLE_TREE_ROW, "uno-row": Guard.UNO_ROW}


@dataclass
class SGLangSteps:
    """What only a run on SGLang's code has, beside the ``ScenarioRun`` both paths share."""

    origin: str
    version: str
    entered: list[list[str]] = field(default_factory=list)  # per decode step: SGLang's functions, in order
    checker: list[str | None] = field(default_factory=list)  # per decode step: SGLang's invariant checker
    raised: str | None = None  # what SGLang's code raised in a step (neither a guard nor out of memory)
    free_slots: list[int] = field(default_factory=list)  # the allocator's available_size() after each step
    substituted: str | None = None  # the allocator standing in for a pool's own class
    slot_problem: str | None = None  # the first slot id a live row holds twice, or off its page (``_slot_problem``)

    def chain(self) -> str:
        steps = self.entered[-1] if self.entered else []
        return " -> ".join(steps) if steps else "(not traced)"


# Runtimes loaded in this process, by ``SGLangPath.key``: the commands of one process (a test session, the
# plugin's tests) on one tree share its load and what was built on it, until a file of the tree changes.
_LOADED: collections.OrderedDict[tuple[str, str], Any] = collections.OrderedDict()
MAX_LOADED = 4


class SGLangPath:
    """The target's own write path, loaded on first use (``runtime.SGLangRuntime``).

    Two paths are equal when their trees are the same files as they are now (``key``): what ran on the one (its
    runtime, the builds cached on it) is what would run on the other.  A runtime that remembers a failure is not
    handed to a later path: that path loads its own.
    """

    def __init__(self, source: str, version: str | None) -> None:
        self.source, self.version = source, version
        self._runtime: Any = None
        self._key: tuple[str, str] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """(source, the tree's ``fingerprint``), taken once: this path's tree as it was when first asked."""
        if self._key is None:
            from .runtime.tree import open_tree

            self._key = (self.source, open_tree(self.source).fingerprint())
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SGLangPath) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def runtime(self) -> Any:
        if self._runtime is None:
            self._runtime = _LOADED.get(self.key)
            if self._runtime is not None and self._runtime.remembers_failure():
                self._runtime = None  # a failure (a timeout) stays with the command that met it
            if self._runtime is None:
                from .runtime import SGLangRuntime

                self._runtime = SGLangRuntime.load(self.source)
                _LOADED[self.key] = self._runtime
                while len(_LOADED) > MAX_LOADED:
                    _LOADED.popitem(last=False)
            _LOADED.move_to_end(self.key)
        return self._runtime

    def run(
        self, s: DecodeScenario, sizing: Surface, revision: Revision, trace: bool = False, check: bool = False
    ) -> ScenarioRun:
        """``s`` on SGLang's code (the module docstring); ``trace`` records the functions entered per step,
        ``check`` runs SGLang's own invariant checker after each."""
        from .runtime import Rows, changed_outside, decode_step, verify
        from .runtime.checks import prefill

        rt_sglang = self.runtime
        cfg = s.config
        extra, width = sizing.req_to_token_extra_context_len(cfg), sizing.req_to_token_row_width(cfg)
        page = sizing.allocator_page_size(cfg)
        bound = decode_alloc_bound(cfg, revision)
        size = max(cfg.max_running_requests, 2)
        # Past the last row a write may run R + P columns: enough guard rows that it stays in the tensor.
        reach = decode_reserve(cfg, cfg.launch_runtime, sizing) + 2 * page + (cfg.max_speculative_num_draft_tokens or 0)
        rows = Rows(size, width, guard_rows=1 + math.ceil(reach * 2 / width))
        cap = cfg.kv_capacity() or 4 * (width + 2 * page)
        substituted = None
        if cfg.kv_pool is not KVPool.STANDARD:
            substituted = (
                f"the {cfg.kv_pool.value} pool's own allocator class needs its KV pool object (not executed): "
                f"sglang {rt_sglang.version}'s PagedTokenToKVPoolAllocator at its page {page} stands in"
            )
        allocator = rt_sglang.allocator(cfg, -(-cap // page) * page, page=page)
        neighbour, subject = (
            rt_sglang.request(size, 0, 0, rid=NEIGHBOUR),
            rt_sglang.request(size - 1, 0, 0, rid=SUBJECT),
        )
        owners = {size: NEIGHBOUR, size - 1: SUBJECT}
        run = ScenarioRun(cfg, width, extra, page, size - 1, size, [], sizing.alloc_page_size(cfg))
        steps = SGLangSteps(rt_sglang.origin, rt_sglang.version, substituted=substituted)
        run.sglang = steps
        try:
            prefill(rt_sglang, cfg, neighbour, rows, allocator, min(bound, page + 1))
            prefill(rt_sglang, cfg, subject, rows, allocator, s.start_len)
        except TargetError as e:
            if "out of memory" not in str(e):
                raise
            run.skipped = "out of memory at prefill"
            return run
        plan: list[tuple[str, Any, int | None, int]] = []
        if s.prior is not None:
            plan.append(("prior decode", s.runtime(s.prior.num_steps), s.prior.accepted, 0))
        plan.append(("decode", s.runtime(s.num_steps), None, s.device_lag))
        for label, rt, accepted, lag in plan:
            before, free = rows.snapshot(), int(allocator.available_size())
            result = decode_step(rt_sglang, cfg, rt, [subject], rows, allocator, trace=trace, check=check)
            steps.entered.append(result.entered)
            steps.checker.append(result.checker)
            steps.free_slots.append(int(allocator.available_size()))
            if result.raised is not None:
                if "out of memory" in result.raised.lower() or "not enough" in result.raised.lower():
                    run.skipped = f"out of memory on SGLang's path: {result.raised}"
                    return run
                if "must be a power of 2" in result.raised:  # triton's tl.arange, on a GPU as in the interpreter
                    run.skipped = (
                        f"sglang {rt_sglang.version}'s allocator kernel cannot run allocator page {page}: "
                        f"{result.raised} (tl.arange(0, page_size) needs a power of 2; nothing validates it)"
                    )
                    return run
                steps.raised = result.raised
                return run
            (outcome,) = result.requests
            after = rows.snapshot()
            cur, nxt = outcome.allocated_before, max(outcome.allocated_before, outcome.kv_allocated_len)
            w = RowWrite(
                SUBJECT, write_path(cfg.speculative_algorithm), decode_reserve(cfg, rt, sizing), page, cur, nxt
            )
            outside = [_spill(sp, size) for sp in changed_outside(before, after, result.windows)]
            if result.guard is not None:
                w.refuse(Refusal.GUARD, str(result.guard), GUARDS[result.guard.name])
                # Stopped before allocating: the end it would have reached is the target's own sizing's.
                (w.nxt,) = decode_alloc_ends(w.path, [(subject.committed, cur)], w.reserve, page, sizing, revision)
            else:
                w.record = _record(after, subject.pool_idx, cur, nxt, width, outside)
            # The length the allocation was made from (0.5.13-0.5.14's prepare pre-claims +1 after it, which
            # their verify takes back: ``runtime.verify``).
            committed = outcome.committed_before
            device = committed + lag
            run.writes.append(
                WriteObservation(
                    label,
                    Req(SUBJECT, subject.pool_idx, committed, subject.allocated),
                    w,
                    width,
                    owners,
                    outside,
                    committed,
                    device,
                    draft_extent(cfg, rt, device, page),
                    free - steps.free_slots[-1],
                )
            )
            steps.slot_problem = (
                steps.slot_problem or result.ownership or _slot_problem(rows, [neighbour, subject], page, allocator)
            )
            if result.guard is not None:
                return run
            if accepted:  # the prepare's own pre-claim of the bonus slot (0.5.13-0.5.14's EAGLE), taken back
                verify(rt_sglang, subject, accepted, preclaimed=outcome.kv_committed_len > outcome.committed_before)
        return run


def _slot_problem(rows: Any, reqs: list[Any], page: int, allocator: Any) -> str | None:
    """The first column of a live row whose slot id is another column's too, off its page's offset, or on a page
    the allocator still lists as free.

    SGLang's allocator hands out slots page by page, so a slot at column c sits at offset c mod P of its page
    (0.5.23 kernels/ops/memory/allocator.py ``alloc_extend_kernel``), and a page it handed out leaves its
    ``free_pages`` [cite: paged-alloc-extend-takes-pages] until freed back to them [cite: paged-release-page-ids]
    (nor is it in ``release_pages``, where the allocator keeps them).
    """
    free: set[int] = set()
    for name in ("free_pages", "release_pages"):
        pages = allocator.__dict__.get(name)  # the allocator's own lists, where its class keeps them
        if isinstance(pages, torch.Tensor):
            free.update(pages.tolist())
    seen: dict[int, tuple[int, int]] = {}
    for req in reqs:
        row, n = req.pool_idx, min(req.allocated, rows.width)
        for col, slot in enumerate(rows.req_to_token[row, :n].tolist()):
            if slot in seen:
                r, c = seen[slot]
                return f"slot {slot} stands at row {r} column {c} and at row {row} column {col}"
            seen[slot] = (row, col)
            if page > 1 and slot % page != col % page:
                return f"row {row} column {col} holds slot {slot}, at offset {slot % page} of its page of {page}"
            if slot // page in free:
                return f"row {row} column {col} holds slot {slot}, on page {slot // page} the allocator lists as free"
    return None


def _spill(span: Any, size: int) -> Spill:
    return Spill(span.row if span.row <= size else GUARD, span.start, span.end)


def _record(after: torch.Tensor, row: int, cur: int, nxt: int, width: int, outside: list[Spill]) -> WriteRecord:
    """The write of ``[cur, nxt)`` in ``row`` as the tensor shows it: the spills are what the diff found changed
    in other rows (never a prediction), and the slot ids stored at flat offsets ``row * W + col`` past W."""
    record = WriteRecord(row, cur, nxt, width)
    record.spills = [sp for sp in outside if sp.victim_row != row]
    if nxt > width:
        flat = after.flatten()
        record.slots_past_width = flat[row * width + max(cur, width) : row * width + nxt].tolist()
    return record
