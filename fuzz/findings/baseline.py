"""A baseline of known findings, as linters keep one: what a target's root causes were, so CI fails only on new ones.

An entry is (property, SGLang's qualified function or builder, repository
path): ``write-within-row`` in ``KVCacheConfigurator._init_unified_mamba_pools``
of ``python/sglang/srt/mem_cache/kv_cache_configurator.py`` (a known bug outside
SGLang's sizing surface: its fix in ``allocator_model/known_bugs.py``). Never a line
number (code moves) nor a group label (a new variant of a known cause is the
same bug). A cause is *known* when every entry it makes is in the baseline;
a new variant of it is listed under it and does not fail; an entry no cause
makes any more is *fixed*.

The file is data: ``{"schema": "kvrow-fuzz/baseline", "schema_version": 1,
"target": SPEC, "entries": [{"property", "function", "path"}, ...]}``,
validated when read (``read``: exact keys and types, known properties,
patterns, bounded sizes), published as ``baseline.schema.json``. The one
format of every list of known findings (``run --baseline``, ``matrix
--expect``, the Atheris entry's ``KVROW_FUZZ_BASELINE``), so a few fields
are optional: the document's ``releases`` (the SGLang releases it covers;
absent: its target's, ``sglang==X.Y.Z``), ``description``, and per entry
``releases`` (where it is expected; absent: every release the document
covers) and ``required`` (true: a release of it where no cause makes it is
reported, ``matrix``'s MISSING; default false). A file without them means
what it always meant.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .cause import Cause, CauseKind
from .kinds import Property

SCHEMA = "kvrow-fuzz/baseline"
SCHEMA_VERSION = 1
MAX_ENTRIES = 10_000
MAX_RELEASES = 256  # releases a document or an entry lists
MAX_BYTES = 4 << 20
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}")  # a qualified function: Class.method
_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,299}")  # a repository path, relative, no ..
_RELEASE = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}")  # an SGLang release X.Y.Z
_TARGET_RELEASE = re.compile(r"sglang==([0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4})")  # a target that is one release
KEYS = ("schema", "schema_version", "target", "entries")
OPTIONAL_KEYS = ("releases", "description")
ENTRY_KEYS = ("property", "function", "path")
OPTIONAL_ENTRY_KEYS = ("releases", "required")
MAX_DESCRIPTION = 2000


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


# Where a known fix is catalogued: a known bug whose code SGLang's sizing surface does not hold (#35265 lives
# in the DFLASH decode write path) is keyed by its fix there, never by its groups.
KNOWN_FIXES_PATH = "allocator_model/known_bugs.py"


def code_of(cause: Cause) -> list[tuple[str, str]]:
    """(path, qualified function) of the code a cause lives in; a known bug located nowhere in SGLang's code:
    its fix in the catalogue (``dflash_page_rounding`` of ``KNOWN_FIXES_PATH``); an unexplained cause: none."""
    if cause.code or cause.kind is not CauseKind.KNOWN:
        return cause.code
    return [(KNOWN_FIXES_PATH, cause.key.replace("-", "_"))]


def entries_of(cause: Cause) -> set[Entry]:
    """The entries a cause makes: each property its variants break (``SAME_WRITE`` folded), in each function
    it lives in (``code_of``)."""
    props = {SAME_WRITE.get(p, p) for p in cause.properties}
    return {Entry(p, function, path) for p in props for path, function in code_of(cause)}


def is_known(cause: Cause, entries: frozenset[Entry]) -> bool:
    """Whether the baseline knows the cause: it makes entries, each of them in ``entries``."""
    mine = entries_of(cause)
    return bool(mine) and mine <= entries


def release_key(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in release.split("."))


def _entry_json(e: Entry) -> dict[str, Any]:
    return {"property": e.property, "function": e.function, "path": e.path}


def made_by(causes: Iterable[Cause]) -> set[Entry]:
    """Every entry the causes make."""
    return set().union(*(entries_of(c) for c in causes))


def document(target: str, causes: list[Cause]) -> dict[str, Any]:
    """The document of one target's causes (its entries expected on that target only)."""
    entries = [_entry_json(e) for e in sorted(made_by(causes))]
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "target": target, "entries": entries}


def releases_document(target: str, found: Mapping[str, Mapping[Entry, bool]], description: str = "") -> dict[str, Any]:
    """A document over releases: ``found`` is release -> {entry: required there}; one item per entry and
    requiredness, with the releases where it is so (an entry required in some releases and not others: two)."""
    where: dict[tuple[Entry, bool], set[str]] = {}
    for release, entries in found.items():
        for e, required in entries.items():
            where.setdefault((e, required), set()).add(release)
    items = [
        {**_entry_json(e), "releases": sorted(rs, key=release_key), "required": required}
        for (e, required), rs in sorted(where.items(), key=lambda kv: (kv[0][0], not kv[0][1]))
    ]
    doc = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "target": target,
        "releases": sorted(found, key=release_key),
        "entries": items,
    }
    return {**doc, "description": description} if description else doc


def text(target: str, causes: list[Cause]) -> str:
    return dumps(document(target, causes))


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Expected:
    """What one release must and may show: the entries a cause there may make, and those one must."""

    entries: frozenset[Entry] = frozenset()
    required: frozenset[Entry] = frozenset()


