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
from pathlib import Path
from typing import Any

from . import KV_PROPERTIES, RECORDS_DIR, REQ_ATTRIBUTES, SCHEMA, SCHEMA_VERSION

SCHEDULE_BATCH = "sglang/srt/managers/schedule_batch.py"
WHEEL_NAME = re.compile(r"^sglang-(\d+\.\d+\.\d+)-[^/]*\.whl$")
DIGEST_CHARS = 16


class RecordError(Exception):
    """A wheel the generator cannot read a record from (one line)."""


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


def release_of(wheel: Path) -> str:
    m = WHEEL_NAME.match(wheel.name)
    if m is None:
        raise RecordError(f"{wheel}: not an SGLang wheel (sglang-X.Y.Z-*.whl)")
    return m.group(1)


def generate(wheel: Path) -> dict[str, Any]:
    """The record of ``wheel``'s release, read from its code."""
    release = release_of(wheel)
    try:
        with zipfile.ZipFile(wheel) as z:
            source = z.read(SCHEDULE_BATCH).decode()
    except (OSError, zipfile.BadZipFile, KeyError, UnicodeDecodeError) as e:
        raise RecordError(f"{wheel}: cannot read {SCHEDULE_BATCH} ({type(e).__name__}: {e})") from None
    try:
        req = req_section(source)
    except SyntaxError as e:
        raise RecordError(f"{wheel}: {SCHEDULE_BATCH} does not parse ({e.msg}, line {e.lineno})") from None
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "release": release,
        "sources": {SCHEDULE_BATCH: hashlib.sha256(source.encode()).hexdigest()[:DIGEST_CHARS]},
        "req": req,
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
