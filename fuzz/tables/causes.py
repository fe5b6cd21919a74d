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
from typing import Any

from fuzz.causes.identity import digest
from fuzz.common.pysource import parsed
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding

from .declared import Code, CodeRef, Table, table

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


def code_of(t: Table, target: Any = None, refs: tuple[CodeRef, ...] | None = None) -> tuple[Code, ...]:
    """Each function ``t``'s findings indict on ``target`` (``Table.code_of``), else ``Table.indicted`` as this
    machine's files hold it; ``refs``: those functions instead (a property's ``Table.blame_of``)."""
    refs = t.indicted if refs is None else refs
    if t.code_of is not None and target is not None:
        return t.code_of(target, refs)
    out = []
    for ref in refs:
        path = code_file(ref)
        out.append(Code(ref, str(path) if path else ref.path, path.read_text() if path else None))
    return tuple(out)


def code_lines(t: Table, target: Any = None, refs: tuple[CodeRef, ...] | None = None) -> list[tuple[Code, int]]:
    """Each function ``t``'s findings indict on ``target`` that can be read and found, with its ``def`` line."""
    out = []
    for code in code_of(t, target, refs):
        line = def_line(code.text, code.ref.qualname) if code.text is not None else None
        if line is not None:
            out.append((code, line))
    return out


def table_cause(t: Table, findings: list[Finding], target: Any = None, prop: Property | None = None) -> Cause:
    """The root cause of ``findings`` on ``t`` (on ``target``: its code as it holds it): its parts sized narrower
    than its accesses reach, or (``blame``) an access outside the part its owner holds, or (``prop``, one of
    ``blame_of``) that property's own code."""
    refs = t.blame_of[prop] if prop is not None else None
    codes = code_of(t, target, refs)
    digests: dict[tuple[str, str], str | None] = {}
    for c in codes:
        digests[c.ref.path, c.ref.qualname] = digest(c.text, c.ref.qualname) if c.text is not None else None
    named = ", ".join(f"{c.ref.qualname}()" for c in codes) or "its width"
    if prop is not None:  # a copy from outside the owner's part of its source: the builder's
        key = f"{t.name}-{prop.value}"
        title = f"{t.name}: its builders copy entries from outside their owner's part of the source ({named})"
        fix = f"copy into {t.name} only from its owner's part of the source (its own row, at the source's stride)"
    elif t.blame:  # the parts are right; what an access reaches is not
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
        where=[f"{c.ref.path}:{line} {c.ref.qualname}" for c, line in code_lines(t, target, refs)],
        code=[(c.ref.path, c.ref.qualname) for c in codes],
        digests=digests,
    )


def table_causes(findings: list[Finding], target: Any = None) -> list[Cause]:
    """One cause per table the findings (table cases) are on, and one per property of its ``blame_of`` they break,
    in the order first met (on ``target``)."""
    by_cause: dict[tuple[str, Property | None], list[Finding]] = {}
    for f in findings:
        t = table(f.case["table"])
        prop = f.violation.prop if f.violation.prop in t.blame_of else None
        by_cause.setdefault((t.name, prop), []).append(f)
    return [table_cause(table(name), found, target, prop) for (name, prop), found in by_cause.items()]
