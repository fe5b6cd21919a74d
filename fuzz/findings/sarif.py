"""SARIF 2.1.0 (``--sarif FILE``): findings shown by GitHub code scanning on the sizing code they indict.

One SARIF run (one tool, as code scanning wants), one result per root cause
(``Engine.root_causes``; a group no cause holds is a result of its own): the cause's
plainest variant stands for it (silent first, then by name), ``ruleId`` is
the property it breaks, the message is the cause (its heading, fix and
variants) above that variant's COUNTEREXAMPLE block with its repro line
(``render.counterexample_block``), and the location is the code it
indicts as the finding's engine names it (``Engine.locations``; SGLang:
its sizing function, or the builder of a pool that sizes its own row), the
first as the location and the others related.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz.common.pysource import parsed
from fuzz.tables import rule_text
from fuzz.tables.declared import TABLE_CASE

from .kinds import Property
from .model import Finding
from .render import counterexample_block, lead
from .report import Command

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "kvrow-fuzz"
FINGERPRINT = "kvrowGroup/v1"  # target + signature: the same bug group is the same alert from run to run
# A root cause's alert: the portable target + the cause's baseline identity (``baseline.identity``): a known fix's
# key, a new cause's function, term and code digest. A new bug in a function with a known one is a new alert.
CAUSE_FINGERPRINT = "kvrowCause/v2"


@dataclass(frozen=True)
class SourceLine:
    """A line of a sizing source: an artifact URI as code scanning reads it, a 1-based line, the function there."""

    uri: str
    line: int
    function: str

    def to_sarif(self) -> dict[str, Any]:
        return {"physicalLocation": {"artifactLocation": {"uri": self.uri}, "region": {"startLine": self.line}}}


def def_lines(source: str) -> dict[str, int]:
    """Top-level ``def NAME`` -> its line, in a Python source (empty if it does not parse)."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return {}
    return {n.name: n.lineno for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def table_locations(f: Finding, cwd: str | None = None, target: Any = None) -> list[SourceLine]:
    """A finding on a table checked on its own points at the table's width functions on its target, or at its
    property's own code (``Table.blame_of``; ``fuzz.tables.causes``)."""
    from fuzz.tables import table
    from fuzz.tables.causes import code_lines

    t = table(f.case["table"])
    return [
        SourceLine(artifact_uri(c.shown, cwd) if c.local else c.shown, line, c.ref.qualname)
        for c, line in code_lines(t, target, t.blame_of.get(f.violation.prop))
    ]


def artifact_uri(path: str, cwd: str | None = None) -> str:
    """A local file as code scanning wants it: relative to the working directory, else an absolute file URI."""
    p = Path(os.path.abspath(path))
    base = Path(os.path.abspath(cwd or os.getcwd()))
    if p == base or base in p.parents:
        return p.relative_to(base).as_posix()
    return p.as_uri()


Located = tuple[Finding, Any, Any]  # (a finding, its Target or None, the Cause it stands for or None)


def by_cause(pairs: list[tuple[Finding, Any]], causes: dict[str, list[Any]]) -> list[Located]:
    """One entry per root cause (its lead, ``render.lead``: its plainest group's finding stands for it), then each
    group no cause of its target holds."""
    out: list[Located] = []
    held: set[tuple[str, str]] = set()
    for spec, found in causes.items():
        mine = [(f, t) for f, t in pairs if f.target == spec]
        for cause in found:
            groups = cause.groups
            members = [(f, t) for f, t in mine if f.signature in groups]
            if not members:
                continue
            first = lead(cause, {m.signature: m for m, _ in members})  # the same group the text leads with
            f, t = next((m, t) for m, t in members if m is first)
            out.append((f, t, cause))
            held |= {(spec, str(m.signature)) for m, _ in members}
    out += [(f, t, None) for f, t in pairs if (f.target, str(f.signature)) not in held]
    return out


def sarif_result(
    f: Finding, target: Any, rule_index: dict[Property, int], cwd: str | None = None, cause: Any = None
) -> dict[str, Any]:
    """One root cause (or one bug group) as a SARIF result, located at the code it indicts (a pool's builder
    first), its variants named."""
    from fuzz.engines import load

    prop = Property(f.violation.prop)
    where: list[SourceLine] = table_locations(f, cwd, target) if f.kind is TABLE_CASE else []
    if target is not None and f.kind is not TABLE_CASE:
        where = load(f.engine).locations(target, f, cwd)
    result: dict[str, Any] = {
        "ruleId": prop.value,
        "ruleIndex": rule_index[prop],
        "level": "error",
        "message": {"text": counterexample_block(f)},
        "locations": [where[0].to_sarif()] if where else [],
        "partialFingerprints": {FINGERPRINT: f"{f.target}|{f.signature}"},
        "properties": {
            "signature": str(f.signature),
            "target": f.target,
            "function": where[0].function if where else None,
            "repro": f.repro,
            "caseFile": f.case_path,
        },
    }
    if cause is not None:
        groups = sorted(cause.groups)
        result["message"]["text"] = (
            f"ROOT CAUSE {cause.heading()}\nfix: {cause.fix}\nvariants ({len(groups)}): "
            + ", ".join(str(s) for s in groups)
            + "\n\n"
            + counterexample_block(f)
        )
        result["partialFingerprints"] = cause_fingerprint(f, target, cause)
        result["properties"].update(rootCause=cause.label, variants=[str(s) for s in groups])
        if cause.baseline_state:
            result["baselineState"] = cause.baseline_state
    if len(where) > 1:
        result["relatedLocations"] = [
            {"id": i, **w.to_sarif(), "message": {"text": f"{w.function}()"}} for i, w in enumerate(where[1:], 1)
        ]
    return result


def cause_fingerprint(f: Finding, target: Any, cause: Any) -> dict[str, str]:
    """A root cause's partial fingerprint: its identity on the target as a baseline names both (a cause without
    identity, unexplained: its plainest group's, as a group's own alert)."""
    from .baseline import identity, portable_target

    ident = identity(cause)
    if ident is None:
        return {FINGERPRINT: f"{f.target}|{f.signature}"}
    return {CAUSE_FINGERPRINT: f"{portable_target(target) if target is not None else f.target}|{ident}"}


def sarif_log(command: Command, findings: Iterable[Any], cwd: str | None = None) -> dict[str, Any]:
    """The SARIF log of a command: ``findings`` are (finding, its resolved Target or None[, its Cause]), one
    result each."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool_version = version("kvrow-fuzz")
    except PackageNotFoundError:
        tool_version = "0"
    props = list(Property)
    rule_index = {p: i for i, p in enumerate(props)}
    rules = [
        {
            "id": p.value,
            "name": p.name.title().replace("_", ""),
            "shortDescription": {"text": rule_text(p)},
            "defaultConfiguration": {"level": "error"},
        }
        for p in props
    ]
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": tool_version,
                        "semanticVersion": tool_version,
                        "rules": rules,
                    }
                },
                "automationDetails": {"id": f"{TOOL_NAME}/{command.value}/"},
                "results": [
                    sarif_result(entry[0], entry[1], rule_index, cwd, entry[2] if len(entry) > 2 else None)
                    for entry in findings
                ],
            }
        ],
    }


def sarif_text(command: Command, findings: Iterable[Any]) -> str:
    """The command's SARIF log as the text ``fuzz.findings.output`` writes."""
    return json.dumps(sarif_log(command, findings), indent=2) + "\n"


def with_targets(findings: Iterable[Finding], targets: Iterable[Any]) -> list[tuple[Finding, Any]]:
    """Each finding with the resolved target it was found on (matched by spec), for ``sarif_text``."""
    by_spec = {t.spec: t for t in targets}
    return [(f, by_spec.get(f.target)) for f in findings]
