"""Write (or check) the release records from SGLang's wheels: ``python -m fuzz.engines.sglang.records.generate``.

    python -m fuzz.engines.sglang.records.generate WHEEL...          write <release>.json beside this module
    python -m fuzz.engines.sglang.records.generate --check WHEEL...  exit 1 where a record is not what its wheel gives

Each fact is read from the wheel's code by an AST scan (a line is where the scan finds the node, never typed);
the record also keeps a digest of each file it read, so a changed file is a changed record.  Exit status: 0 the
records are the wheels', 1 one differs (``--check``), 2 bad input (not an SGLang wheel, a file the scan needs
missing).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import KV_PROPERTIES, RECORDS_DIR, REQ_ATTRIBUTES, SCHEMA, SCHEMA_VERSION
from .attention import attention_modules_section, no_draft_extend_section
from .errors import RecordError, member_of

SCHEDULE_BATCH = "sglang/srt/managers/schedule_batch.py"
ALLOCATORS = "sglang/srt/mem_cache/allocator/"
WHEEL_NAME = re.compile(r"^sglang-(\d+\.\d+\.\d+)-[^/]*\.whl$")
DIGEST_CHARS = 16


def _by_line(lines: dict[str, int]) -> dict[str, int]:
    return dict(sorted(lines.items(), key=lambda item: (item[1], item[0])))


def _is_property(fn: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)


def req_section(source: str) -> dict[str, Any]:
    """Where ``Req`` keeps what the write path reads: ``runtime.request.Layout``'s fields.

    ``on_req``: each modeled attribute ``Req.__init__`` assigns on ``self``, at its first assignment (in the
    order ``ast.walk`` meets them); ``kv_fields``: every field of ``ReqKvInfo`` (a slots dataclass), in order;
    ``on_kv``: the modeled ones; ``kv_properties``: its modeled properties (their ``def`` lines).
    """
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    req = classes.get("Req")
    init = (
        None
        if req is None
        else next((f for f in req.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    )
    if req is None or init is None:
        raise RecordError(f"{SCHEDULE_BATCH} has no class Req with an __init__")
    assigned: dict[str, int] = {}
    for node in ast.walk(init):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                assigned.setdefault(t.attr, t.lineno)  # the statement's line: its target starts it
    kv = classes.get("ReqKvInfo")
    body = kv.body if kv is not None else []
    fields = {n.target.id: n.lineno for n in body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    properties = {f.name: f.lineno for f in body if isinstance(f, ast.FunctionDef) and _is_property(f)}
    return {
        "req_class": req.lineno,
        "req_init": init.lineno,
        "kv_class": None if kv is None else kv.lineno,
        "on_req": _by_line({k: v for k, v in assigned.items() if k in REQ_ATTRIBUTES}),
        "on_kv": _by_line({k: v for k, v in fields.items() if k in REQ_ATTRIBUTES}),
        "kv_properties": _by_line({k: v for k, v in properties.items() if k in KV_PROPERTIES}),
        "kv_fields": list(fields),
    }


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definitions(body: list[ast.stmt], name: str) -> list[Definition]:
    """The definitions of ``name`` in a body, also those under an ``if``/``try``/``with`` (not inside a def)."""
    found: list[Definition] = []
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found += [stmt] if stmt.name == name else []
            continue
        blocks = [getattr(stmt, b, []) for b in ("body", "orelse", "finalbody")]
        blocks += [h.body for h in getattr(stmt, "handlers", [])]
        for block in blocks:
            found += _definitions(block, name)
    return found


def definitions(tree: ast.Module, qualname: str) -> list[Definition]:
    """Every definition ``qualname`` (``f``, ``Class.method``) may name in the module, in source order."""
    scopes: list[ast.Module | Definition] = [tree]
    found: list[Definition] = []
    for part in qualname.split("."):
        found = [d for scope in scopes for d in _definitions(scope.body, part)]
        scopes = list(found)
    return sorted(found, key=lambda d: d.lineno)


STATEMENTS: dict[str, type[ast.stmt]] = {"assert": ast.Assert, "raise": ast.Raise}


def where_line(source: str, name: str, statement: str | None = None, says: str | None = None) -> int:
    """The line of ``name``'s first definition (Python's ``def``/``class`` line), or, with ``statement``, of the
    first such statement inside it whose text says ``says``."""
    found = definitions(ast.parse(source), name)
    if not found:
        raise RecordError(f"no definition of {name}")
    if statement is None:
        return found[0].lineno
    kind = STATEMENTS[statement]
    lines = sorted(
        s.lineno
        for d in found
        for s in ast.walk(d)
        if isinstance(s, kind) and (says is None or says in (ast.get_source_segment(source, s) or ""))
    )
    if not lines:
        raise RecordError(f"no {statement} saying {says!r} in {name}")
    return lines[0]


def release_of(wheel: Path) -> str:
    m = WHEEL_NAME.match(wheel.name)
    if m is None:
        raise RecordError(f"{wheel}: not an SGLang wheel (sglang-X.Y.Z-*.whl)")
    return m.group(1)


def where_section(read: Callable[[str], str], release: str) -> dict[str, int]:
    """The line of every ``Where`` of the release's row (``runtime.releases.RELEASES``), by its key."""
    from fuzz.engines.sglang.real.runtime.releases import RELEASES  # the engine's names (a heavy package)

    out: dict[str, int] = {}
    for field, where in RELEASES[release].wheres():
        anchor = where.anchor
        try:
            line = where_line(
                read(member_of(where.module)),
                where.name,
                anchor.statement if anchor else None,
                anchor.says if anchor else None,
            )
        except RecordError as e:
            raise RecordError(f"{field}: {member_of(where.module)}: {e}") from None
        out.setdefault(where.key, line)
    return out


