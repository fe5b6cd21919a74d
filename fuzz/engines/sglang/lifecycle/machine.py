"""Stateful fuzzing of the request lifecycle: a Hypothesis ``RuleBasedStateMachine`` over a ``RunningBatch``.

One run draws one configuration, then rules: admit a request (prompts near
the admission limit, the scheduler's clamp), prefill it (at once or in
chunks), run decode batches (accept runs of 1..D, overlap's one-batch lag),
switch the adaptive step count, stop a request early, retract one.  Finishing
by length and the release that follows are the scheduler's own doing inside
those steps.  After every step the invariants of ``invariants`` are checked
on the whole pool.

A run ends at its first violation: from there on the state is corrupt.  The
campaign is the shared driver's (``fuzz.campaign``): rounds, a known group
halting its run quietly, seeds and the example database.  A finding carries
the run's step script, shrunk by Hypothesis and then shortened request by
request (``replay.shorten``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, reject
from hypothesis import settings as Settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from allocator_model.allocator import Unrunnable
from allocator_model.batch import RunningBatch
from allocator_model.config import ServingConfig
from allocator_model.requests import Op
from fuzz.campaign.driver import CampaignResult, Progress, Tracker, run_campaign, seeded
from fuzz.common.bounds import ReplayMeter
from fuzz.common.defaults import LIFECYCLE_STEPS
from fuzz.common.errors import BadInput
from fuzz.common.threads import one_torch_thread
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.groups import serving_config, sizing_raised
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding, Violation
from fuzz.targets.base import TargetCallError
from fuzz.verdict import PIPELINE
from strategies.lifecycle import lifecycle_configs, max_new_tokens_requests, prefill_chunks, prompt_lens

from .invariants import INVARIANTS, RowShadow, step_violations
from .replay import first_violation, shorten
from .script import LifecycleCase, lifecycle_finding

DEFAULT_STEPS = LIFECYCLE_STEPS


@dataclass
class LifecycleStats:
    """What a campaign counts: runs, steps, and how close decode allocations came to the scheduler's bound."""

    runs: int = 0  # runs that ended normally (what Hypothesis counts as examples; failing ones not included)
    started: int = 0  # runs that applied a step (Hypothesis discards some before the end: no enabled rule could run)
    steps: int = 0
    # max over runs of (longest kv_committed_len at a decode allocation - the scheduler's bound)
    committed_vs_bound: int | None = None

    def observe(self, batch: RunningBatch) -> None:
        seen = batch.max_committed_len_at_decode_alloc
        if seen is not None:
            gap = seen - batch.bound
            self.committed_vs_bound = gap if self.committed_vs_bound is None else max(self.committed_vs_bound, gap)


@dataclass
class Plan:
    """What every machine of one round shares."""

    target: SGLangTarget
    checks: tuple[Property, ...]
    configs: Any  # strategy of ServingConfig
    batch_class: type[RunningBatch]
    tracker: Tracker
    progress: Progress
    stats: LifecycleStats = field(default_factory=LifecycleStats)
    record: list[tuple[ServingConfig, list[dict[str, Any]]]] | None = None  # every run that ended normally
    own_allocator: bool = True  # the target's own allocator class (a real release's), not the model's


