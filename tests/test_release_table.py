"""Every line of the release table (``fuzz.engines.sglang.real.runtime.releases``) is where it says, in the real wheel.

A ``Where(module, name, release)`` of ``RELEASES`` names, in that release's
wheel (its line: the release record's, ``fuzz.engines.sglang.records``), the
line of ``def name`` / ``class Name`` (``Class.method``: the
method's ``def``; a decorated one: its ``def`` line, as Python numbers it),
except the two guards, whose line is the guard statement itself inside the
named function: ``assert`` (``eagle_guard``) or ``raise`` (``uno_guard``),
which ``writepath._guard`` matches against the traceback's line (within 3
lines: a multi-line statement) and whose message starts with the words of
``writepath.GUARD_WORDS``.  The record's other facts are held the same way:
``pool_allocators`` (each kind's allocator ``class``, in the module it names,
and no kind the release ships left out) and ``after_decode`` (each field
``prepare_for_decode`` increments, at its line, and none left out).  This scan
is the test's own, apart from the record generator's.

The pinned releases (``hermetic.PINNED_RELEASES``) run in the default tier
from the real wheels ``./kvrow test`` fetches at set-up (``real_wheel_dir``),
skipping, saying so, where one is absent; the other releases are the network
tier's and read the user's wheel cache (``real_wheel_cache``; nothing is
downloaded here).
"""

from __future__ import annotations

import ast
import dataclasses
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermetic import PINNED_RELEASES, missing_wheel, pinned_wheel, real_wheel_dir

from fuzz.engines.sglang.real.runtime.releases import POOL_ALLOCATOR_NAMES, RELEASES, Release, Where
from fuzz.engines.sglang.real.runtime.writepath import EAGLE_GUARD, GUARD_WORDS, UNO_GUARD
from fuzz.engines.sglang.records import REQ_ATTRIBUTES, record
from fuzz.engines.sglang.records.generate import definitions

EVERY_RELEASE = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]
# The Where fields whose line is a guard statement, not a definition: (the statement's type, its message's words).
GUARDS: dict[str, tuple[type[ast.stmt], str]] = {
    "eagle_guard": (ast.Assert, GUARD_WORDS[EAGLE_GUARD]),
    "uno_guard": (ast.Raise, GUARD_WORDS[UNO_GUARD]),
}
SCHEDULE_BATCH = "sglang/srt/managers/schedule_batch.py"


def release_wheel(version: str, request: pytest.FixtureRequest) -> Path:
    """The real wheel of ``version``: the pinned ones where ``./kvrow test`` put them, the others the user's cache."""
    from fuzz.engines.sglang.real.wheels import cache_dir, cached_wheel

    if version in PINNED_RELEASES:
        found, where = pinned_wheel(version), str(real_wheel_dir())
    else:
        request.getfixturevalue("real_wheel_cache")
        cached = cached_wheel(version)
        found, where = (Path(cached) if cached else None), cache_dir()
    if found is None:
        pytest.skip(missing_wheel(version, where) + " (this test downloads nothing)")
    return found


def member_of(module: str) -> str:
    """``sglang.srt.mem_cache.allocation`` -> ``sglang/srt/mem_cache/allocation.py``."""
    return module.replace(".", "/") + ".py"


def wheres(release: Release) -> Iterator[tuple[str, Where]]:
    """Every ``Where`` of a release's row, with the field that holds it (``entries[eagle]`` for a dict's)."""
    for f in dataclasses.fields(release):
        value = getattr(release, f.name)
        if isinstance(value, Where):
            yield f.name, value
        elif isinstance(value, dict):
            yield from ((f"{f.name}[{k}]", w) for k, w in value.items() if isinstance(w, Where))


def where_problem(field: str, where: Where, source: str) -> str | None:
    """Why ``where`` does not name its line in ``source`` (None: it does)."""
    lines = source.splitlines()
    if not 1 <= where.line <= len(lines):
        return f"line {where.line} is past the end of the file ({len(lines)} lines)"
    found = definitions(ast.parse(source), where.name)
    if not found:
        return f"no definition of {where.name}"
    if field in GUARDS:
        kind, words = GUARDS[field]
        stmts = [s for d in found for s in ast.walk(d) if isinstance(s, kind) and s.lineno == where.line]
        if not stmts:
            text = lines[where.line - 1].strip()
            return f"line {where.line} is no {kind.__name__.lower()} statement of {where.name}: {text!r}"
        if not any(words in (ast.get_source_segment(source, s) or "") for s in stmts):
            return f"the {kind.__name__.lower()} at line {where.line} does not say {words!r}"
        return None
    starts = sorted(d.lineno for d in found)
    if where.line not in starts:
        return f"{where.name} is defined at line {', '.join(map(str, starts))}, not {where.line}"
    return None


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_every_where_names_its_line_in_the_wheel(version: str, request: pytest.FixtureRequest) -> None:
    wrong = []
    with zipfile.ZipFile(release_wheel(version, request)) as z:
        names = set(z.namelist())
        for field, where in wheres(RELEASES[version]):
            member = member_of(where.module)
            if member not in names:
                wrong.append(f"{field}: {where.cite(version)}: no {member} in the wheel")
            elif problem := where_problem(field, where, z.read(member).decode("utf-8")):
                wrong.append(f"{field}: {where.cite(version)}: {problem}")
    assert not wrong, f"sglang {version}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_every_pool_allocator_class_is_at_its_line(version: str, request: pytest.FixtureRequest) -> None:
    """Each kind's class is defined at the record's line of the module it names, and every kind whose class a module
    of ``mem_cache/allocator/`` defines is in the record."""
    wrong, shipped = [], set()
    pools = record(version)["pool_allocators"]
    with zipfile.ZipFile(release_wheel(version, request)) as z:
        for member in z.namelist():
            if member.startswith("sglang/srt/mem_cache/allocator/") and member.endswith(".py"):
                tree = ast.parse(z.read(member).decode("utf-8"))
                shipped |= {kind for kind, cls in POOL_ALLOCATOR_NAMES.items() if definitions(tree, cls)}
        for kind, where in pools.items():
            member = f"sglang/srt/mem_cache/allocator/{where['module']}.py"
            cls = POOL_ALLOCATOR_NAMES[kind]
            starts = sorted(d.lineno for d in definitions(ast.parse(z.read(member).decode("utf-8")), cls))
            if where["line"] not in starts:
                wrong.append(f"{kind}: {cls} in {member} is at {starts or 'no line'}, not {where['line']}")
    assert set(pools) == shipped, f"sglang {version}: the record's kinds {sorted(pools)}, the wheel's {sorted(shipped)}"
    assert not wrong, f"sglang {version}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_every_after_decode_update_is_at_its_line(version: str, request: pytest.FixtureRequest) -> None:
    """Each (field, line) is a ``+=`` of that field in ``ScheduleBatch.prepare_for_decode``, and every field of the
    request it increments is one."""
    with zipfile.ZipFile(release_wheel(version, request)) as z:
        source = z.read(SCHEDULE_BATCH).decode("utf-8")
    (prepare,) = definitions(ast.parse(source), "ScheduleBatch.prepare_for_decode")
    updates = {
        (n.target.attr, n.lineno)
        for n in ast.walk(prepare)
        if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and isinstance(n.target, ast.Attribute)
    }
    lines = record(version)["after_decode"]
    missing = [(field, line) for field, line in lines.items() if (field, line) not in updates]
    assert not missing, f"sglang {version}: no ``+=`` of the field at the line: {missing}"
    assert {f for f, _ in updates if f in REQ_ATTRIBUTES} == set(lines), f"sglang {version}: a field left out"
