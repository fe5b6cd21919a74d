"""A baseline of known findings, as linters keep one: a target's root causes, so CI fails only on new ones.

An entry records a root cause's identity, never a place (schema version 2):

  a known bug      its fix's key in ``allocator_model/known_bugs.py`` (``page-1-headroom``: #33579); the
                   counterfactual names a known fix only where the target's code is its release's at the
                   case (``fuzz.engines.sglang.causes.counterfactual.candidates``), so a changed function
                   is never one;
                   ``as_new``: what its variants read as where no known fix is tried (aliases, sound by
                   their digest: ``baseline_entries``);
  a new cause      (the tool's ``new``, a piece of the target that differs from the reference) the function
                   it lives in (repository path, qualified name), the term that differs (the piece:
                   ``req_to_token_extra_context_len``) and a digest of that function's code and of what it
                   reaches in its file (``fuzz.causes.identity``: a comment, a reformat, a renamed local
                   keep it; a changed constant, operator or called name changes it);
  unexplained      no identity: always new.

Each with the property it breaks (``SAME_WRITE`` folded) and the table the
cause is in (``req_to_token``; more tables are coming). A cause is *known*
when it makes entries, each of them in the baseline where the run's target
is: so a new bug in a function that already has a known one is new (its
digest or term differs), and a cause the tool could not identify is new.
An entry no cause makes is *unused* (reported as fixed; ``--baseline-strict``
fails on it).

Entries are scoped. The document names its ``target`` portably (a spec:
``sglang==0.5.23``, ``reference@sglang-0.5.18``; a file as SGLang's
repository names it, ``python/sglang/srt/mem_cache/allocation_sizing.py``, or
relative to the working directory: never an absolute local path) and may
name ``releases`` (PEP 440 versions; a document over releases has the target
``sglang``), each entry its own ``releases`` and ``required`` (``matrix``'s
MISSING). A baseline suppresses only on a target it covers
(``Known.scope``); one that does not cover a run's target is bad input.

The file is data: ``{"schema": "kvrow-fuzz/baseline", "schema_version": 2,
"target", "entries": [...], "releases"?, "description"?}``, validated when
read (``read``: exact keys and types, known properties, patterns, bounded
sizes), published as ``baseline.schema.json``. The one format of every list
of known findings (``run``/``lifecycle``/``prove --baseline``, the plugin's
``--kvrow-baseline``, the Atheris entry's ``KVROW_FUZZ_BASELINE``, the
action, ``matrix --expect``). A version 1 file (keyed by place) is refused
with the command that upgrades it (``baseline upgrade FILE``, which replays
the campaign and records the identity of each cause the old file knew).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from fuzz.tables import tables as declared_tables

from .baseline_entries import (
    RELEASES_TARGET,
    SAME_WRITE,
    BaselineError,
    Entry,
    Expected,
    Judged,
    Known,
    Listed,
    entries_of,
    identity,
    is_known,
    judge,
    judged_lines,
    made_by,
    merged,
    used,
)
from .cause import Cause
from .kinds import Property

# What callers use; the entries and the verdict live in ``baseline_entries`` and are named through here.
__all__ = [
    "BaselineError",
    "ENTRY_KEYS",
    "Entry",
    "Expected",
    "Judged",
    "KEYS",
    "KNOWN_KEYS",
    "Known",
    "Listed",
    "MAX_BYTES",
    "MAX_DESCRIPTION",
    "MAX_ENTRIES",
    "MAX_RELEASES",
    "MAX_TARGET",
    "NEW_KEYS",
    "OPTIONAL_ENTRY_KEYS",
    "OPTIONAL_KEYS",
    "RELEASES_TARGET",
    "SAME_WRITE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "V1",
    "V1_ENTRY_KEYS",
    "document",
    "dumps",
    "entries_of",
    "identity",
    "is_known",
    "judge",
    "judged_lines",
    "load",
    "load_data",
    "load_for",
    "made_by",
    "merged",
    "used",
    "parse",
    "portable_target",
    "read",
    "release_key",
    "releases_document",
    "scoped",
    "target_release",
    "text",
]

SCHEMA = "kvrow-fuzz/baseline"
SCHEMA_VERSION = 2
V1 = 1  # keyed by (property, function, path): read only by ``baseline upgrade``
MAX_ENTRIES = 10_000
MAX_RELEASES = 256  # releases a document or an entry lists
MAX_BYTES = 4 << 20
MAX_TARGET = 4096
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,199}")  # a qualified function: Class.method
_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,299}")  # a repository path, relative, no ..
_KEY = re.compile(r"[a-z0-9][a-z0-9_-]{0,99}")  # a known fix's key, a piece's name
_DIGEST = re.compile(r"[0-9a-f]{16}")
# A PEP 440 release as ``packaging`` normalizes it (0.5.18, 0.5.0rc2, 0.5.12.post1), then parsed by it.
_RELEASE = re.compile(
    r"([0-9]{1,4}!)?[0-9]{1,6}(\.[0-9]{1,6}){0,5}((a|b|rc)[0-9]{1,6})?(\.post[0-9]{1,6})?(\.dev[0-9]{1,6})?"
)
_TARGET_RELEASE = re.compile(r"sglang==(\S+)")  # a target that is one release
KEYS = ("schema", "schema_version", "target", "entries")
OPTIONAL_KEYS = ("releases", "description")
ENTRY_KEYS = ("property", "table")
KNOWN_KEYS = ("known",)
NEW_KEYS = ("function", "path", "term", "digest")
ALIAS_KEYS = ("as_new",)  # optional in a known entry: its aliases, each of NEW_KEYS (``baseline_entries``)
MAX_ALIASES = 64
OPTIONAL_ENTRY_KEYS = ("releases", "required")
V1_ENTRY_KEYS = ("property", "function", "path")
MAX_DESCRIPTION = 2000


def release_key(release: str) -> Any:
    """A release's place in order (PEP 440: ``0.5.9 < 0.5.10``, ``0.5.0rc2 < 0.5.0``)."""
    from packaging.version import Version

    return Version(release)