class LifecycleMachine(RuleBasedStateMachine):
    """Rules draw steps; ``_do`` applies one to the batch and checks the invariants on the whole pool."""

    def __init__(self, plan: Plan):
        super().__init__()
        self.plan = plan
        self.cfg: ServingConfig | None = None
        self.batch: RunningBatch | None = None
        self.steps: list[dict] = []
        self.halted = False
        self.meter: ReplayMeter | None = None  # the replay cost of the steps so far (``fuzz.common.bounds``)

    # -- plumbing -----------------------------------------------------------

    def _found(self, v: Violation) -> None:
        self.halted = True
        tracker = self.plan.tracker
        if tracker.is_known(v.signature):
            return  # a bug an earlier round reported: this run counts as passing
        assert self.cfg is not None
        tracker.fail(lifecycle_finding(self.plan.target.spec, v, self.cfg, list(self.steps), self.plan.stats.runs + 1))

    def _do(self, step: dict) -> None:
        assert self.meter is not None
        self.meter.step(step)
        if not self.meter.within():  # one step more and its case would not replay within the budget: stop here
            self.halted = True
            return
        if not self.steps:
            self.plan.stats.started += 1
        self.steps.append(step)
        self.plan.stats.steps += 1
        assert self.batch is not None and self.cfg is not None, "a step before the configuration was drawn"
        try:
            result = self.batch.apply(step)
        except TargetCallError as e:
            self._found(sizing_raised(self.cfg, e))
            return
        self.shadow.record(result)
        self.plan.stats.observe(self.batch)
        found = step_violations(self.batch, result, self.shadow, self.plan.checks)
        if found:
            case = LifecycleCase(self.cfg, self.steps, self.plan.batch_class)
            self._found(PIPELINE.attribute(self.plan.target, case, found[0]))

    def _live(self) -> bool:
        return self.batch is not None and not self.halted

    def teardown(self) -> None:
        if sys.exc_info()[0] is None:  # ended normally: neither discarded by Hypothesis nor failing
            self.plan.stats.runs += 1
            if self.plan.record is not None and self.cfg is not None:
                self.plan.record.append((self.cfg, list(self.steps)))
            self.plan.progress.tick(self.plan.tracker.groups)

    # -- rules --------------------------------------------------------------
    # A halted run keeps every rule enabled (and does nothing) so Hypothesis can always make progress.

    @initialize(data=st.data())
    def configure(self, data):
        self.cfg = data.draw(self.plan.configs, label="config")
        self.meter = ReplayMeter(self.cfg.to_dict())
        try:
            self.batch = self.plan.batch_class(
                self.cfg, self.plan.target.sizing, self.plan.target.revision, own_allocator=self.plan.own_allocator
            )
        except Unrunnable:
            reject()  # not a deployment the target's own allocator runs
        except TargetCallError as e:
            self._found(sizing_raised(self.cfg, e))
            return
        self.shadow = RowShadow(self.batch)
        # Built once per run: building strategies costs more than drawing from them.
        self.draws = (prompt_lens(self.cfg), max_new_tokens_requests(self.cfg), prefill_chunks(self.cfg))

    # Admission stops while as many requests wait as there are rows: more would only queue.
    @precondition(lambda self: not self._live() or len(self.batch.waiting()) < self.cfg.max_running_requests)
    @rule(data=st.data())
    def admit(self, data):
        if self._live():
            prompts, new_tokens, _ = self.draws
            self._do(
                {
                    "op": Op.ADMIT,
                    "input_len": data.draw(prompts, label="input_len"),
                    "max_new_tokens": data.draw(new_tokens, label="max_new_tokens"),
                }
            )

    @precondition(lambda self: not self._live() or self.batch.prefillable())
    @rule(data=st.data())
    def prefill(self, data):
        if self._live():
            rid = _pick(data, self.batch.prefillable(), "rid")
            self._do({"op": Op.PREFILL, "rid": rid, "chunk": data.draw(self.draws[2], label="chunk")})

    @precondition(lambda self: not self._live() or self.batch.in_flight or self.batch.decode_members())
    @rule(data=st.data())
    def decode(self, data):
        if self._live():
            most = self.batch.max_accept()
            accepted = [
                [r.rid, 1 + _pick(data, range(most), f"accepted[{r.rid}] - 1") if most > 1 else 1]
                for r in self.batch.decode_members()
            ]
            self._do({"op": Op.DECODE, "accepted": accepted})

    @precondition(lambda self: not self._live() or self.batch.adaptive_steps())
    @rule(data=st.data())
    def set_num_steps(self, data):
        if self._live():
            self._do({"op": Op.SET_NUM_STEPS, "num_steps": _pick(data, self.batch.adaptive_steps(), "num_steps")})

    @precondition(lambda self: not self._live() or self.batch.holders())
    @rule(data=st.data())
    def retract(self, data):
        if self._live():
            self._do({"op": Op.RETRACT, "rid": _pick(data, [r.rid for r in self.batch.holders()], "rid")})

    @precondition(lambda self: not self._live() or self.batch.running_requests())
    @rule(data=st.data())
    def stop(self, data):
        if self._live():
            self._do({"op": Op.STOP, "rid": _pick(data, self.batch.running_requests(), "rid")})


