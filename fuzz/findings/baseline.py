"""A baseline of known findings, as linters keep one: what a target's root causes were, so CI fails only on new ones.

An entry is (property, SGLang's qualified function or builder, repository
path): ``write-within-row`` in ``KVCacheConfigurator._init_unified_mamba_pools``
of ``python/sglang/srt/mem_cache/kv_cache_configurator.py``. Never a line
number (code moves) nor a group label (a new variant of a known cause is the
same bug). A cause is *known* when every entry it makes is in the baseline;
a new variant of it is listed under it and does not fail; an entry no cause
makes any more is *fixed*.

The file is data: ``{"schema": "kvrow-fuzz/baseline", "schema_version": 1,
"target": SPEC, "entries": [{"property", "function", "path"}, ...]}``,
validated when read (``read_baseline``: exact keys and types, known
properties, bounded sizes), published as ``baseline.schema.json``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .cause import Cause
from .kinds import Property

SCHEMA = "kvrow-fuzz/baseline"
SCHEMA_VERSION = 1
MAX_ENTRIES = 10_000
MAX_BYTES = 4 << 20
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}")  # a qualified function: Class.method
_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,299}")  # a repository path, relative, no ..


class BaselineError(ValueError):
    """A baseline file that is not one (one line; the command exits 2)."""


@dataclass(frozen=True, order=True)
class Entry:
    property: str
    function: str
    path: str

    def __str__(self) -> str:
        return f"{self.property} in {self.function} ({self.path})"


# A write past the row and the neighbour's changed columns are one write seen twice: one entry.
SAME_WRITE = {Property.NEIGHBOUR_ROWS_UNTOUCHED.value: Property.WRITE_WITHIN_ROW.value}


def entries_of(cause: Cause) -> set[Entry]:
    """The entries a cause makes: each property its variants break (``SAME_WRITE`` folded), in each function
    it lives in."""
    props = {SAME_WRITE.get(p, p) for p in cause.properties}
    return {Entry(p, function, path) for p in props for path, function in cause.code}


def document(target: str, causes: list[Cause]) -> dict[str, Any]:
    entries = sorted(set().union(*(entries_of(c) for c in causes))) if causes else []
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "target": target,
        "entries": [{"property": e.property, "function": e.function, "path": e.path} for e in entries],
    }


def text(target: str, causes: list[Cause]) -> str:
    return json.dumps(document(target, causes), indent=2, sort_keys=True) + "\n"


def parse(data: Any, where: str) -> frozenset[Entry]:
    """The entries of a baseline document; BaselineError (one line) for anything else."""
    if not isinstance(data, dict) or set(data) != {"schema", "schema_version", "target", "entries"}:
        raise BaselineError(f"{where}: not a kvrow-fuzz baseline (keys schema, schema_version, target, entries)")
    if data["schema"] != SCHEMA or type(data["schema_version"]) is not int or data["schema_version"] != SCHEMA_VERSION:
        raise BaselineError(f"{where}: not a {SCHEMA} version {SCHEMA_VERSION} file")
    if not isinstance(data["target"], str) or len(data["target"]) > 4096:
        raise BaselineError(f"{where}: target must be a target spec")
    raw = data["entries"]
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        raise BaselineError(f"{where}: entries must be a list of at most {MAX_ENTRIES}")
    known = {p.value for p in Property}
    out = set()
    for i, e in enumerate(raw, 1):
        if not isinstance(e, dict) or set(e) != {"property", "function", "path"}:
            raise BaselineError(f"{where}: entry {i} must have exactly property, function, path")
        prop, function, path = e["property"], e["function"], e["path"]
        if prop not in known:
            raise BaselineError(f"{where}: entry {i}: unknown property {str(prop)[:60]!r}")
        if not isinstance(function, str) or not _NAME.fullmatch(function):
            raise BaselineError(f"{where}: entry {i}: function must be a qualified name")
        if not isinstance(path, str) or not _PATH.fullmatch(path) or ".." in path.split("/"):
            raise BaselineError(f"{where}: entry {i}: path must be a relative repository path")
        out.add(Entry(prop, function, path))
    return frozenset(out)


@dataclass
class Judged:
    """Causes against a baseline: new ones fail, known ones are listed, fixed entries reported."""

    new: list[Cause] = field(default_factory=list)
    known: list[Cause] = field(default_factory=list)
    fixed: list[Entry] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "new": [c.key for c in self.new],
            "known": [c.key for c in self.known],
            "fixed": [str(e) for e in self.fixed],
        }


def judge(causes: list[Cause], baseline: frozenset[Entry]) -> Judged:
    """Which causes the baseline knows (every entry they make is in it), and which of its entries none makes."""
    out = Judged()
    made: set[Entry] = set()
    for c in causes:
        mine = entries_of(c)
        made |= mine
        known = bool(mine) and mine <= baseline
        c.baseline_state = "unchanged" if known else "new"
        (out.known if known else out.new).append(c)
    out.fixed = sorted(baseline - made)
    return out


def judged_lines(j: Judged) -> list[str]:
    """What a command prints after its causes when given a baseline."""
    lines = [f"baseline: {len(j.new)} new root cause(s), {len(j.known)} known, {len(j.fixed)} fixed entr(ies)"]
    lines += [f"  known: {c.label} ({len(c.variants)} variant(s))" for c in j.known]
    lines += [f"  NEW: {c.label}: {c.title}" for c in j.new]
    lines += [f"  fixed: {e}" for e in j.fixed]
    return lines