def portable_target(target: Any, cwd: str | None = None) -> str:
    """How a baseline names a target, the same on every machine and checkout, as its engine says (never an
    absolute path)."""
    from fuzz.engines import engine_of

    name: str = engine_of(target).portable_target(target, cwd)
    return name


def target_release(target: str) -> tuple[str, ...]:
    """The release a target spec names (``sglang==0.5.18``: ``("0.5.18",)``), else none."""
    m = _TARGET_RELEASE.fullmatch(target.strip())
    return (m.group(1),) if m else ()


def document(target: str, causes: list[Cause]) -> dict[str, Any]:
    """The document of one target's causes (``target``: its portable name, ``portable_target``)."""
    entries = [e.to_json() for e in sorted(made_by(causes))]
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "target": target, "entries": entries}


def releases_document(target: str, found: Mapping[str, Mapping[Entry, bool]], description: str = "") -> dict[str, Any]:
    """A document over releases: ``found`` is release -> {entry: required there}; one item per entry and
    requiredness, with the releases where it is so (an entry required in some releases and not others: two), a
    known entry with the aliases it has in any of them."""
    one = merged(e for entries in found.values() for e in entries)
    where: dict[tuple[Entry, bool], set[str]] = {}
    for release, entries in found.items():
        for e, required in entries.items():
            where.setdefault((e, required), set()).add(release)
    items = [
        {**one[e].to_json(), "releases": sorted(rs, key=release_key), "required": required}
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


def scoped(known: Known, target: Any, where: str) -> Expected:
    """The entries ``known`` suppresses on ``target`` (a resolved Target); BaselineError (one line) when it does not
    cover the target: a baseline of another target or release suppresses nothing, and a run that thinks it has
    one is a mistake, not a clean run."""
    from fuzz.targets.base import TargetKind

    name = portable_target(target)
    release = target_release(str(target.spec))
    expected = known.scope(name, release[0] if release and target.kind is TargetKind.RELEASE else None)
    if expected is None:
        raise BaselineError(
            f"{where}: covers {known.coverage()}, not {name} (write one for it: kvrow-fuzz baseline write FILE "
            f"--target {name})"
        )
    return expected


def load_for(path: str, targets: Iterable[Any], what: str = "--baseline") -> dict[str, frozenset[Entry]]:
    """The one reading of a baseline for a run: target spec -> the entries it suppresses there, for each of
    ``targets`` (resolved); BaselineError (one line, exit 2) for a file that is not a baseline or that does not
    cover one of them. Every command, the plugin and the Atheris entry read a baseline through this."""
    known = load(path, what)
    return {t.spec: scoped(known, t, f"{what} {path}").entries for t in targets}


def load(path: str, what: str = "baseline", max_bytes: int = MAX_BYTES) -> Known:
    """The baseline in the file ``path`` (``what`` names it in errors: ``--expect``), read within ``max_bytes``;
    BaselineError (one line) for a file that cannot be read or is not one (a version 1 file: with the command
    that upgrades it)."""
    data = load_data(path, what, max_bytes)
    return read(data, f"{what} {path}", upgrade_hint=path)


def load_data(path: str, what: str, max_bytes: int = MAX_BYTES) -> Any:
    """The JSON data of the file (BaselineError, one line: missing, unreadable, not JSON, too large, empty name)."""
    from fuzz.common.jsonfile import JsonFileError, read_json

    if not path:
        raise BaselineError(f"{what}: an empty file name")
    try:
        return read_json(path, max_bytes, what)
    except JsonFileError as e:
        raise BaselineError(str(e)) from None


def parse(data: Any, where: str) -> frozenset[Entry]:
    """The entries of a baseline document, wherever expected; BaselineError (one line) for anything else."""
    return read(data, where).entries


def _head(data: Any, where: str, version: int, entry_keys: str) -> tuple[str, frozenset[str] | None, list[Any]]:
    """(target, declared releases, raw entries) of a document of ``version``, checked."""
    if not isinstance(data, dict) or not set(KEYS) <= set(data) or not set(data) <= {*KEYS, *OPTIONAL_KEYS}:
        raise BaselineError(
            f"{where}: not a kvrow-fuzz baseline (keys {', '.join(KEYS)}; optional {', '.join(OPTIONAL_KEYS)})"
        )
    if data["schema"] != SCHEMA or type(data["schema_version"]) is not int or data["schema_version"] != version:
        raise BaselineError(f"{where}: not a {SCHEMA} version {version} file")
    target = data["target"]
    if not isinstance(target, str) or not target.strip() or len(target) > MAX_TARGET or not target.isprintable():
        raise BaselineError(f"{where}: target must be a target spec (one printable line, not empty)")
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        raise BaselineError(f"{where}: description must be a text of at most {MAX_DESCRIPTION} characters")
    declared = _releases(data["releases"], f"{where}: releases") if "releases" in data else None
    raw = data["entries"]
    if not isinstance(raw, list) or len(raw) > MAX_ENTRIES:
        raise BaselineError(f"{where}: entries must be a list of at most {MAX_ENTRIES} ({entry_keys})")
    return target, declared, raw


def read(data: Any, where: str, upgrade_hint: str | None = None) -> Known:
    """A version 2 baseline document, checked field by field as the schema does; BaselineError (one line) for
    anything else (a version 1 file: saying how to upgrade it)."""
    if isinstance(data, dict) and data.get("schema") == SCHEMA and type(data.get("schema_version")) is int:
        if data["schema_version"] == V1:
            raise BaselineError(
                f"{where}: a version 1 baseline keys known findings by place, not root cause; upgrade it: "
                f"kvrow-fuzz baseline upgrade {upgrade_hint or 'FILE'}"
            )
    target, declared, raw = _head(data, where, SCHEMA_VERSION, "known, or function, path, term, digest")
    listed = [_item(e, f"{where}: entry {i}", declared) for i, e in enumerate(raw, 1)]
    return _known(target, declared, listed)


def _known(target: str, declared: frozenset[str] | None, listed: list[Listed]) -> Known:
    releases = (
        declared if declared is not None else {*target_release(target), *(r for _, rs, _ in listed for r in rs or ())}
    )
    return Known(target, tuple(sorted(releases, key=release_key)), tuple(listed))


def _releases(items: Any, where: str) -> frozenset[str]:
    """A list of 1 to ``MAX_RELEASES`` distinct PEP 440 releases, each as ``packaging`` normalizes it."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(items, list) or not 1 <= len(items) <= MAX_RELEASES:
        raise BaselineError(f"{where} must be a list of 1 to {MAX_RELEASES} releases (PEP 440)")
    out = []
    for r in items:
        try:
            if not isinstance(r, str) or not _RELEASE.fullmatch(r) or str(Version(r)) != r:
                raise InvalidVersion(r)
            out.append(r)
        except InvalidVersion:
            raise BaselineError(
                f"{where}: {str(r)[:40]!r} is not a release (PEP 440, normalized: 0.5.18, 0.5.0rc2)"
            ) from None
    if len(set(out)) != len(out):
        raise BaselineError(f"{where}: a release is listed twice")
    return frozenset(out)


def _text(e: dict[str, Any], key: str, pattern: re.Pattern[str], where: str, what: str) -> str:
    value = e[key]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise BaselineError(f"{where}: {key} must be {what}")
    return value


def _scope(e: dict[str, Any], where: str, declared: frozenset[str] | None) -> tuple[frozenset[str] | None, bool]:
    """An entry's releases (None: the document's) and whether it is required."""
    releases = _releases(e["releases"], f"{where}: releases") if "releases" in e else None
    if releases is not None and declared is not None and not releases <= declared:
        raise BaselineError(f"{where}: release {min(releases - declared)} is not one of the document's releases")
    required = e.get("required", False)
    if type(required) is not bool:
        raise BaselineError(f"{where}: required must be true or false")
    return releases, required


def _property(e: dict[str, Any], where: str) -> str:
    prop = e["property"]
    if not isinstance(prop, str) or prop not in {p.value for p in Property}:
        raise BaselineError(f"{where}: unknown property {str(prop)[:60]!r}")
    return prop


def _item(e: Any, where: str, declared: frozenset[str] | None) -> Listed:
    """One version 2 entry: a known fix's key, or a new cause's function, path, term and digest."""
    keys = set(e) if isinstance(e, dict) else set()
    kind = KNOWN_KEYS if "known" in keys else NEW_KEYS
    optional = (*OPTIONAL_ENTRY_KEYS, *(ALIAS_KEYS if kind is KNOWN_KEYS else ()))
    if not isinstance(e, dict) or not {*ENTRY_KEYS, *kind} <= keys or not keys <= {*ENTRY_KEYS, *kind, *optional}:
        raise BaselineError(
            f"{where} must have property, table and either known or function, path, term, digest "
            f"(optional {', '.join(OPTIONAL_ENTRY_KEYS)}; as_new with known)"
        )
    prop = _property(e, where)
    table = e["table"]
    tables = {t.name for t in declared_tables()}
    if not isinstance(table, str) or table not in tables:
        raise BaselineError(f"{where}: table must be one of {', '.join(sorted(tables))} (the engines' tables)")
    releases, required = _scope(e, where, declared)
    if kind is KNOWN_KEYS:
        known = _text(e, "known", _KEY, where, "a known fix's key")
        entry = Entry(prop, table, known=known, as_new=_aliases(e.get("as_new", []), f"{where}: as_new"))
    else:
        path, function, term, digest = _new(e, where)
        entry = Entry(prop, table, "", function, path, term, digest)
    return entry, releases, required


def _new(e: dict[str, Any], where: str) -> tuple[str, str, str, str]:
    """A new cause's (path, function, term, digest), each checked."""
    path = _text(e, "path", _PATH, where, "a relative repository path")
    if ".." in path.split("/"):
        raise BaselineError(f"{where}: path must be a relative repository path")
    function = _text(e, "function", _NAME, where, "a qualified name")
    term = _text(e, "term", _KEY, where, "the name of the piece that differs")
    return path, function, term, _text(e, "digest", _DIGEST, where, "16 hexadecimal digits")


def _aliases(items: Any, where: str) -> tuple[tuple[str, str, str, str], ...]:
    """A known entry's aliases: a list of at most ``MAX_ALIASES`` objects with exactly a new cause's keys."""
    if not isinstance(items, list) or len(items) > MAX_ALIASES:
        raise BaselineError(f"{where} must be a list of at most {MAX_ALIASES} (function, path, term, digest)")
    if not all(isinstance(a, dict) and set(a) == set(NEW_KEYS) for a in items):
        raise BaselineError(f"{where}: each must have exactly function, path, term, digest")
    return tuple(sorted({_new(a, where) for a in items}))
