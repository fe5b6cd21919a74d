"""The one finding type: what a check saw (``Violation``) and where it was seen (``Finding``).

A ``Violation`` is a check's account of one broken property: a headline that
reads like the specification (the request, its row, the columns written,
the row width, the victim) and detail lines.  A ``Finding`` binds it to a
target, a configuration and a replayable case of one ``CaseKind``; every
command (run, lifecycle, prove, fidelity, matrix) reports ``Finding``s, the
renderer prints them one way, and the report and the case file store them
one way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fuzz.engines.base import Config, Semantics

from .kinds import SILENT, CaseKind, Outcome, Property, Signature, case_type, group_name
from .repro import repro_line


@dataclass
class Violation:
    """One broken property, as the check saw it."""

    prop: Property
    group: str  # the group: a Regime's value, or (model-mismatch) the surface entry that disagrees
    headline: str
    details: list[str] = field(default_factory=list)
    overshoot: int = 0  # columns past the row end (or past kv_allocated_len); what target() climbs
    outcome: Outcome = SILENT  # what SGLang does: the write lands (silent), or a guard of its own stops it
    variant: str = ""  # the deployment, where not the engine's default: part of the group's name (``GROUP@VARIANT``)

    @property
    def signature(self) -> Signature:
        return Signature(Property(self.prop), group_name(str(self.group), self.variant), self.outcome)

    def describe(self) -> str:
        return "\n".join([f"{Property(self.prop).value}: {self.headline}"] + [f"  {d}" for d in self.details])


@dataclass
class Finding:
    """A violation on a target, with the configuration and the case (JSON data of its kind) that replay it."""

    kind: CaseKind
    target: str  # the target spec, as a case file records it
    violation: Violation
    config: Config
    case: dict[str, Any]
    found_at: int = 0  # examples (runs, configurations) before the group's first failure
    case_path: str | None = None
    revision: Semantics | None = None  # fidelity: the model revision the real module was compared with
    reached_by: str | None = None  # decode: how the scheduler gets a request into the case's first state
    # What the engine's own code did with the case (SGLang: its write path, ``Engine.confirm``):
    # confirmed, found only there, or not reproduced there (a model defect); None: the target's code is the model's.
    confirmation: str | None = None
    confirmed: bool | None = None
    # The group's representative case, searched for beside this (minimal) one where the command does (``Search``).
    search: Search | None = None

    @property
    def signature(self) -> Signature:
        return self.violation.signature

    @property
    def engine(self) -> str:
        """The engine whose kind of case this is: reports and case files name its confirmation after it."""
        return case_type(self.kind).engine_of(self.case)

    @property
    def repro(self) -> str:
        """The line that replays the case file; it names the target when the case alone may not run it."""
        from fuzz.engines import runs_named_code

        if not self.case_path:
            return ""
        return repro_line(self.case_path, self.target if runs_named_code(self.target) else None)

    def to_json(self) -> dict[str, Any]:
        """The finding as every JSON report shows it."""
        d: dict[str, Any] = {
            "kind": self.kind.value,
            "class": self.violation.prop.value,
            "signature": str(self.signature),
            **({"representative": self.search.to_json()} if self.search is not None else {}),  # it leads
            "cause": self.violation.group,  # what makes it fail (a DCP case failing without DCP too is not dcp>1)
            "outcome": str(self.violation.outcome),  # silent, stale-read or guard:NAME
            "config": self.config.to_dict(),
            "case": self.case,
            "message": self.violation.describe(),
            "found_at": self.found_at,
            "repro": self.repro,
        }
        if self.revision is not None:
            d["revision"] = self.revision.name
        if self.reached_by is not None:
            d["reached_by"] = self.reached_by
        if self.confirmation is not None:
            if self.engine in d:
                raise ValueError(f"engine {self.engine!r} is named as a field of a finding")
            d[self.engine] = self.confirmation
            d["confirmed"] = self.confirmed
        return d


@dataclass
class Search:
    """A bug group's search for its representative case: the same group at a deployment people run, beside the
    minimal case the shrinker made (which moves toward the engine's defaults, not toward what is run).

    The engine's search (SGLang's: ``fuzz.engines.sglang.representative``) walks the minimal case's fields toward
    realistic values, at most ``budget`` replays, each judged by the verdict pipeline; what it finds is confirmed
    as the minimal case is.  A report leads with ``found``, the minimal case after it; ``missed`` says why not."""

    budget: int  # replays at most: a count, never a time (the same search on every run and machine)
    replays: int  # replays made
    found: Finding | None = None
    deployment: str = ""  # found: its deployment, what makes it one people run, field by field
    missed: str = ""  # not found: why

    def line(self) -> str:
        """``representative: DEPLOYMENT (found in N of BUDGET replays)`` or the miss, one line."""
        if self.found is not None:
            return f"representative: {self.deployment} (found in {self.replays} of {self.budget} replays)"
        return f"representative: none found in {self.replays} of {self.budget} replays: {self.missed}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"budget": self.budget, "replays": self.replays, "found": self.found is not None}
        if self.found is not None:
            d["deployment"] = self.deployment
            d["finding"] = self.found.to_json()
        else:
            d["missed"] = self.missed
        return d
