"""What a verdict judged: each table of the target's engine, and how it was judged or why it was not.

A clean verdict covers only the tables it judged.  So every command that
judges tables (``run``, ``lifecycle``, ``prove``) names each table of the
target's engine: judged, and by what (the model's steps, the engine's own
code, a closed form, a table's own observer), or not judged, and why.  A
table no command of its engine judges is named, never left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fuzz.engines import engine_of
from fuzz.findings.report import Command
from fuzz.targets.base import Target

from .declared import Table, tables

RUN_BY = "its cases on its observer, sampled"  # how run judges a table checked on its own


@dataclass(frozen=True)
class Judgement:
    table: str
    by: str | None  # how it was judged; None: not judged
    why_not: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"judged": self.by is not None, "by": self.by or self.why_not}


def judgement(
    target: Target, t: Table, command: Command, stats: Mapping[str, Any], refused: Mapping[str, str]
) -> Judgement:
    """How ``command`` judged ``t`` on ``target`` (``stats``: what its run counted; ``refused``: table -> why
    ``prove`` did not sweep its closed form)."""
    why = t.refused_on(target) if t.hunted else None
    if why is not None:
        return Judgement(t.name, None, why)
    if t.hunted and command is Command.RUN and stats.get(f"{t.name}_pinned_out"):
        return Judgement(t.name, None, str(stats[f"{t.name}_pinned_out"]))
    if t.hunted and command is Command.RUN:
        run_by = RUN_BY if t.cover is None else f"its covering set, then {RUN_BY}"
        return Judgement(t.name, run_by if t.observer is None else f"{run_by}: {t.observer(target)}")
    if t.hunted and command is Command.PROVE:
        if t.closed_form is None or t.name in refused:
            return Judgement(t.name, None, refused.get(t.name, "it has no closed form"))
        decides = ", ".join(p.value for p in t.proved)  # what the closed form decides, not the whole table
        return Judgement(t.name, f"its closed form over the space: {decides}")
    if t.hunted:
        return Judgement(t.name, None, f"{command} does not draw a table's own cases")
    by = engine_of(target).judges(target, t.name, command, stats)
    return Judgement(t.name, by, "" if by else f"engine {t.engine} has no check of it in {command}")


def judgements(
    target: Target, command: Command, stats: Mapping[str, Any], refused: Mapping[str, str] | None = None
) -> list[Judgement]:
    """Each table of ``target``'s engine, as ``command`` judged it, in the order declared."""
    return [judgement(target, t, command, stats, refused or {}) for t in tables() if t.engine == target.engine]


def judged_lines(js: list[Judgement]) -> list[str]:
    """What a command prints of them: the tables judged and how, then each one not judged and why."""
    judged = [f"{j.table} ({j.by})" for j in js if j.by]
    lines = [f"   judged: {'; '.join(judged)}"] if judged else []
    return lines + [f"   NOT judged: {j.table} ({j.why_not})" for j in js if not j.by]


def judged_field(js: list[Judgement]) -> dict[str, dict[str, Any]]:
    """The report's ``"tables"`` of a target entry."""
    return {j.table: j.to_json() for j in js}
