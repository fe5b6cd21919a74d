"""Judging a proposed fix: every case of a root cause replayed on the fixed code, and the cause's covering set.

A fix closes a case when ``repro`` of the case on the fixed code (``casefile.replay_document``, the one replay:
the target the repro line names, SGLang's own write path or builders where the code has them) meets no failure
at all: neither the case's own property nor another one it checks (a read turned into a write is not a fix).  A
case the fixed code cannot run is left, never closed.  For a table checked on its own, its covering set
(``Table.cover``: each mode at the limit) is then judged on the fixed code too, every property of the table.  So
"closes every case" means every case of the cause given, and the covering set, ran on the fixed code and passed.

Each left case is listed with the failure the fixed code shows and its repro line (a report's finding, or a
covering case, written to ``--cases DIR`` first so the line has a file to replay).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from allocator_model.scenario import DecodeScenario
from fuzz.common.errors import BadInput
from fuzz.common.text import printable
from fuzz.engines.sglang.decode.check import DecodeCase
from fuzz.engines.sglang.page_tables import GRAPH_TABLES
from fuzz.findings import casefile
from fuzz.findings.casefile import CaseFileError, replay_document
from fuzz.findings.model import Finding
from fuzz.findings.output import save_case
from fuzz.findings.repro import repro_line
from fuzz.tables.case import TableCase
from fuzz.tables.declared import Table, table
from fuzz.targets.base import Target, TargetError
from fuzz.targets.resolve import resolve_target
from fuzz.verdict import PIPELINE, Unjudgeable

from .advisory_parts import Advisory, code
from .fixed_tree import Fix, FixedCode

PROGRAM = "kvrow-fuzz"  # what the advisory's lines start with (the judge's own output runs this installation's)


@dataclass(frozen=True)
class Left:
    """A case the fixed code still fails (or cannot run)."""

    where: str  # the input it came from ("" for a covering case)
    signature: str  # its group on the original target
    shown: str  # its deployment and data, one line
    failure: str  # what the fixed code does with it, one line
    repro: str  # the repro line on the fixed code ("" where no case file could be written)
    case_file: str = ""  # the case file the repro line replays


@dataclass
class FixVerdict:
    fix: Fix
    fixed: FixedCode
    cause_key: str
    cause_label: str
    table: str = ""  # the table the cause is in
    cases: int = 0
    left: list[Left] = field(default_factory=list)
    covering: int | None = None  # covering cases judged (None: the cause's table has none)
    covering_left: list[Left] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def closes(self) -> bool:
        return not self.left and not self.covering_left


def judge(adv: Advisory, fix: Fix, fixed: FixedCode, base: str, repro_target: str, cases_dir: str) -> FixVerdict:
    """``fix`` judged on every case of ``adv`` (``Advisory.cases``) and, for a table's cause, its covering set
    (``base``: the spec of the code without the fix, which a covering case's file names)."""
    start = time.monotonic()
    verdict = FixVerdict(fix, fixed, adv.cause.key, adv.cause.label, adv.cause.table, cases=len(adv.cases))
    t = _own_table(adv.cause.table)
    target = _resolved(fixed)
    for n, (where, f) in enumerate(adv.cases):
        doc = casefile.document(f)
        try:
            r = replay_document(doc, where, fixed.spec)
        except CaseFileError as e:
            failure = f"cannot run on the fixed code: {str(e).splitlines()[0]}"
        else:
            if not r.reproduced and not r.also:
                continue
            failure = f"FAILS {r.signature}: {r.headline}" if r.reproduced else r.also[0]
        failure += _row_note(target, t, f.config, f.case.get("data"))
        path = where if os.path.isfile(where) else save_case(f, cases_dir, f"fix-case-{n + 1}")
        verdict.left.append(_left(where, f, failure, path, repro_target))
    if t is not None and t.cover is not None:
        covering = t.cover(target, {})
        verdict.covering = len(covering)
        for n, (config, data) in enumerate(covering):
            case = TableCase(t, config, data)
            try:
                found = PIPELINE.case(target, case, t.properties, confirm=False).findings
            except (TargetError, Unjudgeable, ValueError) as e:
                shown = f"{config.short()} case {json.dumps(dict(data), sort_keys=True)}"
                why = f"cannot run on the fixed code: {str(e).splitlines()[0]}"
                verdict.covering_left.append(Left("", t.name, shown, why, ""))
                continue
            for g in found[:1]:  # its first failure names it; its case file names the code without the fix
                g = dataclasses.replace(g, target=base)
                path = save_case(g, cases_dir, f"fix-covering-{n + 1}")
                failure = f"FAILS {g.signature}: {g.violation.headline}" + _row_note(target, t, config, data)
                verdict.covering_left.append(_left("", g, failure, path, repro_target))
    verdict.seconds = time.monotonic() - start
    return verdict


def _own_table(name: str) -> Table | None:
    """The declared table a cause is in, where it is one checked on its own (None: ``req_to_token``'s)."""
    try:
        t = table(name)
    except ValueError:
        return None
    return t if t.hunted else None


def _row_note(target: Target, t: Table | None, config: Any, data: Any) -> str:
    """For a page table's case (a decode scenario), what the same step does to the ``req_to_token`` row the table is
    copied from on the fixed code: a failure there (its cause named) is why a table sized from the row fails too."""
    if t is None or t.name not in GRAPH_TABLES or not isinstance(data, dict):
        return ""
    try:
        found = PIPELINE.case(target, DecodeCase(DecodeScenario.from_dict(config, data)), confirm=False).findings
        causes = PIPELINE.causes(target, found) if found else []
    except (TargetError, Unjudgeable, ValueError, TypeError):
        return ""
    if not found:
        return ""
    named = ", ".join(c.label for c in causes) or "its cause undecided"
    return f"; the req_to_token row it is copied from fails the same step too: {found[0].signature} ({named})"


def _resolved(fixed: FixedCode) -> Target:
    try:
        return resolve_target(fixed.spec)
    except TargetError as e:
        raise BadInput(printable(str(e).splitlines()[0], 300)) from None


def _left(where: str, f: Finding, failure: str, path: str | None, repro_target: str) -> Left:
    data = f.case.get("data", f.case) if isinstance(f.case, dict) else f.case
    shown = f"{f.config.short()} case {json.dumps(data, sort_keys=True, default=str)}"
    repro = repro_line(path, repro_target) if path else ""
    return Left(where, str(f.signature), shown, failure, repro, path or "")


def verdict_lines(v: FixVerdict) -> list[str]:
    """The judge's account of one fix on one cause, as the command prints it."""
    lines = [f"{v.cause_label}: {v.cases} case(s) replayed on the fixed code"]
    for left in v.left:
        lines += [f"  LEFT {left.signature}: {printable(left.shown, 400)}",
                  f"    on the fixed code: {printable(left.failure, 400)}"]  # fmt: skip
        lines += [f"    repro: {left.repro}"] if left.repro else []
    if v.covering is None:
        lines.append("  covering set: none for this cause (its cases only)")
    else:
        lines.append(f"  covering set of {v.table} on the fixed code: {v.covering} case(s), "
                     f"{len(v.covering_left)} failing")  # fmt: skip
        for left in v.covering_left:
            lines += [f"  LEFT (covering) {printable(left.shown, 400)}", f"    on the fixed code: {left.failure}"]
            lines += [f"    repro: {left.repro}"] if left.repro else []
    closed = v.cases - len(v.left)
    if v.closes:
        lines.append(f"  verdict: the fix closes every case of {v.cause_key}: {closed} of {v.cases} "
                     f"({v.seconds:.1f} s)")  # fmt: skip
    else:
        extra = f", and {len(v.covering_left)} covering case(s) fail" if v.covering_left else ""
        lines.append(f"  verdict: the fix leaves {len(v.left)} of {v.cases} case(s) of {v.cause_key}{extra} "
                     f"({v.seconds:.1f} s)")  # fmt: skip
    return lines


def fix_section(verdicts: list[FixVerdict], base: str) -> list[str]:
    """The advisory's section on the fixes judged (Markdown; no path of this machine in it)."""
    if not verdicts:
        return []
    lines = [
        "## Proposed fixes, judged",
        "",
        f"Each fix applied to {code(base)} and every case of this cause replayed on the fixed code "
        f"(`{PROGRAM} judge-fix`: a case is closed when it passes every property there), then the cause's covering "
        "set where its table has one:",
        "",
    ]
    for v in verdicts:
        lines += [f"### {printable(v.fix.label, 200)}", ""]
        what = "a patch" if v.fix.is_patch else "a checkout"
        changed = ", ".join(code(c) for c in v.fixed.changed)
        lines += [f"Given as {what}" + (f" changing {changed}." if changed else "."), ""]
        covering = "" if v.covering is None else f"{len(v.covering_left)} of its {v.covering} covering cases fail"
        closed = v.cases - len(v.left)
        if v.closes:
            lines += [f"**Closes every case: {closed} of {v.cases}**" + (f"; none of its {v.covering} covering cases "
                      "fails." if v.covering is not None else "."), ""]  # fmt: skip
            continue
        if v.left:
            lines += [f"**Leaves {len(v.left)} of {v.cases} cases**" + (f"; {covering}:" if covering else ":"), ""]
        else:
            lines += [f"**Closes every case given ({closed} of {v.cases}), but {covering}** on the fixed code:", ""]
        lines += ["| case | deployment | on the fixed code |", "|---|---|---|"]
        for left in [*v.left, *v.covering_left]:
            lines.append(f"| {code(_case_name(left))} | {code(left.shown)} | {code(left.failure)} |")
        lines += ["", f"Replay one: `{PROGRAM} repro CASE.json --target CHECKOUT` (CHECKOUT: SGLang with the fix; a "
                  f"covering case: its file from `{PROGRAM} judge-fix`).", ""]  # fmt: skip
    return lines


def _case_name(left: Left) -> str:
    """How the advisory names a left case: its input file's name, never a path of this machine."""
    if not left.where:
        return "(covering set)"
    return os.path.basename(left.where) if os.path.isfile(left.where) else "(a report's finding)"