def after_decode_section(source: str) -> dict[str, int]:
    """What ``ScheduleBatch.prepare_for_decode`` adds to each request after ``alloc_for_decode``: every modeled
    field of the request it increments (``req.FIELD +=``), in the order it does, with the line of its first."""
    found = definitions(ast.parse(source), "ScheduleBatch.prepare_for_decode")
    if not found:
        raise RecordError("no ScheduleBatch.prepare_for_decode")
    updates: dict[str, int] = {}
    for node in sorted(ast.walk(found[0]), key=lambda n: getattr(n, "lineno", 0)):
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.op, ast.Add)
            and isinstance(node.target, ast.Attribute)
            and node.target.attr in REQ_ATTRIBUTES
        ):
            updates.setdefault(node.target.attr, node.lineno)
    if not updates:
        raise RecordError("ScheduleBatch.prepare_for_decode increments no field of the request")
    return updates


def eagle_preclaims_bonus(read: Callable[[str], str], release: str) -> bool:
    """Whether the release's EAGLE decode entry pre-claims the bonus slot: it increments ``kv_committed_len``
    itself (``+= 1`` in the prepare, taken back at the accept), as 0.5.13-0.5.14's mixin does."""
    from fuzz.engines.sglang.real.runtime.releases import EAGLE, RELEASES

    entry = RELEASES[release].entries[EAGLE]
    found = definitions(ast.parse(read(member_of(entry.module))), entry.name)
    if not found:
        raise RecordError(f"no definition of {entry.name} in {member_of(entry.module)}")
    return any(
        isinstance(n, ast.AugAssign)
        and isinstance(n.op, ast.Add)
        and isinstance(n.target, ast.Attribute)
        and n.target.attr == "kv_committed_len"
        for n in ast.walk(found[0])
    )