@dataclass(frozen=True)
class Known:
    """A baseline document, read: its entries, and where each is expected (and required)."""

    target: str
    releases: tuple[str, ...]  # the releases it covers (its own list, else its target's and its entries')
    at: dict[str, Expected] = field(default_factory=dict)  # release -> what is expected there
    entries: frozenset[Entry] = frozenset()  # every entry, wherever expected (what ``run --baseline`` knows)

    def covers(self, release: str) -> bool:
        return release in self.releases

    def expected(self, release: str) -> Expected:
        return self.at.get(release, Expected())


def target_release(target: str) -> tuple[str, ...]:
    """The release a target spec names (``sglang==0.5.18``: ``("0.5.18",)``), else none."""
    m = _TARGET_RELEASE.fullmatch(target.strip())
    return (m.group(1),) if m else ()


def load(path: str, what: str = "baseline", max_bytes: int = MAX_BYTES) -> Known:
    """The baseline in the file ``path`` (``what`` names it in errors: ``--expect``), read within ``max_bytes``;
    BaselineError (one line) for a file that cannot be read or is not one."""
    from fuzz.common.jsonfile import JsonFileError, read_json

    try:
        data = read_json(path, max_bytes, what)
    except JsonFileError as e:
        raise BaselineError(str(e)) from None
    return read(data, f"{what} {path}")


def parse(data: Any, where: str) -> frozenset[Entry]:
    """The entries of a baseline document, wherever expected; BaselineError (one line) for anything else."""
    return read(data, where).entries


def read(data: Any, where: str) -> Known:
    """A baseline document, checked field by field as the schema does; BaselineError (one line) for anything else."""
    if not isinstance(data, dict) or not set(KEYS) <= set(data) or not set(data) <= {*KEYS, *OPTIONAL_KEYS}:
        raise BaselineError(
            f"{where}: not a kvrow-fuzz baseline (keys {', '.join(KEYS)}; optional {', '.join(OPTIONAL_KEYS)})"
        )
    if data["schema"] != SCHEMA or type(data["schema_version"]) is not int or data["schema_version"] != SCHEMA_VERSION:
        raise BaselineError(f"{where}: not a {SCHEMA} version {SCHEMA_VERSION} file")
    target = data["target"]
    if not isinstance(target, str) or len(target) > 4096:
        raise BaselineError(f"{where}: target must be a target spec")
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise BaselineError(f"{where}: description must be a text of at most {MAX_DESCRIPTION} characters")
    declared = _releases(data["releases"], f"{where}: releases") if "releases" in data else None
    raw = data["entries"]
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        raise BaselineError(f"{where}: entries must be a list of at most {MAX_ENTRIES}")
    listed = [_item(e, f"{where}: entry {i}", declared) for i, e in enumerate(raw, 1)]
    releases = (
        declared if declared is not None else {*target_release(target), *(r for _, rs, _ in listed for r in rs or ())}
    )
    at: dict[str, tuple[set[Entry], set[Entry]]] = {r: (set(), set()) for r in releases}
    for entry, rs, required in listed:
        for r in releases if rs is None else rs:
            at[r][0].add(entry)
            if required:
                at[r][1].add(entry)
    return Known(
        target,
        tuple(sorted(releases, key=release_key)),
        {r: Expected(frozenset(a), frozenset(b)) for r, (a, b) in at.items()},
        frozenset(e for e, _, _ in listed),
    )


def _releases(items: Any, where: str) -> frozenset[str]:
    """A list of 1 to ``MAX_RELEASES`` distinct releases X.Y.Z."""
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_RELEASES:
        raise BaselineError(f"{where} must be a list of 1 to {MAX_RELEASES} releases X.Y.Z")
    for r in items:
        if not isinstance(r, str) or not _RELEASE.fullmatch(r):
            raise BaselineError(f"{where}: {str(r)[:40]!r} is not a release X.Y.Z")
    if len(set(items)) != len(items):
        raise BaselineError(f"{where}: a release is listed twice")
    return frozenset(items)


def _item(e: Any, where: str, declared: frozenset[str] | None) -> tuple[Entry, frozenset[str] | None, bool]:
    """One entry: its key, its releases (None: the document's), whether it is required."""
    if not isinstance(e, dict) or not set(ENTRY_KEYS) <= set(e) or not set(e) <= {*ENTRY_KEYS, *OPTIONAL_ENTRY_KEYS}:
        raise BaselineError(
            f"{where} must have exactly {', '.join(ENTRY_KEYS)} (optional {', '.join(OPTIONAL_ENTRY_KEYS)})"
        )
    prop, function, path = e["property"], e["function"], e["path"]
    if prop not in {p.value for p in Property}:
        raise BaselineError(f"{where}: unknown property {str(prop)[:60]!r}")
    if not isinstance(function, str) or not _NAME.fullmatch(function):
        raise BaselineError(f"{where}: function must be a qualified name")
    if not isinstance(path, str) or not _PATH.fullmatch(path) or ".." in path.split("/"):
        raise BaselineError(f"{where}: path must be a relative repository path")
    releases = _releases(e["releases"], f"{where}: releases") if "releases" in e else None
    if releases is not None and declared is not None and not releases <= declared:
        raise BaselineError(f"{where}: release {min(releases - declared)} is not one of the document's releases")
    required = e.get("required", False)
    if type(required) is not bool:
        raise BaselineError(f"{where}: required must be true or false")
    return Entry(prop, function, path), releases, required


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
        made |= entries_of(c)
        known = is_known(c, baseline)
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
