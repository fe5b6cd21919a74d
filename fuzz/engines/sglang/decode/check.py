"""A decode scenario checked on a target: the first stage of the verdict pipeline (``fuzz.verdict``), raw.

``DecodeCase`` is a decode scenario as the pipeline sees a case: it checks
itself on the model's run or SGLang's own path, says what it is without DCP,
and makes the finding of one of its violations.  What it breaks is returned
as found; naming each violation for its cause is the pipeline's next stage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario, ScenarioRun, run_scenario, scenario_problem
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.groups import sizing_raised
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.targets.base import TargetCallError

from ..own_path import on_sglang
from .properties import PROPERTIES, violations


def decode_violations(
    target: SGLangTarget, scenario: DecodeScenario, props: tuple[Property, ...] = PROPERTIES
) -> tuple[ScenarioRun | None, list[Violation]]:
    """``scenario`` on the target's model run, every property of ``props`` it breaks, unattributed (None: a sizing
    function raised, which is the one violation)."""
    try:
        run = run_scenario(scenario, target.sizing, target.revision)
    except TargetCallError as e:
        return None, [sizing_raised(scenario.config, e)]
    if run.skipped:
        return run, []
    return run, violations(run, props)


def decode_finding(target: str, v: Violation, scenario: DecodeScenario, found_at: int = 0) -> Finding:
    return Finding(
        SGLangCase.DECODE, target, v, scenario.config, scenario.to_dict(), found_at, reached_by=scenario.reached_by()
    )


@dataclass(frozen=True)
class DecodeCase:
    """A decode scenario as a case of the verdict pipeline (``fuzz.verdict.Case``)."""

    scenario: DecodeScenario
    kind: ClassVar[CaseKind] = SGLangCase.DECODE
    properties: ClassVar[tuple[Property, ...]] = PROPERTIES

    @property
    def config(self) -> ServingConfig:
        return self.scenario.config

    def check(
        self, target: SGLangTarget, props: tuple[Property, ...], own: bool = False
    ) -> tuple[Any, list[Violation]]:
        """What the case breaks of ``props``: on the model's run, or (``own``) on SGLang's own path, judged on
        every property there as a campaign's run is, then kept to ``props``."""
        if not own:
            return decode_violations(target, self.scenario, props)
        check = on_sglang(target, self.scenario)
        return check.run, [v for v in check.violations if v.prop in props]

    def without_dcp(self, target: SGLangTarget) -> DecodeCase | None:
        """The same scenario without DCP, where the target's revision runs that deployment (None: it does not)."""
        other = self.scenario.without_dcp()
        if other is None or scenario_problem(other, target.revision) is not None:
            return None
        return DecodeCase(other)

    def finding(self, target: SGLangTarget, v: Violation, found_at: int = 0) -> Finding:
        return decode_finding(target.spec, v, self.scenario, found_at)


def check_scenario(
    target: SGLangTarget, scenario: DecodeScenario, props: Iterable[Property] = PROPERTIES, *, attributed: bool = True
) -> tuple[Any, list[Violation]]:
    """A decode scenario through the verdict pipeline's stages 1-2 (``attributed=False``: stage 1 only)."""
    from fuzz.verdict import PIPELINE

    if attributed:
        return PIPELINE.checked(target, DecodeCase(scenario), props)
    return PIPELINE.check(target, DecodeCase(scenario), props)
