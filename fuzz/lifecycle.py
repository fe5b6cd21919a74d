"""Stateful fuzzing of the request lifecycle: a Hypothesis ``RuleBasedStateMachine`` over a ``RunningBatch``.

One run draws one configuration, then rules: admit a request (prompts near
the admission limit, the scheduler's clamp), prefill it (at once or in
chunks), run decode batches (accept runs of 1..D, overlap's one-batch lag),
switch the adaptive step count, stop a request early, retract one.  Finishing
by length and the release that follows are the scheduler's own doing inside
those steps.  After every step the invariants of ``lifecycle_invariants``
are checked on the whole pool.

A run ends at its first violation: from there on the state is corrupt.  As
in the decode campaign, a campaign runs in rounds, and a violation whose
signature an earlier round found halts its run quietly, so each round hunts
for a new one.  A failure carries the run's step script (shrunk by
Hypothesis); a case file of kind ``lifecycle`` stores it with the
configuration, and ``python -m fuzz repro`` replays it step by step.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from hypothesis import Phase, settings as Settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from allocator_model.allocator import allocator_page_size
from allocator_model.batch import RunningBatch, StepError, StepResult
from allocator_model.config import ConfigError, ServingConfig
from strategies.lifecycle import lifecycle_configs, max_new_tokens_requests, prefill_chunks, prompt_lens

from . import casefile
from .harness import MAX_ROUNDS, SIZING_RAISED, CampaignResult, Finding, Progress, hunt_in_rounds
from .lifecycle_invariants import INVARIANTS, RowShadow, step_violations
from .properties import Violation, regime
from .targets import Target, TargetCallError, TargetError, resolve_target

LIFECYCLE = "lifecycle"
DEFAULT_STEPS = 50  # Hypothesis' own stateful_step_count default
# State-machine runs per round by profile (each up to DEFAULT_STEPS steps).
RUNS = {"ci": 100, "dev": 500, "nightly": 2000}


class LifecycleFailed(AssertionError):
    """A run broke an invariant; subclassed per signature so Hypothesis shrinks each bug on its own."""

    def __init__(self, violation: Violation, config: ServingConfig, steps: list[dict]):
        super().__init__(violation.describe())
        self.violation, self.config, self.steps = violation, config, steps


_CLASSES: dict[str, type[LifecycleFailed]] = {}


def failure_class(signature: str) -> type[LifecycleFailed]:
    if signature not in _CLASSES:
        _CLASSES[signature] = type(f"LifecycleFailed[{signature}]", (LifecycleFailed,), {})
    return _CLASSES[signature]


def sizing_raised(cfg: ServingConfig, error: Exception) -> Violation:
    return Violation(SIZING_RAISED, regime(cfg, allocator_page_size(cfg)), str(error), [f"config: {cfg.short()}"])


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

    target: Target
    checks: tuple[str, ...]
    configs: Any  # strategy of ServingConfig
    batch_class: type[RunningBatch]
    known: set[str] = field(default_factory=set)
    stats: LifecycleStats = field(default_factory=LifecycleStats)
    latest: dict[str, "LifecycleFailure"] = field(default_factory=dict)  # newest failure per new signature
    on_run: Callable[[], None] | None = None
    record: list | None = None  # (config, steps) of every run that ended normally, if a list


class LifecycleMachine(RuleBasedStateMachine):
    """Rules draw steps; ``_do`` applies one to the batch and checks the invariants on the whole pool."""

    def __init__(self, plan: Plan):
        super().__init__()
        self.plan = plan
        self.cfg: ServingConfig | None = None
        self.batch: RunningBatch | None = None
        self.steps: list[dict] = []
        self.halted = False

    # -- plumbing -----------------------------------------------------------

    def _found(self, v: Violation) -> None:
        self.halted = True
        if v.signature in self.plan.known:
            return  # a bug an earlier round reported: this run counts as passing
        stats = self.plan.stats
        prior = self.plan.latest.get(v.signature)
        at = prior.found_at if prior else stats.runs + 1
        self.plan.latest[v.signature] = LifecycleFailure(self.plan.target.spec, v, self.cfg, list(self.steps), at)
        raise failure_class(v.signature)(v, self.cfg, list(self.steps))

    def _do(self, step: dict) -> None:
        if not self.steps:
            self.plan.stats.started += 1
        self.steps.append(step)
        self.plan.stats.steps += 1
        try:
            result = self.batch.apply(step)
        except TargetCallError as e:
            self._found(sizing_raised(self.cfg, e))
            return
        self.shadow.record(result)
        self.plan.stats.observe(self.batch)
        found = step_violations(self.batch, result, self.shadow, self.plan.checks)
        if found:
            self._found(found[0])

    def _live(self) -> bool:
        return self.batch is not None and not self.halted

    def teardown(self) -> None:
        if sys.exc_info()[0] is None:  # ended normally: neither discarded by Hypothesis nor failing
            self.plan.stats.runs += 1
            if self.plan.record is not None and self.cfg is not None:
                self.plan.record.append((self.cfg, list(self.steps)))
            if self.plan.on_run:
                self.plan.on_run()

    # -- rules --------------------------------------------------------------
    # A halted run keeps every rule enabled (and does nothing) so Hypothesis can always make progress.

    @initialize(data=st.data())
    def configure(self, data):
        self.cfg = data.draw(self.plan.configs, label="config")
        try:
            self.batch = self.plan.batch_class(self.cfg, self.plan.target.sizing, self.plan.target.revision)
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
            self._do({"op": "admit", "input_len": data.draw(prompts, label="input_len"),
                      "max_new_tokens": data.draw(new_tokens, label="max_new_tokens")})

    @precondition(lambda self: not self._live() or self.batch.prefillable())
    @rule(data=st.data())
    def prefill(self, data):
        if self._live():
            rid = _pick(data, self.batch.prefillable(), "rid")
            self._do({"op": "prefill", "rid": rid, "chunk": data.draw(self.draws[2], label="chunk")})

    @precondition(lambda self: not self._live() or self.batch.in_flight or self.batch.decode_members())
    @rule(data=st.data())
    def decode(self, data):
        if self._live():
            most = self.batch.max_accept()
            accepted = [[r.rid, 1 + _pick(data, range(most), f"accepted[{r.rid}] - 1") if most > 1 else 1]
                        for r in self.batch.decode_members()]
            self._do({"op": "decode", "accepted": accepted})

    @precondition(lambda self: not self._live() or self.batch.adaptive_steps())
    @rule(data=st.data())
    def set_num_steps(self, data):
        if self._live():
            self._do({"op": "set_num_steps", "num_steps": _pick(data, self.batch.adaptive_steps(), "num_steps")})

    @precondition(lambda self: not self._live() or self.batch.holders())
    @rule(data=st.data())
    def retract(self, data):
        if self._live():
            self._do({"op": "retract", "rid": _pick(data, [r.rid for r in self.batch.holders()], "rid")})

    @precondition(lambda self: not self._live() or self.batch.running_requests())
    @rule(data=st.data())
    def stop(self, data):
        if self._live():
            self._do({"op": "stop", "rid": _pick(data, self.batch.running_requests(), "rid")})


_INDEXES: dict[int, st.SearchStrategy[int]] = {}


def _pick(data, items, label: str):
    """One of ``items``, by an index strategy cached per length (building strategies is what costs)."""
    n = len(items)
    if n not in _INDEXES:
        _INDEXES[n] = st.integers(0, n - 1)
    return items[data.draw(_INDEXES[n], label=label)]


# -- the campaign ---------------------------------------------------------------


@dataclass
class LifecycleFailure(Finding):
    """A step script after which an invariant breaks."""

    target: str
    violation: Violation
    config: ServingConfig
    steps: list[dict]
    found_at: int = 0  # which run (counting the runs that ended normally) first hit the group
    case_path: str | None = None

    def case_json(self) -> dict:
        return {"steps": self.steps}


@dataclass
class LifecycleResult(CampaignResult):
    started: int = 0  # runs that applied a step, discarded and failing ones included (``examples``: ended normally)
    steps: int = 0  # state-machine steps applied, all rounds
    committed_vs_bound: int | None = None

    @property
    def steps_per_second(self) -> float:
        return self.steps / max(self.seconds, 1e-9)

    def to_json(self) -> dict:
        d = super().to_json()
        d.update(kind=LIFECYCLE, runs=self.examples, runs_started=self.started, steps=self.steps, steps_per_second=round(self.steps_per_second, 1),
                 max_committed_len_minus_bound=self.committed_vs_bound)
        return d


@contextmanager
def one_torch_thread():
    """The pool's tensors are small: a second torch thread only spin-waits, badly so on a shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@one_torch_thread()
