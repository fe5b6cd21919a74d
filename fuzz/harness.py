"""A fuzz campaign: Hypothesis drives decode scenarios against one target and keeps every distinct bug.

Each violation is raised as an exception class of its own signature
(property / regime), so Hypothesis shrinks each group separately instead of
sliding from the seed bug to a simpler, different one.  A campaign runs in
rounds: groups found in earlier rounds count as passing, so the next round
hunts for a new one; it ends when a round finds nothing new.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import given, seed as hypothesis_seed, settings as Settings, target as hypothesis_target

from allocator_model.scenario import DecodeScenario, ScenarioRun, run_scenario
from strategies.scenarios import decode_scenarios

from .properties import PROPERTIES, Violation, overshoot, regime, violations
from .targets import Target, TargetCallError

SIZING_RAISED = "sizing-raised"
MAX_ROUNDS = 8


class PropertyFailed(AssertionError):
    """A scenario broke a property; subclassed per signature (see ``failure_class``)."""

    def __init__(self, violation: Violation, scenario: DecodeScenario):
        super().__init__(violation.describe())
        self.violation = violation
        self.scenario = scenario


_CLASSES: dict[str, type[PropertyFailed]] = {}


def failure_class(signature: str) -> type[PropertyFailed]:
    """One exception type per signature: Hypothesis tells distinct bugs apart by type."""
    if signature not in _CLASSES:
        _CLASSES[signature] = type(f"PropertyFailed[{signature}]", (PropertyFailed,), {})
    return _CLASSES[signature]


def check_scenario(target: Target, scenario: DecodeScenario, props=PROPERTIES) -> tuple[ScenarioRun | None, list[Violation]]:
    """Run one scenario on a target and return every property it breaks."""
    try:
        run = run_scenario(scenario, target.sizing, target.revision)
    except TargetCallError as e:
        from allocator_model.allocator import allocator_page_size

        cfg = scenario.config
        return None, [Violation(SIZING_RAISED, regime(cfg, allocator_page_size(cfg)), str(e), [f"config: {cfg.short()}"])]
    if run.skipped:
        return run, []
    return run, violations(run, props)


class Finding:
    """What every kind of counterexample reports; subclasses hold ``target``,
    ``violation``, ``config``, ``found_at`` and ``case_path``, and say what their case is."""

    @property
    def signature(self) -> str:
        return self.violation.signature

    @property
    def repro(self) -> str:
        return f"python -m fuzz repro {self.case_path}" if self.case_path else ""

    def case_json(self) -> dict:
        raise NotImplementedError

    def to_json(self) -> dict:
        return {
            "class": self.violation.prop,
            "signature": self.signature,
            "config": self.config.to_dict(),
            "case": self.case_json(),
            "message": self.violation.describe(),
            "repro": self.repro,
        }


@dataclass
class Failure(Finding):
    """A decode scenario that breaks a property."""

    target: str
    violation: Violation
    scenario: DecodeScenario
    found_at: int = 0  # examples run before the group's first failure
    case_path: str | None = None

    @property
    def config(self):
        return self.scenario.config

    def case_json(self) -> dict:
        return self.scenario.to_dict()


@dataclass
class CampaignResult:
    target: str
    examples: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    error: str | None = None
    interrupted: bool = False

    @property
    def status(self) -> str:
        if self.error:
            return "error"
        return "counterexample" if self.failures else "clean"

    def to_json(self) -> dict:
        d = {
            "target": self.target,
            "status": self.status,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "failures": [f.to_json() for f in self.failures],
        }
        if self.error:
            d["error"] = self.error
        if self.interrupted:
            d["interrupted"] = True
        return d


@dataclass
class Progress:
    """What a long run reports: examples, examples per second, groups found, elapsed."""

    target: str
    started: float
    examples: int = 0
    groups: int = 0

    @property
    def rate(self) -> float:
        return self.examples / max(time.monotonic() - self.started, 1e-9)

    def line(self) -> str:
        return (f"[{self.target}] {self.examples} examples, {self.rate:.0f}/s, {self.groups} groups, "
                f"{time.monotonic() - self.started:.0f}s")


def _leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            yield from _leaves(e)
    else:
        yield exc


def hunt_in_rounds(run_round, failure_of, result: CampaignResult, found: dict, latest, max_rounds: int,
                   before_round=None, finish=lambda f: f) -> None:
    """Run Hypothesis rounds until one finds no new group; fill ``found`` by signature.

    A round's exception holds one leaf per distinct failure; ``failure_of``
    turns ours into a Finding (None: not ours, an error).  On KeyboardInterrupt
    the newest failing case of every group not yet shrunk (``latest()``) is
    kept, passed through ``finish``.
    """
    try:
        for _ in range(max_rounds):
            if before_round:
                before_round()
            try:
                run_round()
                return  # a clean round: nothing new is left to find
            except Exception as exc:  # noqa: BLE001 - sorted below
                new = 0
                for leaf in _leaves(exc):
                    f = failure_of(leaf)
                    if f is None:
                        result.error = f"{type(leaf).__name__}: {leaf}".splitlines()[0]
                    elif f.signature not in found:
                        found[f.signature] = finish(f)
                        new += 1
                if result.error or not new:
                    return
    except KeyboardInterrupt:
        result.interrupted = True
        for sig, f in latest().items():
            if sig not in found:
                found[sig] = finish(f)


def campaign(
    target: Target,
    hyp_settings: Settings,
    *,
    props=PROPERTIES,
    seed: int | None = None,
    max_rounds: int = MAX_ROUNDS,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: float = 2.0,
    pins: dict | None = None,
) -> CampaignResult:
    """Fuzz ``target`` until no new group turns up (or ``max_rounds``); KeyboardInterrupt keeps what was found."""
    result = CampaignResult(target.spec)
    found: dict[str, Failure] = {}
    latest: dict[str, Failure] = {}  # newest failing scenario per group, for an interrupted round
    progress = Progress(target.spec, time.monotonic())
    last_report = [time.monotonic()]

    def test(scenario: DecodeScenario) -> None:
        progress.examples += 1
        if on_progress and time.monotonic() - last_report[0] >= progress_every:
            last_report[0] = time.monotonic()
            on_progress(progress)
        run, vs = check_scenario(target, scenario, props)
        if run is not None and not run.skipped:
            hypothesis_target(float(overshoot(run)), label="overshoot past the row width")
        for v in vs:
            if v.signature in found:
                continue  # a known group counts as passing: hunt for the next one
            if v.signature not in latest:
                progress.groups += 1
                latest[v.signature] = Failure(target.spec, v, scenario, progress.examples)
            else:
                latest[v.signature] = Failure(target.spec, v, scenario, latest[v.signature].found_at)
            raise failure_class(v.signature)(v, scenario)

    # Per-target database keys and derandomized seeds.
    test._hypothesis_internal_add_digest = f"kvrow-fuzz:{target.spec}".encode()
    run_settings = Settings(hyp_settings, report_multiple_bugs=True)
    if seed is not None:  # an explicit seed wins over derandomize; the database stays on
        run_settings = Settings(run_settings, derandomize=False)
    wrapped = run_settings(given(decode_scenarios(target.revision, pins))(test))
    if seed is not None:
        wrapped = hypothesis_seed(seed)(wrapped)
    def failure_of(leaf: BaseException) -> Failure | None:
        if not isinstance(leaf, PropertyFailed):
            return None
        sig = leaf.violation.signature
        at = latest[sig].found_at if sig in latest else progress.examples
        return Failure(target.spec, leaf.violation, leaf.scenario, at)

    hunt_in_rounds(wrapped, failure_of, result, found, lambda: latest, max_rounds)
    result.examples = progress.examples
    result.seconds = time.monotonic() - progress.started
    result.failures = sorted(found.values(), key=lambda f: f.signature)
    return result
