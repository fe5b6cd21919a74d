"""One verdict pipeline: check, attribution, confirmation on the engine's own code, root cause, baseline.

A case (a decode scenario, a lifecycle step script: ``Case``) is judged in
five stages, each a method of ``Pipeline`` and written only there:

1. ``check``: what the case breaks on the target, raw.
2. ``attribute``: each violation named for its cause by the engine's
   attributions (SGLang: ``dcp>1`` only when the same case without DCP
   passes, on the path the violation was found on).  Applied with the check
   (``checked``), so a shrinker that keeps a case in its group never slides
   a DCP bug onto a case that fails without DCP.
3. ``confirm``: a finding replayed on the target's own code (SGLang: a
   decode finding on its write path), saying what that code did.
4. ``causes``: the root causes of findings, as the engine finds them.
5. ``judge``: the causes held to a baseline: known, new, fixed.

``case`` runs all five on one case; ``verdict`` runs the last two on a
campaign's findings.  Every entry point calls ``PIPELINE``: run's campaign,
lifecycle, prove's witnesses, the pytest plugin, the Atheris entry, repro
and advisory; none repeats a stage, so changing one changes them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fuzz.engines import engine_of
from fuzz.engines.base import Config
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.tables.declared import TABLE_CASE
from fuzz.targets.base import Target

if TYPE_CHECKING:
    from fuzz.findings.baseline_entries import Entry, Judged
    from fuzz.findings.cause import Cause


class Unjudgeable(Exception):
    """A case the target cannot run (a step it refuses): nothing was checked, so it is never a clean verdict."""


class Case(Protocol):
    """What the pipeline judges: a case of one engine that checks itself on a target and makes its findings."""

    @property
    def kind(self) -> CaseKind: ...

    @property
    def properties(self) -> tuple[Property, ...]:
        """What it is judged on where the caller names nothing."""
        ...

    @property
    def config(self) -> Config: ...

    def check(self, target: Target, props: tuple[Property, ...], own: bool = False) -> tuple[Any, list[Violation]]:
        """(the run, what it breaks of ``props``): on the model's run, or on the engine's own code (``own``);
        ``Unjudgeable`` where the target cannot run it."""
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
        self, target: Target, case: Case, props: Iterable[Property] | None = None, own: bool = False
    ) -> tuple[Any, list[Violation]]:
        """Stage 1: what ``case`` breaks on ``target``, unattributed (``props`` None: the case's own)."""
        return case.check(target, case.properties if props is None else tuple(props), own)

    def attribute(self, target: Target, case: Case, v: Violation, own: bool = False) -> Violation:
        """Stage 2: ``v`` named for its cause by each of the engine's attributions: a group it keeps only where the
        same case without the attribution's feature passes, on the same path (a case the target cannot run
        without it keeps ``v`` as it is)."""
        for attribution in engine_of(target).attributions:
            if not attribution.applies(v):
                continue
            other = attribution.drop(case, target)
            if other is None:
                continue
            try:
                _, found = self.check(target, other, (Property(v.prop),), own)
            except Unjudgeable:
                continue
            v = attribution.regroup(v, [w for w in found if w.prop == v.prop], not own)
        return v

    def confirm(self, target: Target, f: Finding, mode: str = "auto", check: Any = None) -> Finding:
        """Stage 3: ``f`` replayed on the engine's own code where the target has it (``mode``: the command's
        ``--write-path``): it says there what that code did.  ``check``: the case's traced run on that code where
        the caller has made it already."""
        if f.kind is TABLE_CASE:
            return f  # a table checked on its own is checked on the model: no own code to replay it on
        confirmed: Finding = engine_of(target).confirm(target, f, mode, check)
        return confirmed

    def causes(self, target: Target, findings: list[Finding]) -> list[Cause]:
        """Stage 4: the root causes of ``findings``, as the target's engine finds them (those on a table checked on
        its own: the table's width, ``fuzz.tables.causes``)."""
        from fuzz.tables.causes import table_causes

        on_tables = [f for f in findings if f.kind is TABLE_CASE]
        rest = [f for f in findings if f.kind is not TABLE_CASE]
        causes: list[Cause] = engine_of(target).root_causes(target, rest) if rest or not on_tables else []
        return causes + table_causes(on_tables, target)

    def judge(self, causes: list[Cause], entries: frozenset[Entry]) -> Judged:
        """Stage 5: ``causes`` held to a baseline's entries."""
        from fuzz.findings.baseline_entries import judge

        return judge(causes, entries)

    # The stages composed.

    def checked(
        self, target: Target, case: Case, props: Iterable[Property] | None = None, own: bool = False
    ) -> tuple[Any, list[Violation]]:
        """Stages 1-2: what ``case`` breaks, each violation named for its cause."""
        run, found = self.check(target, case, props, own)
        return run, [self.attribute(target, case, v, own) for v in found]

    def case(
        self,
        target: Target,
        case: Case,
        props: Iterable[Property] | None = None,
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
