"""The root cause of a table's findings, and the code a finding on it indicts: the table's width functions.

A table checked on its own has one place its bug can be: the code that sizes
each owner's part narrower than its writers reach (``Width.code``), or where
a table says so (``Table.blame``: an allocator's ownership) that code.  So
its findings have one root cause per table, a new one, located at that code
and known by it: each function's code digest (``fuzz.causes.identity``), so a
baseline knows it until that code changes, and a new bug in it is new.
"""

from __future__ import annotations

import ast
from pathlib import Path

from fuzz.causes.identity import digest
from fuzz.common.pysource import parsed
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.model import Finding

from .declared import CodeRef, Table, table

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def code_file(ref: CodeRef) -> Path | None:
    """The file a table's code reference names, where this machine has it: absolute, else under the working
    directory, else under this project; None where neither holds it (no location, no identity)."""
    path = Path(ref.path)
    for candidate in (path,) if path.is_absolute() else (Path.cwd() / path, PROJECT_ROOT / path):
        if candidate.is_file():
            return candidate
    return None


def def_line(source: str, qualname: str) -> int | None:
    """The line of ``def NAME`` (or ``Class.method``) in ``source``; None where it has none."""
    try:
        body = parsed(source).body
    except (SyntaxError, ValueError, RecursionError):
        return None
    *classes, name = qualname.split(".")
    for cls in classes:
        body = next((n.body for n in body if isinstance(n, ast.ClassDef) and n.name == cls), [])
    return next(
        (n.lineno for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name), None
    )


def code_lines(t: Table) -> list[tuple[CodeRef, Path, int]]:
    """Each function ``t``'s findings indict (``Table.indicted``) this machine has, with its file and line."""
    out = []
    for ref in t.indicted:
        path = code_file(ref)
        line = def_line(path.read_text(), ref.qualname) if path is not None else None
        if path is not None and line is not None:
            out.append((ref, path, line))
    return out


def table_cause(t: Table, findings: list[Finding]) -> Cause:
    """The one root cause of ``findings`` on ``t``: its parts sized narrower than its accesses reach, or (``blame``)
    an access outside the part its owner holds."""
    digests: dict[tuple[str, str], str | None] = {}
    for ref in t.indicted:
        path = code_file(ref)
        digests[ref.path, ref.qualname] = digest(path.read_text(), ref.qualname) if path is not None else None
    named = ", ".join(f"{ref.qualname}()" for ref in t.indicted) or "its width"
    if t.blame:  # the parts are right; what an access reaches is not
        key, title = f"{t.name}-parts", f"{t.name}: an access reaches outside its owner's part ({named})"
        fix = f"keep each access of {t.name} within the part its owner holds when it runs"
    else:
        key, title = f"{t.name}-width", f"{t.name}'s parts are sized narrower than its accesses reach ({named})"
        fix = f"size each part of {t.name} for the furthest access its writers and readers make"
    return Cause(
        key=key,  # a baseline term (a key: no dots)
        kind=CauseKind.PIECE,
        bug="new",
        title=title,
        fix=fix,
        table=t.name,
        variants=sorted({f.signature for f in findings}),
        where=[f"{ref.path}:{line} {ref.qualname}" for ref, _, line in code_lines(t)],
        code=[(ref.path, ref.qualname) for ref in t.indicted],
        digests=digests,
    )


def table_causes(findings: list[Finding]) -> list[Cause]:
    """One cause per table the findings (table cases) are on, in the order first met."""
    by_table: dict[str, list[Finding]] = {}
    for f in findings:
        by_table.setdefault(f.case["table"], []).append(f)
    return [table_cause(table(name), found) for name, found in by_table.items()]
