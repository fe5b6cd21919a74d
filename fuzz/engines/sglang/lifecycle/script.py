"""A lifecycle step script run from a fresh batch, raw: the story and each invariant's first violation.

``LifecycleCase`` is a step script as the verdict pipeline (``fuzz.verdict``)
sees a case; naming each violation for its cause is the pipeline's, applied
by ``replay.run_case``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from allocator_model.allocator import Unrunnable
from allocator_model.batch import RunningBatch, StepError, StepResult
from allocator_model.config import ConfigError, ServingConfig
from fuzz.engines.sglang.cases import SGLangCase, format_step
from fuzz.engines.sglang.groups import sizing_raised
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.targets.base import TargetCallError

from .invariants import INVARIANTS, RowShadow, step_violations


@dataclass
class CaseRun:
    """A step script replayed: the story, line by line, and each invariant's first violation with its step."""

    lines: list[str]
    violations: list[tuple[int, Violation]]


def _story(batch: RunningBatch, result: StepResult) -> list[str]:
    owners = batch.row_owner()
    for rel in result.releases:
        owners.setdefault(rel.row, rel.rid)
    return (
        list(result.notes)
        + [w.describe(owners, batch.width) for w in result.writes]
        + [rel.describe(batch.page) for rel in result.releases]
    )


def run_steps(target: SGLangTarget, case: LifecycleCase, checks=INVARIANTS, *, story: bool = True) -> CaseRun:
    """Apply a step script from a fresh batch, checking every step (StepError names the step that cannot run):
    each property's first violation with its step, as found (``replay.run_case`` names each for its cause)."""
    cfg, steps, batch_class = case.cfg, case.steps, case.batch_class
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


def lifecycle_finding(
    target: str, v: Violation, cfg: ServingConfig, steps: list[dict[str, Any]], found_at: int = 0
) -> Finding:
    return Finding(SGLangCase.LIFECYCLE, target, v, cfg, {"steps": steps}, found_at)


@dataclass(frozen=True)
class LifecycleCase:
    """A step script on a deployment as a case of the verdict pipeline (``fuzz.verdict.Case``)."""

    cfg: ServingConfig
    steps: list[dict[str, Any]] = field(hash=False)
    batch_class: type[RunningBatch] = RunningBatch
    kind: ClassVar[CaseKind] = SGLangCase.LIFECYCLE
    properties: ClassVar[tuple[Property, ...]] = INVARIANTS

    @property
    def config(self) -> ServingConfig:
        return self.cfg

    def check(
        self, target: SGLangTarget, props: tuple[Property, ...], own: bool = False
    ) -> tuple[Any, list[Violation]]:
        """Each property of ``props`` the script breaks, at the first step it does; ``Unjudgeable`` for a script
        the target cannot run (never a clean verdict).  The lifecycle runs on the model's batch only: no SGLang
        path."""
        from fuzz.verdict import Unjudgeable

        if own:
            raise ValueError("a lifecycle case has no SGLang write path to run on")
        try:
            run = run_steps(target, self, props, story=False)
        except (StepError, Unrunnable) as e:
            raise Unjudgeable(f"the script cannot run on {target.spec}: {e}") from None
        return run, [v for _, v in run.violations]

    def without_dcp(self, target: SGLangTarget) -> LifecycleCase | None:
        """The same script on the same deployment with ``attn_dcp_size`` 1 (None: no such deployment, or one the
        target's revision refuses)."""
        try:
            other = self.cfg.replace(attn_dcp_size=1)
        except ConfigError:
            return None
        if target.revision.refuses(other) is not None:
            return None
        return LifecycleCase(other, self.steps, self.batch_class)

    def upto(self, step: int) -> LifecycleCase:
        """The script's first ``step`` steps."""
        return LifecycleCase(self.cfg, self.steps[:step], self.batch_class)

    def finding(self, target: SGLangTarget, v: Violation, found_at: int = 0) -> Finding:
        return lifecycle_finding(target.spec, v, self.cfg, list(self.steps), found_at)
