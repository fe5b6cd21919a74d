"""A case of a table checked on its own: a configuration and the table's data, judged by the generic checks.

A table its engine does not hunt in its own way (``Table.hunted``) is
checked here: its ``observe`` says what its writers and readers did with
the case, ``judge`` names the first breach of each property, and each
breach is a ``Violation`` worded from the table's declaration (whose part,
how far past it, who sized it, whose part it hit).  The case goes through
the verdict pipeline like any other (``fuzz.verdict.Case``), so its
findings have causes, case files, SARIF results and baseline entries of
the one kind every command knows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from fuzz.engines import engine_of
from fuzz.findings.casefile import CaseFileError, Replay, verdict
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.targets.base import Target, TargetError
from fuzz.targets.resolve import resolve_case_target
from fuzz.verdict import PIPELINE, Unjudgeable

from .checks import Breach, judge, outcome_of
from .declared import TABLE_CASE, Layout, Table, table
from .observe import GUARD, Access, AccessKind, Span, within


def span_text(span: Span) -> str:
    """``row 3 columns [64, 70)`` for a table of rows, ``[64, 70)`` for a flat one."""
    return f"[{span.start}, {span.end})" if span.row is None else f"row {span.row} columns [{span.start}, {span.end})"


def sized_by(t: Table) -> str:
    """Where the table's width is computed: its first width function, as a finding names it."""
    return f"{t.width.code[0].qualname}()" if t.width.code else "its width function"


def victim(t: Table, span: Span, a: Access) -> str:
    """Whose part a span outside its bound hits: the owner the observer names (of what the access changed outside
    its part, or of the span), else for a table of rows the next row (a column past the width is the next row's at
    offset row * W + col), else memory no owner holds."""
    named = [s.owner for s in (*a.changed_outside, span) if s.owner]
    if named:
        return f"past the end of {t.name} (no owner's part)" if named[0] == GUARD else named[0]
    ends = [b.end for b in a.bound if b.row == span.row]
    if t.layout is Layout.ROWS and span.row is not None and ends and span.end > max(ends):
        return f"row {span.row + 1} columns [0, {span.end - max(ends)})"
    return "memory outside every owner's part"


def violation(t: Table, config: Any, b: Breach) -> Violation:
    """A breach as a finding's violation: the access, its part, how far past it, who sized it, whom it hit."""
    a = b.access
    bound = " + ".join(span_text(s) for s in a.bound) or "nothing"
    details = [f"its part: {bound} ({sized_by(t)} for {config.short()})"]
    if a.kind is AccessKind.COPY:
        span = next(s for s in a.touched if not within(s, a.bound))
        copied = sum(s.size for s in a.touched)
        headline = (
            f"{a.owner}: {b.overshoot} of the {copied} entries its builder copied into {t.name} come from outside "
            f"its part of {a.source}"
        )
        details = [f"its part of {a.source}: {bound}", f"copied from: {victim(t, span, a)}"]
    elif b.prop is Property.NEIGHBOUR_ROWS_UNTOUCHED:
        changed = a.changed_outside[0]
        headline = f"{a.owner}'s {a.kind.value} changed {span_text(changed)} of {t.name}, outside its own part"
        details.append(f"victim: {victim(t, changed, a)}")
    elif a.stopped_by is not None:  # the engine's own check refused it: nothing written, the step raises
        span = next(s for s in a.touched if not within(s, a.bound))
        headline = (
            f"{a.owner} would {a.kind.value} {span_text(span)} of {t.name}, {b.overshoot} past its part; the "
            f"engine's own check {a.stopped_by} stops the step instead (the server crashes)"
        )
        details.append(f"victim: none (nothing written; it would have hit {victim(t, span, a)})")
    else:
        span = next(s for s in a.touched if not within(s, a.bound))
        verb = {"write": "writes", "read": "reads", "commit": "commits into"}[a.kind.value]
        headline = f"{a.owner} {verb} {span_text(span)} of {t.name}, {b.overshoot} past its part"
        details.append(f"victim: {victim(t, span, a)}")
    if a.step:
        details.append(f"step: {a.step}")
    group = t.group(config) if t.group is not None else ""
    return Violation(b.prop, group, headline, details, b.overshoot, outcome_of(b.prop, a.stopped_by), variant=t.name)


@dataclass(frozen=True)
class TableCase:
    """One case of a table checked on its own (``fuzz.verdict.Case``): a configuration and the table's data."""

    table: Table
    config: Any
    data: Mapping[str, Any] = field(default_factory=dict)
    kind: ClassVar[CaseKind] = TABLE_CASE

    @property
    def properties(self) -> tuple[Property, ...]:
        return self.table.properties

    def check(self, target: Target, props: tuple[Property, ...], own: bool = False) -> tuple[Any, list[Violation]]:
        """The table's accesses for this case on ``target``, and the first breach of each of ``props``; a target
        of another engine, or the engine's own path (which the generic flow has none of), is ``Unjudgeable``."""
        t = self.table
        if own or target.engine != t.engine or t.observe is None:
            raise Unjudgeable(f"table {t.name} is checked on the model of engine {t.engine}, not here")
        accesses: list[Access] = t.observe(target, self.config, self.data)
        return accesses, [violation(t, self.config, b) for b in judge(t, accesses, props)]

    def finding(self, target: Target, v: Violation, found_at: int = 0) -> Finding:
        case = {"table": self.table.name, "data": json.loads(json.dumps(dict(self.data)))}
        reached = self.table.reached(self.config, self.data) if self.table.reached is not None else None
        return Finding(CaseKind(TABLE_CASE), target.spec, v, self.config, case, found_at, reached_by=reached)


def table_case_of(doc: dict[str, Any], where: str, named: str | None = None) -> tuple[Target, TableCase, Property]:
    """A table case file's target (``named``: the command line's), case and property, each checked as its replay
    checks it; CaseFileError (one line) for a case its table or target does not take."""
    t, prop = table(doc["case"]["table"]), Property(doc["property"])
    if prop not in t.properties:
        raise CaseFileError(
            f"{where}: table {t.name} is not judged on {prop} (its properties: {', '.join(t.properties)})"
        )
    try:
        target = resolve_case_target(doc["target"], named, TABLE_CASE, t.engine)
        config = engine_of(target).config_from_dict(doc["config"])
    except (TargetError, ValueError, TypeError) as e:
        raise CaseFileError(f"{where}: {e}".splitlines()[0]) from None
    return target, TableCase(t, config, doc["case"]["data"]), prop


def replay_table_case(doc: dict[str, Any], where: str, named: str | None = None) -> Replay:
    """A table case file replayed on its target (``named``: the command line's): the case's configuration and data
    through the verdict pipeline; CaseFileError (one line) for a case its table or target does not take."""
    target, case, prop = table_case_of(doc, where, named)
    t, config = case.table, case.config
    try:
        judged = PIPELINE.case(target, case, (prop,), confirm=False)  # its own property alone: none hides it
        others = PIPELINE.case(target, case, tuple(p for p in t.properties if p != prop), confirm=False)
    except (TargetError, Unjudgeable, ValueError, TypeError) as e:
        raise CaseFileError(f"{where}: {e}".splitlines()[0]) from None
    lines = [
        f"target: {target.spec}",
        f"config: {config.short()}",
        f"table:  {t.name}",
        f"case:   {json.dumps(doc['case']['data'], sort_keys=True)}",
    ]
    same = [f.violation for f in judged.findings]
    also = [f"also fails {f.signature}: {f.violation.headline}" for f in others.findings]
    return verdict(lines, prop.value, target.spec, same[0] if same else None, also=also)