def lifecycle_campaign(
    target: Target,
    hyp_settings: Settings,
    *,
    steps: int = DEFAULT_STEPS,
    checks: tuple[str, ...] = INVARIANTS,
    seed: int | None = None,
    max_rounds: int = MAX_ROUNDS,
    configs=None,
    batch_class: type[RunningBatch] = RunningBatch,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: float = 2.0,
    record: list | None = None,
) -> LifecycleResult:
    """Run state machines against ``target`` until a round finds nothing new (or ``max_rounds``).

    ``configs`` replaces the configuration strategy (tests pin one config);
    ``batch_class`` replaces the model (tests plant bugs in it); ``record``
    collects the (config, steps) of every run that ended normally.
    """
    result = LifecycleResult(target.spec)
    found: dict[str, LifecycleFailure] = {}
    progress = Progress(target.spec, time.monotonic())
    last_report = [time.monotonic()]

    def on_run() -> None:
        progress.examples += 1
        if on_progress and time.monotonic() - last_report[0] >= progress_every:
            last_report[0] = time.monotonic()
            progress.groups = len(found) + len(plan.latest)
            on_progress(progress)

    plan = Plan(target, tuple(checks), configs if configs is not None else lifecycle_configs(target.revision.algorithms),
                batch_class, on_run=on_run, record=record)
    # No explain phase: it replays a shrunk run hundreds of times for notes a step script does not need.
    run_settings = Settings(hyp_settings, stateful_step_count=steps, report_multiple_bugs=True,
                            phases=[p for p in hyp_settings.phases if p != Phase.explain])
    if seed is not None:  # an explicit seed wins over derandomize; the database stays on
        run_settings = Settings(run_settings, derandomize=False)

    def machine() -> LifecycleMachine:
        return LifecycleMachine(plan)

    # Per-target database keys and derandomized seeds; the seed the way @seed sets it.
    machine._hypothesis_internal_add_digest = f"kvrow-fuzz:lifecycle:{target.spec}".encode()
    if seed is not None:
        machine._hypothesis_internal_use_seed = seed
    def before_round() -> None:
        plan.known = set(found)
        plan.latest = {}

    def failure_of(leaf: BaseException) -> LifecycleFailure | None:
        if not isinstance(leaf, LifecycleFailed):
            return None
        sig = leaf.violation.signature
        at = plan.latest[sig].found_at if sig in plan.latest else plan.stats.runs + 1
        return LifecycleFailure(target.spec, leaf.violation, leaf.config, leaf.steps, at)

    hunt_in_rounds(lambda: run_state_machine_as_test(machine, settings=run_settings), failure_of, result, found,
                   lambda: plan.latest, max_rounds, before_round=before_round, finish=lambda f: _shortened(plan, f))
    result.examples = plan.stats.runs
    result.started = plan.stats.started
    result.steps = plan.stats.steps
    result.committed_vs_bound = plan.stats.committed_vs_bound
    result.seconds = time.monotonic() - progress.started
    result.failures = sorted(found.values(), key=lambda f: f.signature)
    return result