def pool_allocators_section(read: Callable[[str], str], members: list[str]) -> dict[str, dict[str, Any]]:
    """Where each non-standard kind of pool's allocator class is (``runtime.releases.POOL_ALLOCATOR_NAMES``): the
    module of ``mem_cache/allocator/`` that defines it and the line of its ``class``; a kind whose class no module
    of the release defines is absent (the release does not ship it)."""
    from fuzz.engines.sglang.real.runtime.releases import POOL_ALLOCATOR_NAMES

    modules = sorted(m for m in members if re.fullmatch(re.escape(ALLOCATORS) + r"[a-z_0-9]+\.py", m))
    out: dict[str, dict[str, Any]] = {}
    for kind, cls in POOL_ALLOCATOR_NAMES.items():
        where = [(m, d.lineno) for m in modules for d in definitions(ast.parse(read(m)), cls)]
        if len(where) > 1:
            raise RecordError(f"{cls} is defined {len(where)} times in {ALLOCATORS}: {where}")
        if where:
            member, line = where[0]
            out[kind] = {"module": member.removeprefix(ALLOCATORS).removesuffix(".py"), "line": line}
    return out


def generate(wheel: Path) -> dict[str, Any]:
    """The record of ``wheel``'s release, read from its code."""
    release = release_of(wheel)
    read: dict[str, str] = {}
    trees: dict[str, ast.Module] = {}  # each member parsed once (the sections read its syntax, never change it)
    try:
        with zipfile.ZipFile(wheel) as z:

            def source(member: str) -> str:
                if member not in read:
                    try:
                        text = z.read(member).decode()
                    except KeyError:
                        raise RecordError(f"no {member} in the wheel") from None
                    try:
                        trees[member] = ast.parse(text, member)
                    except SyntaxError as e:
                        raise RecordError(f"{member} does not parse ({e.msg}, line {e.lineno})") from None
                    read[member] = text
                return read[member]

            req = req_section(source(SCHEDULE_BATCH))
            where = where_section(source, release)
            after = after_decode_section(source(SCHEDULE_BATCH))
            pools = pool_allocators_section(source, z.namelist())
            preclaims = eagle_preclaims_bonus(source, release)
            members = set(z.namelist())

            def parse(module: str) -> ast.Module | None:
                member = next((m for m in (member_of(module), member_of(module, True)) if m in members), None)
                if member is None:  # neither a module nor a package of the wheel
                    return None
                source(member)
                return trees[member]

            attention = attention_modules_section(parse)
            no_draft_extend = no_draft_extend_section(parse)
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise RecordError(f"{wheel}: cannot read it ({type(e).__name__}: {e})") from None
    except RecordError as e:
        raise RecordError(f"{wheel}: {e}") from None
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "release": release,
        "sources": {m: hashlib.sha256(read[m].encode()).hexdigest()[:DIGEST_CHARS] for m in sorted(read)},
        "req": req,
        "where": where,
        "after_decode": after,
        "pool_allocators": pools,
        "eagle_preclaims_bonus": preclaims,
        "attention_modules": attention,
        "no_draft_extend": no_draft_extend,
    }


def render(record: dict[str, Any]) -> str:
    """A record as its file holds it."""
    return json.dumps(record, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuzz.engines.sglang.records.generate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("wheels", nargs="+", type=Path, metavar="WHEEL", help="sglang-X.Y.Z-*.whl files")
    parser.add_argument("--check", action="store_true", help="compare with the committed records instead of writing")
    parser.add_argument("--records", type=Path, default=RECORDS_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    differs = 0
    for wheel in args.wheels:
        try:
            text = render(generate(wheel))
        except RecordError as e:
            print(f"records: error: {e}", file=sys.stderr)
            return 2
        path = args.records / f"{release_of(wheel)}.json"
        if not args.check:
            path.write_text(text)
            print(f"wrote {path}")
            continue
        committed = path.read_text() if path.is_file() else None
        if committed == text:
            print(f"same: {path.name} is what {wheel.name} gives")
            continue
        differs += 1
        print(f"DIFFERS: {path.name} is not what {wheel.name} gives (regenerate it, and review the change)")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
