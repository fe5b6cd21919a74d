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

from dataclasses import dataclass, field, replace
from typing import Any

from allocator_model.config import ServingConfig
from allocator_model.pools import KVPool
from allocator_model.regimes import REGIMES, Regime, moved_regime, regime
from allocator_model.revisions import Revision
from allocator_model.sizing import alloc_page_size

from .kinds import SILENT, CaseKind, Outcome, Property, Signature, group_name
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
    pool: KVPool = KVPool.STANDARD  # the deployment kind: part of the group's name unless standard

    @property
    def signature(self) -> Signature:
        return Signature(Property(self.prop), group_name(str(self.group), self.pool.variant), self.outcome)

    def describe(self) -> str:
        return "\n".join([f"{Property(self.prop).value}: {self.headline}"] + [f"  {d}" for d in self.details])


def dcp_to_be_judged(v: Violation) -> bool:
    """Whether ``v`` is grouped ``dcp>1`` and so must be held to the same case without DCP before it keeps that
    name (``attributed_without_dcp``); a sizing function that raised is named by its configuration alone."""
    return v.group == Regime.DCP.value and v.prop != Property.SIZING_RAISED


def attributed_without_dcp(v: Violation, same: list[Violation], explain: bool = True) -> Violation:
    """``v`` named for its cause: ``dcp>1`` only when DCP is it.

    ``same``: the violations of ``v``'s property by the same case with
    attn_dcp_size 1 (a decode scenario, a lifecycle step script).  A case
    that fails without DCP too does not fail because of DCP: it is grouped
    by the regime it has there (``moved_regime``; page 1's gap, say), with a
    ``cause:`` line where ``explain``.  Anything else is ``v`` unchanged.
    """
    if not dcp_to_be_judged(v):
        return v
    code = REGIMES.index(Regime.DCP)
    moved = moved_regime(code, REGIMES.index(Regime(same[0].group)) if same else code, bool(same))
    if moved == code:
        return v
    why = [f"cause: fails without DCP too (attn_dcp_size=1: {same[0].headline})"] if explain else []
    return replace(v, group=REGIMES[moved].value, details=v.details + why)


def sizing_raised(cfg: ServingConfig, error: Exception) -> Violation:
    """A real sizing function raised for a valid configuration: the violation names the function and the config."""
    return Violation(
        Property.SIZING_RAISED,
        regime(cfg, alloc_page_size(cfg.page_size, cfg.attn_dcp_size)).value,  # the page the sizing module sees
        str(error),
        [f"config: {cfg.short()}"],
    )  # grouped without the kind of pool: the sizing module does not know it


@dataclass
class Finding:
    """A violation on a target, with the configuration and the case (JSON data of its kind) that replay it."""

    kind: CaseKind
    target: str  # the target spec, as a case file records it
    violation: Violation
    config: ServingConfig
    case: dict[str, Any]
    found_at: int = 0  # examples (runs, configurations) before the group's first failure
    case_path: str | None = None
    revision: Revision | None = None  # fidelity: the model revision the real module was compared with
    reached_by: str | None = None  # decode: how the scheduler gets a request into the case's first state
    # What SGLang's own write path did with the case (``fuzz.run.sglang.confirmation``): confirmed, found only
    # there, or not reproduced there (a model defect); None: the target's write path is the model's.
    sglang: str | None = None
    confirmed: bool | None = None

    @property
    def signature(self) -> Signature:
        return self.violation.signature

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
        if self.sglang is not None:
            d["sglang"] = self.sglang
            d["confirmed"] = self.confirmed
        return d