def _shortened(plan: Plan, f: LifecycleFailure) -> LifecycleFailure:
    """The failure with its step script shortened, and the violation as the short script shows it."""
    steps = shorten(plan.target, f.config, f.steps, f.signature, plan.checks, plan.batch_class)
    _, v = first_violation(plan.target, f.config, steps, plan.checks, plan.batch_class)
    if v is None or v.signature != f.signature:
        return f
    return LifecycleFailure(f.target, v, f.config, steps, f.found_at)


# -- case files -------------------------------------------------------------------


def lifecycle_document(target: str, failure: LifecycleFailure) -> dict[str, Any]:
    return casefile.document(LIFECYCLE, target, failure.violation, failure.config, failure.case_json())


def format_step(step: dict) -> str:
    """``op key=value ...``, values as JSON: how a step script prints."""
    if not isinstance(step, dict):
        return json.dumps(step)
    return " ".join([str(step.get("op"))] + [f"{k}={json.dumps(v)}" for k, v in step.items() if k != "op"])


def config_line(cfg: ServingConfig) -> str:
    """The config in SGLang argument names, with the row count a lifecycle run depends on."""
    return f"{cfg.short()} max_running_requests={cfg.max_running_requests}"


@dataclass
class CaseRun:
    """A step script replayed: the story, line by line, and each invariant's first violation with its step."""

    lines: list[str]
    violations: list[tuple[int, Violation]]


def _story(batch: RunningBatch, result: StepResult) -> list[str]:
    owners = batch.row_owner()
    for rel in result.releases:
        owners.setdefault(rel.row, rel.rid)
    return (list(result.notes) + [w.describe(owners, batch.width) for w in result.writes]
            + [rel.describe(batch.page) for rel in result.releases])