_INDEXES: dict[int, st.SearchStrategy[int]] = {}


def _pick(data, items, label: str):
    """One of ``items``, by an index strategy cached per length (building strategies is what costs)."""
    n = len(items)
    if n not in _INDEXES:
        _INDEXES[n] = st.integers(0, n - 1)
    return items[data.draw(_INDEXES[n], label=label)]


# -- the campaign ---------------------------------------------------------------


class LifecycleHunt:
    """The lifecycle as a ``Hunt``: one state machine per run, over a shared ``Plan``."""

    name = "lifecycle"

    def __init__(
        self,
        target: SGLangTarget,
        *,
        steps: int,
        checks: Sequence[Property],
        configs: Any,
        batch_class: type[RunningBatch],
        record: list[Any] | None,
        own_allocator: bool = True,
    ):
        self.target, self.steps, self.checks = target, steps, tuple(checks)
        self.configs, self.batch_class, self.record = configs, batch_class, record
        self.own_allocator = own_allocator
        self.counts = LifecycleStats()

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        plan = Plan(
            self.target,
            self.checks,
            self.configs,
            self.batch_class,
            tracker,
            progress,
            self.counts,
            self.record,
            self.own_allocator,
        )
        # No explain phase: it replays a shrunk run hundreds of times for notes a step script does not need.
        # Long runs are what --steps asks for (the replay budget stops each in time): not a health problem.
        # Discarded runs are Hypothesis' swarm testing: each run enables a subset of the rules, and a subset whose
        # preconditions all fail where the run stands (decode and stop before any admission) ends it at once.
        # Every configuration is drawn runnable (``lifecycle_configs``); a round where no run got through still
        # fails (Hypothesis' Unsatisfiable), and the stats count the runs that did.
        run_settings = Settings(
            settings,
            stateful_step_count=self.steps,
            phases=[p for p in settings.phases if p != Phase.explain],
            suppress_health_check=[
                *settings.suppress_health_check,
                HealthCheck.large_base_example,
                HealthCheck.filter_too_much,
            ],
        )

        def machine() -> LifecycleMachine:
            return LifecycleMachine(plan)

        factory = seeded(machine, seed)
        return lambda: run_state_machine_as_test(factory, settings=run_settings)

    def cover(self, tracker: Tracker, progress: Progress) -> list[Finding]:
        return []  # the lifecycle searches from its first run

    def finish(self, f: Finding) -> Finding:
        """The finding with its step script shortened, and the violation as the short script shows it."""
        steps = shorten(self.target, serving_config(f), f.case["steps"], f.signature, self.checks, self.batch_class)
        _, v = first_violation(self.target, serving_config(f), steps, self.checks, self.batch_class)
        if v is None or v.signature != f.signature:
            return f
        return lifecycle_finding(f.target, v, serving_config(f), steps, f.found_at)

    def stats(self) -> dict[str, Any]:
        s = self.counts
        return {
            "kind": SGLangCase.LIFECYCLE.value,
            "runs": s.runs,
            "runs_started": s.started,
            "steps": s.steps,
            "max_committed_len_minus_bound": s.committed_vs_bound,
        }


