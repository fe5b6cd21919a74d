"""The toy engine (``fuzz.engines.base.Engine``): its targets, its hunt, its case and replay, its cause and location.

Two targets: ``toy`` (the table's width planted: ``row_width``) and
``toy@fixed`` (``fixed_row_width``).  A case is one decode step of one
request (``ToyCase``), checked by the core's generic checks on what the
step did to the table (``fuzz.tables.judge`` on its ``Access``es) and
worded by the core (``fuzz.tables.case.violation``); the toy hunts it with
its own Hypothesis test, replays its own case files, and indicts the
target's width function (root cause, SARIF).  The toy has no other code to
confirm a finding on, no request lifecycle and no bounded proof: it says so
where asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from hypothesis import given
from hypothesis import settings as Settings
from hypothesis import target as hypothesis_target

from fuzz.campaign.driver import Progress, Tracker, seeded
from fuzz.common.errors import BadInput, TargetError
from fuzz.engines.base import Attribution, LifecycleOptions, RunOptions
from fuzz.findings.casefile import CaseFileError, Replay, verdict
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.findings.report import Command, Field
from fuzz.findings.sarif import SourceLine, artifact_uri
from fuzz.tables import CodeRef, Table, judge
from fuzz.tables.case import violation
from fuzz.tables.causes import code_lines, table_cause
from fuzz.targets.base import Target, TargetKind
from fuzz.targets.resolve import resolve_case_target
from fuzz.verdict import PIPELINE, Unjudgeable

from .allocator import HERE, StepRun, Width, check_case, fixed_row_width, row_width, run_step
from .cases import Drawn, step_cases
from .config import ToyConfig, check_pins
from .declared import NAME, TABLE, TOY_STEP

# spec -> (its table's width function, what ``targets`` says of it)
SPECS: dict[str, tuple[Width, str]] = {
    "toy": (row_width, "the toy allocator: its table's row omits the page rounding (planted)"),
    "toy@fixed": (fixed_row_width, "the toy allocator, its table's row corrected"),
}


def table_of(target: Target) -> Table:
    """The table as ``target`` sizes it: its width code is the target's own width function (what a finding
    names, its root cause is and SARIF points at)."""
    return replace(TABLE, width=replace(TABLE.width, code=(CodeRef(HERE, target.sizing.__name__),)))


@dataclass(frozen=True)
class ToyCase:
    """One decode step (``fuzz.verdict.Case``): request ``row`` at ``seq_len`` under ``config``."""

    config: ToyConfig
    row: int
    seq_len: int
    kind: ClassVar[CaseKind] = TOY_STEP

    def __post_init__(self) -> None:
        check_case(self.config, self.row, self.seq_len)

    @property
    def properties(self) -> tuple[Property, ...]:
        return TABLE.properties

    def check(self, target: Target, props: tuple[Property, ...], own: bool = False) -> tuple[Any, list[Violation]]:
        """The step on ``target``'s table, and the first break of each of ``props`` (the core's generic checks)."""
        if own or target.engine != NAME:
            raise Unjudgeable(f"a toy step runs on the toy allocator only, not on {target.spec}'s own code")
        run = run_step(target.sizing, self.config, self.row, self.seq_len)
        t = table_of(target)
        return run, [violation(t, self.config, b) for b in judge(t, run.accesses, props)]

    def finding(self, target: Target, v: Violation, found_at: int = 0) -> Finding:
        return Finding(TOY_STEP, target.spec, v, self.config, {"row": self.row, "seq_len": self.seq_len}, found_at)


class ToyHunt:
    """``run``'s hunt on a toy target (``fuzz.campaign.driver.Hunt``): Hypothesis over decode steps, each judged
    by the verdict pipeline, each new group raised as its own failure."""

    name = "toy-step"

    def __init__(self, target: Target, pins: Mapping[str, Any] | None):
        self.target, self.pins, self.steps = target, dict(pins or {}), 0

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        def test_toy_step(drawn: Drawn) -> None:
            progress.tick(tracker.groups)
            self.steps += 1
            judged = PIPELINE.case(self.target, ENGINE.fuzzed_case(drawn), found_at=progress.examples)
            hypothesis_target(float(judged.run.overshoot), label="overshoot past the row")
            for f in judged.findings:
                if not tracker.is_known(f.signature):
                    tracker.fail(f)

        wrapped: Callable[[], None] = settings(seeded(given(step_cases(self.pins))(test_toy_step), seed))
        return wrapped

    def cover(self, tracker: Tracker, progress: Progress) -> Iterable[Finding]:
        return ()  # no covering set: the search draws every case

    def finish(self, f: Finding) -> Finding:
        return f

    def stats(self) -> dict[str, Any]:
        return {"toy_steps": self.steps}


def replay_step(doc: dict[str, Any], where: str, named: str | None = None) -> Replay:
    """A toy case file replayed (``named``: the command line's target): its step through the verdict pipeline, for
    its own property; ``CaseFileError`` (one line) for a case the toy cannot run."""
    prop = Property(doc["property"])
    if prop not in TABLE.properties:
        raise CaseFileError(f"{where}: a toy step is not judged on {prop}")
    try:
        target = resolve_case_target(doc["target"], named, TOY_STEP)
        case = ToyCase(ToyConfig.from_dict(doc["config"]), doc["case"]["row"], doc["case"]["seq_len"])
        judged = PIPELINE.case(target, case, (prop,))
    except (TargetError, Unjudgeable, ValueError, TypeError) as e:
        raise CaseFileError(f"{where}: {e}".splitlines()[0]) from None
    lines = [
        f"target: {target.spec}",
        f"config: {case.config.short()}",
        f"step:   request {case.row} at seq_len {case.seq_len}",
    ]
    failed = [f.violation for f in judged.findings]
    return verdict(lines, prop.value, target.spec, failed[0] if failed else None)


class ToyEngine:
    """The toy, as the core asks an engine (``fuzz.engines.base.Engine``); it claims only its own specs."""

    name = NAME
    packages: tuple[str, ...] = ()  # nothing beside ``fuzz`` and itself
    attributions: tuple[Attribution, ...] = ()  # no feature a group must earn
    report_fields = {Command.RUN: {"toy_steps": Field.COUNT}}
    quick_space = None  # it proves no bounded space

    def claims(self, spec: str) -> bool:
        return spec == NAME or spec.startswith(NAME + "@")

    def resolve(self, spec: str, version: str | None = None) -> Target:
        if spec not in SPECS:
            raise TargetError(f"unknown toy target {spec!r} (known: {', '.join(SPECS)})")
        if version is not None:
            raise TargetError(f"{spec} takes no --sglang-version")
        width, label = SPECS[spec]
        return Target(spec, label, width, None, TargetKind.MODEL, NAME)

    def runs_named_code(self, spec: str) -> bool:
        return False  # its code is its own, never a file the spec names

    def known_targets(self) -> list[tuple[str, str]]:
        return [(spec, label) for spec, (_, label) in SPECS.items()]

    def config_from_dict(self, data: Mapping[str, Any]) -> ToyConfig:
        return ToyConfig.from_dict(data)

    def check_pins(self, pins: Mapping[str, Any]) -> None:
        check_pins(pins)

    def pins_refused(self, target: Any, pins: Mapping[str, Any]) -> str | None:
        return None  # its one model runs every configuration it has

    def target_class(self, spec: str) -> TargetKind | None:
        return TargetKind.MODEL if spec in SPECS else None

    def printed_target(self, kind: TargetKind, spec: str) -> str | None:
        return spec

    def confirm(self, target: Target, finding: Any, mode: str = "auto", check: Any = None) -> Any:
        return finding  # the toy allocator is its own code: nothing else to replay a finding on

    def has_own_path(self, target: Target, mode: str = "auto") -> bool:
        if mode == "sglang":
            raise BadInput(f"--write-path sglang: {target.spec} is a toy target, with no SGLang write path")
        return False

    def hunt(self, target: Target, options: RunOptions) -> ToyHunt:
        return ToyHunt(target, options.pins)

    @property
    def fuzzed_properties(self) -> tuple[Property, ...]:
        return TABLE.properties

    def fuzzed_draws(self, target: Target) -> Any:
        return step_cases()

    def fuzzed_case(self, drawn: Drawn) -> ToyCase:
        return ToyCase(*drawn)

    def case_score(self, run: StepRun | None) -> tuple[float, str] | None:
        return None if run is None else (float(run.overshoot), "overshoot past the row")

    def campaign_lines(self, target: Target, command: Any, result: Any) -> list[str]:
        if command is Command.RUN:
            return [f"   toy: {result.stats.get('toy_steps', 0)} decode steps on the toy allocator"]
        return []

    def lifecycle_hunt(self, target: Target, options: LifecycleOptions) -> Any:
        raise BadInput(f"{target.spec}: the toy has no request lifecycle")

    def prover(self, target: Target, options: Any) -> Any:
        raise BadInput(f"{target.spec}: the toy has no bounded proof")

    def code_paths(self, target: Target) -> list[str]:
        return [HERE]

    def root_causes(self, target: Target, findings: list[Any]) -> list[Any]:
        return [table_cause(table_of(target), findings)] if findings else []

    def judges(self, target: Target, table: str, command: Any, stats: Mapping[str, Any]) -> str | None:
        if table != TABLE.name or command is not Command.RUN:
            return None  # only run judges it (no lifecycle, no proof)
        return "its decode steps on the toy allocator, sampled"

    def locations(self, target: Target, finding: Any, cwd: str | None = None) -> list[SourceLine]:
        return [
            SourceLine(artifact_uri(code.shown, cwd), line, code.ref.qualname)
            for code, line in code_lines(table_of(target))
        ]

    def portable_target(self, target: Target, cwd: str | None = None) -> str:
        return target.spec

    def launch_line(self, config: Any, table: str | None = None) -> str | None:
        return None

    def modeled_line(self, target: Target, own_write_path: bool = True) -> str | None:
        return None


ENGINE = ToyEngine()