def run_case(target: Target, cfg: ServingConfig, steps: list, checks=INVARIANTS,
             batch_class: type[RunningBatch] = RunningBatch, *, story: bool = True) -> CaseRun:
    """Apply a step script from a fresh batch, checking every step (StepError names the step that cannot run)."""
    run = CaseRun([], [])
    try:
        batch = batch_class(cfg, target.sizing, target.revision)
    except TargetCallError as e:
        run.violations.append((0, sizing_raised(cfg, e)))
        return run
    shadow, seen = RowShadow(batch), set()
    for i, step in enumerate(steps, 1):
        try:
            result = batch.apply(step)
        except StepError as e:
            raise StepError(f"step {i}: {e}") from None
        except TargetCallError as e:
            run.violations.append((i, sizing_raised(cfg, e)))
            break
        shadow.record(result)
        if story:
            run.lines.append(f"{i:>3}. {format_step(step)}")
            run.lines += [f"       {line}" for line in _story(batch, result)]
        for v in step_violations(batch, result, shadow, checks):
            if v.prop not in seen:
                seen.add(v.prop)
                run.violations.append((i, v))
    return run


def first_violation(target: Target, cfg: ServingConfig, steps: list, checks=INVARIANTS,
                    batch_class: type[RunningBatch] = RunningBatch) -> tuple[int, Violation | None]:
    """The step and the violation a run of ``steps`` stops at, as the machine would (0, None: none, or invalid)."""
    try:
        found = run_case(target, cfg, steps, checks, batch_class, story=False).violations
    except StepError:
        return 0, None
    return found[0] if found else (0, None)


def _without(steps: list[dict], i: int) -> list[dict]:
    """``steps`` less step i; less an admit, also every step of that request, later rids renumbered."""
    if steps[i].get("op") != "admit":
        return steps[:i] + steps[i + 1 :]
    gone = sum(1 for s in steps[:i] if s.get("op") == "admit")  # rids are numbered in admission order

    def rid(r: int) -> int:
        return r - (r > gone)

    out = []
    for s in steps[:i] + steps[i + 1 :]:
        if "rid" in s:
            if s["rid"] == gone:
                continue
            s = {**s, "rid": rid(s["rid"])}
        elif s.get("op") == "decode":
            s = {**s, "accepted": [[rid(r), k] for r, k in s["accepted"] if r != gone]}
        out.append(s)
    return out


def shorten(target: Target, cfg: ServingConfig, steps: list[dict], signature: str, checks=INVARIANTS,
            batch_class: type[RunningBatch] = RunningBatch) -> list[dict]:
    """Drop steps (and whole requests) Hypothesis' shrinker left in, while the run still stops at ``signature``.

    The shrinker works on the random choices, where deleting an admission
    shifts which request every later choice picks; here a request goes with
    all its steps, so short scripts come out shorter still.
    """
    at, v = first_violation(target, cfg, steps, checks, batch_class)
    if v is None or v.signature != signature:
        return steps
    best = steps[:at]
    for span in (2, 1):  # pairs first: a retract and the prefill that follows only go together
        i = len(best) - span
        while i >= 0:
            candidate = best
            for _ in range(span):  # an admission takes its request's steps along: the list may run out
                candidate = _without(candidate, i) if i < len(candidate) else None
                if candidate is None:
                    break
            at, v = first_violation(target, cfg, candidate, checks, batch_class) if candidate else (0, None)
            if v is not None and v.signature == signature:
                best = candidate[:at]
            i = min(i, len(best) - span + 1) - 1
    return best


def replay_lifecycle(doc: dict[str, Any], where: str) -> casefile.Replay:
    try:
        target = resolve_target(doc["target"])
    except TargetError as e:
        raise casefile.CaseFileError(f"{where}: {e}") from None
    try:
        cfg = ServingConfig.from_dict(doc["config"])
    except (ConfigError, TypeError) as e:
        raise casefile.CaseFileError(f"{where}: {e}") from None
    steps = doc["case"].get("steps") if isinstance(doc["case"], dict) else None
    if not isinstance(steps, list):
        raise casefile.CaseFileError(f"{where}: a lifecycle case needs \"case\": {{\"steps\": [...]}}")
    if cfg.spec_on and cfg.speculative_algorithm not in target.revision.algorithms:
        raise casefile.CaseFileError(f"{where}: {target.spec} has no speculative algorithm {cfg.speculative_algorithm}")
    try:
        run = run_case(target, cfg, steps)
    except StepError as e:
        raise casefile.CaseFileError(f"{where}: not a valid step script for {target.spec}: {e}") from None
    prop = doc["property"]
    lines = [f"target: {target.spec}", f"config: {config_line(cfg)}", f"steps ({len(steps)}):"] + run.lines
    same = [(i, v) for i, v in run.violations if v.prop == prop]
    if same:
        i, v = same[0]
        lines += [f"FAILS {v.signature} at step {i}", v.describe()]
    else:
        lines.append(f"passes: {prop} no longer fails on {target.spec}")
    lines += [f"also fails {v.signature} at step {i}: {v.headline}" for i, v in run.violations if v.prop != prop]
    return casefile.Replay(bool(same), "\n".join(lines))


casefile.REPLAYERS[LIFECYCLE] = replay_lifecycle