def lifecycle_hunt(
    target: SGLangTarget,
    *,
    steps: int = DEFAULT_STEPS,
    checks: Sequence[Property] = INVARIANTS,
    configs: Any = None,
    batch_class: type[RunningBatch] = RunningBatch,
    record: list[Any] | None = None,
    pins: dict[str, Any] | None = None,
    own_allocator: bool = True,
) -> LifecycleHunt:
    """The lifecycle's hunt on ``target`` (``Engine.lifecycle_hunt``): state machines of up to ``steps`` steps.

    ``own_allocator``: a real target allocates and frees through its release's own allocator class where its
    write path runs (``Surface.kv_allocator``); False: the model's.

    ``configs`` replaces the configuration strategy (tests pin one config);
    ``batch_class`` replaces the model (tests plant bugs in it); ``record``
    collects the (config, steps) of every run that ended normally.
    """
    if configs is None:
        pages = target.sizing.kv_allocator_takes if own_allocator else None
        if pages is not None and pins:
            _allocator_runs_the_pins(target, pins, pages)
        configs = lifecycle_configs(target.revision.algorithms, pins, target.revision, pages)
    return LifecycleHunt(
        target,
        steps=steps,
        checks=checks,
        configs=configs,
        batch_class=batch_class,
        record=record,
        own_allocator=own_allocator,
    )


def _allocator_runs_the_pins(target: SGLangTarget, pins: dict[str, Any], takes: Callable[[int], bool]) -> None:
    """BadInput where no allocator page the pinned fields allow is one the target's own allocator runs: every draw
    would be one it cannot run (its kernel takes powers of 2: page_size, times attn_dcp_size on a paged pool)."""
    from allocator_model.pools import KVPool, pool_alloc_page
    from strategies.space import PAGE_SIZES

    kinds = [KVPool(pins["kv_pool"])] if "kv_pool" in pins else list(target.revision.pools)
    pages = [int(pins["page_size"])] if "page_size" in pins else list(PAGE_SIZES)
    dcps = [int(pins["attn_dcp_size"])] if "attn_dcp_size" in pins else [1]
    if not any(takes(pool_alloc_page(k, p, d)) for k in kinds for p in pages for d in dcps):
        raise BadInput(
            f"{target.spec}'s own allocator runs no allocator page these pins give (its kernel takes powers of 2; "
            "--write-path model runs the lifecycle on the model's allocator)"
        )


def lifecycle_campaign(
    target: SGLangTarget,
    hyp_settings: Settings,
    *,
    steps: int = DEFAULT_STEPS,
    checks: Sequence[Property] = INVARIANTS,
    configs: Any = None,
    batch_class: type[RunningBatch] = RunningBatch,
    record: list[Any] | None = None,
    pins: dict[str, Any] | None = None,
    own_allocator: bool = True,
    **driver: Any,
) -> CampaignResult:
    """Run state machines against ``target`` until a round finds nothing new: ``lifecycle_hunt`` under the shared
    driver (``driver``: the keywords of ``fuzz.campaign.driver.run_campaign``: seed, max_rounds, on_progress,
    progress_every, on_finding), as ``lifecycle`` runs it."""
    hunt = lifecycle_hunt(
        target,
        steps=steps,
        checks=checks,
        configs=configs,
        batch_class=batch_class,
        record=record,
        pins=pins,
        own_allocator=own_allocator,
    )
    with one_torch_thread():
        return run_campaign(target, hunt, hyp_settings, **driver)


def lifecycle_lines(result: CampaignResult) -> list[str]:
    """Runs, steps, and the longest kv_committed_len a decode allocation reached against the scheduler's bound
    (``Engine.campaign_lines``)."""
    s = result.stats
    gap = s.get("max_committed_len_minus_bound")
    rate = s.get("steps", 0) / max(result.seconds, 1e-9)
    return [
        f"{result.examples} runs, {s.get('steps', 0)} steps, {rate:.0f} steps/s; longest "
        f"kv_committed_len at a decode allocation: "
        + ("none" if gap is None else f"the scheduler's bound {'+' if gap >= 0 else '-'} {abs(gap)}")
    ]
