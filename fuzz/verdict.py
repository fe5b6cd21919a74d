"""One verdict pipeline: check, attribution, confirmation on the engine's own code, root cause, baseline.

A case (a decode scenario, a lifecycle step script: ``Case``) is judged in
five stages, each a method of ``Pipeline`` and written only there:

1. ``check``: what the case breaks on the target, raw.
2. ``attribute``: each violation named for its cause: ``dcp>1`` only when the
   same case without DCP passes (on the path the violation was found on).
   Applied with the check (``checked``), so a shrinker that keeps a case in
   its group never slides a DCP bug onto a case that fails without DCP.
3. ``confirm``: a decode finding replayed on the target's own write path,
   saying what that path did (``fuzz.run.sglang.confirmation``).
4. ``causes``: the root causes of findings, by counterfactual.
5. ``judge``: the causes held to a baseline: known, new, fixed.

``case`` runs all five on one case; ``verdict`` runs the last two on a
campaign's findings.  Every entry point calls ``PIPELINE``: run's campaign,
lifecycle, prove's witnesses, the pytest plugin, the Atheris entry, repro
and advisory; none repeats a stage, so changing one changes them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.groups import attributed_without_dcp, dcp_to_be_judged, scenario_of
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.run.check import DecodeCase
from fuzz.run.properties import PROPERTIES
from fuzz.run.sglang import SGLangCheck, WritePathMode, confirmation, has_sglang_path, on_sglang
from fuzz.targets.base import Target

if TYPE_CHECKING:
    from fuzz.findings.baseline_entries import Entry, Judged
    from fuzz.findings.cause import Cause


class Case(Protocol):
    """What the pipeline judges: a case that checks itself on a target and knows itself without DCP."""

    kind: ClassVar[CaseKind]

    @property
    def config(self) -> ServingConfig: ...

    def check(self, target: Target, props: tuple[Property, ...], sglang: bool = False) -> tuple[Any, list[Violation]]:
        """(the run, what it breaks of ``props``): on the model's run, or on SGLang's own path (``sglang``)."""
        ...

    def without_dcp(self, target: Target) -> Case | None:
        """The same case with ``attn_dcp_size`` 1 (None: the target cannot run it)."""
        ...

    def finding(self, target: Target, v: Violation, found_at: int = 0) -> Finding: ...


@dataclass
class CaseVerdict:
    """One case judged: its run, its findings (attributed, confirmed where asked), their causes and the baseline's
    verdict on them (None where no baseline was given)."""

    run: Any
    findings: list[Finding]
    causes: list[Cause] = field(default_factory=list)
    judged: Judged | None = None

    @property
    def new(self) -> list[Finding]:
        """The findings whose root cause the baseline does not know (all of them without a baseline)."""
        if self.judged is None:
            return self.findings
        groups = {s for c in self.judged.new for s in c.groups}
        return [f for f in self.findings if f.signature in groups]


class Pipeline:
    """The five stages (see the module docstring); ``PIPELINE`` is the one every entry point uses."""

    def check(
        self, target: Target, case: Case, props: tuple[Property, ...] = PROPERTIES, sglang: bool = False
    ) -> tuple[Any, list[Violation]]:
        """Stage 1: what ``case`` breaks on ``target``, unattributed."""
        return case.check(target, props, sglang)

    def attribute(self, target: Target, case: Case, v: Violation, sglang: bool = False) -> Violation:
        """Stage 2: ``v`` named for its cause: ``dcp>1`` only when the same case without DCP passes, on the same
        path (a case the target cannot run without DCP keeps ``v`` as it is)."""
        if not dcp_to_be_judged(v):
            return v
        other = case.without_dcp(target)
        if other is None:
            return v
        _, found = self.check(target, other, (Property(v.prop),), sglang)
        return attributed_without_dcp(v, [w for w in found if w.prop == v.prop], explain=not sglang)

    def confirm(
        self, target: Target, f: Finding, mode: WritePathMode = WritePathMode.AUTO, check: SGLangCheck | None = None
    ) -> Finding:
        """Stage 3: a decode finding replayed on the target's own write path (where ``mode`` runs one): it says
        there what that path did.  A finding that already says it, a model mismatch or another kind is as is.
        ``check``: the case's traced run on that path where the caller has made it already."""
        if f.kind is not SGLangCase.DECODE or f.confirmation is not None or f.violation.prop is Property.MODEL_MISMATCH:
            return f
        if check is None and not has_sglang_path(target, mode):
            return f
        if check is None:
            check = on_sglang(target, scenario_of(f), trace=True)
        f.confirmed, f.confirmation = confirmation(check, f.violation)
        return f

    def causes(self, target: Target, findings: list[Finding]) -> list[Cause]:
        """Stage 4: the root causes of ``findings`` (``fuzz.causes.counterfactual``)."""
        from fuzz.causes import root_causes

        return root_causes(target, findings)

    def judge(self, causes: list[Cause], entries: frozenset[Entry]) -> Judged:
        """Stage 5: ``causes`` held to a baseline's entries."""
        from fuzz.findings.baseline_entries import judge

        return judge(causes, entries)

    # The stages composed.

    def checked(
        self, target: Target, case: Case, props: Iterable[Property] = PROPERTIES, sglang: bool = False
    ) -> tuple[Any, list[Violation]]:
        """Stages 1-2: what ``case`` breaks, each violation named for its cause."""
        run, found = self.check(target, case, tuple(props), sglang)
        return run, [self.attribute(target, case, v, sglang) for v in found]

    def case(
        self,
        target: Target,
        case: Case,
        props: Iterable[Property] = PROPERTIES,
        *,
        confirm: bool = True,
        baseline: frozenset[Entry] | None = None,
        found_at: int = 0,
    ) -> CaseVerdict:
        """Stages 1-5 on one case: its findings (confirmed where ``confirm``), and where a ``baseline`` is given
        their root causes and its verdict on them."""
        run, found = self.checked(target, case, props)
        findings = [case.finding(target, v, found_at) for v in found]
        if confirm:
            findings = [self.confirm(target, f) for f in findings]
        verdict = CaseVerdict(run, findings)
        if baseline is not None and findings:
            verdict.causes, verdict.judged = self.verdict(target, findings, baseline)
        return verdict

    def verdict(
        self, target: Target, findings: list[Finding], baseline: frozenset[Entry] | None
    ) -> tuple[list[Cause], Judged | None]:
        """Stages 4-5 on a campaign's findings: their root causes, and the baseline's verdict (None: no baseline)."""
        causes = self.causes(target, findings)
        return causes, None if baseline is None else self.judge(causes, baseline)

    def new(self, target: Target, findings: list[Finding], baseline: frozenset[Entry]) -> list[Finding]:
        """Stages 4-5: the findings whose root cause ``baseline`` does not know (in their order)."""
        if not findings:
            return []
        causes, judged = self.verdict(target, findings, baseline)
        return CaseVerdict(None, findings, causes, judged).new


PIPELINE = Pipeline()


def check_scenario(
    target: Target, scenario: DecodeScenario, props: Iterable[Property] = PROPERTIES, *, attributed: bool = True
) -> tuple[Any, list[Violation]]:
    """A decode scenario through stages 1-2 (``attributed=False``: stage 1 only)."""
    if attributed:
        return PIPELINE.checked(target, DecodeCase(scenario), props)
    return PIPELINE.check(target, DecodeCase(scenario), tuple(props))
