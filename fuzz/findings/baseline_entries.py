"""The entries of a baseline and how causes are judged against them (``fuzz.findings.baseline`` reads and writes
the file; its docstring states what an entry is and why).

A cause is known when it makes entries, each of them in the baseline's
entries for the run's target or an alias of a known entry there (``aliases``):
a cause without identity (unexplained, or new with code that could not be
read) makes none and is never suppressed.

Why an alias is sound. The counterfactual names a known fix only where
every sizing piece the target answers equals its release's at the case; fix
one known bug in the tree (#33579) and a case of another (the unified
builders' rows) is refused every known fix, and found as a piece of the
tree that differs from the reference: a new cause, by another identity, for
a bug the baseline knows. So a known entry also records the identity the
piece counterfactual alone gives its variants (``counterfactual.aliases_of``:
the piece, the function it lives in, the digest of that function's code):
a piece cause with the same property, table, function, path, term and
digest is that known bug. The digest covers the function and everything it
calls in its file (``fuzz.causes.identity``), so a new bug in that code
changes it and is new; the term pins the piece; only code that is, token
for token, the code the known bug was found in is let through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .cause import Cause, CauseKind
from .kinds import Property

RELEASES_TARGET = "sglang"  # a document over releases: every sglang==R of its releases


class BaselineError(ValueError):
    """A baseline file that is not one (one line; the command exits 2)."""


@dataclass(frozen=True, order=True)
class Entry:
    """One root cause's identity for one property: ``known`` (a known fix's key), else where the new cause lives,
    the term that differs from the reference and its code's digest."""

    property: str
    table: str  # the table the cause is in (``Cause.table``), as its engine names it
    known: str = ""
    function: str = ""
    path: str = ""
    term: str = ""
    digest: str = ""
    # A known entry's aliases: (path, function, term, digest) of the piece cause its variants read as where no
    # known fix is tried (the module docstring). Not part of its identity: equal entries with other aliases are one.
    as_new: tuple[tuple[str, str, str, str], ...] = field(default=(), compare=False)

    def __str__(self) -> str:
        if self.known:
            return f"{self.property} of known bug {self.known}"
        return f"{self.property} in {self.function} ({self.path}): {self.term} differs, code {self.digest}"

    def to_json(self) -> dict[str, Any]:
        head = {"property": self.property, "table": self.table}
        if self.known:
            aliases = [{"function": f, "path": p, "term": t, "digest": d} for p, f, t, d in self.as_new]
            return {**head, "known": self.known, **({"as_new": aliases} if aliases else {})}
        return {**head, "function": self.function, "path": self.path, "term": self.term, "digest": self.digest}


# A write past the row and the neighbour's changed columns are one write seen twice: one entry.
SAME_WRITE = {Property.NEIGHBOUR_ROWS_UNTOUCHED.value: Property.WRITE_WITHIN_ROW.value}


def entries_of(cause: Cause) -> set[Entry]:
    """The entries a cause makes: one per property its variants break (``SAME_WRITE`` folded) and, for a new cause,
    per function it lives in. None for an unexplained cause, nor for a new one whose code could not be read or
    located: the baseline cannot know it (a cause without identity is never suppressed)."""
    props = sorted({SAME_WRITE.get(p, p) for p in cause.properties})
    table = cause.table
    if not table:
        return set()
    if cause.kind is CauseKind.KNOWN:
        return {Entry(p, table, known=cause.key, as_new=tuple(sorted(set(cause.aliases)))) for p in props}
    if cause.kind is not CauseKind.PIECE or not cause.code:
        return set()
    digests = [cause.digests.get(c) for c in cause.code]
    if not all(digests):
        return set()
    return {
        Entry(p, table, "", function, path, cause.key, str(d))
        for p in props
        for (path, function), d in zip(cause.code, digests, strict=True)
    }


def identity(cause: Cause) -> str | None:
    """The cause's identity as one text, its properties aside (SARIF's ``partialFingerprints``: the same root
    cause is the same alert from run to run, a new one in the same function another; a piece cause the baseline
    knows through an alias by the known key, as on the tree the baseline was written on); None: it has none."""
    ids = sorted(
        {
            (e.table, cause.known_as[e.path, e.function, e.term, e.digest], "", "", "", "")
            if (e.path, e.function, e.term, e.digest) in cause.known_as
            else (e.table, e.known, e.path, e.function, e.term, e.digest)
            for e in entries_of(cause)
        }
    )
    if not ids:
        return None
    return ";".join(f"{t}:known:{k}" if k else f"{t}:new:{term}@{path}:{fn}#{d}" for t, k, path, fn, term, d in ids)


def aliases(entries: Iterable[Entry]) -> dict[Entry, Entry]:
    """Each alias of the known entries as the piece entry it equals (same property and table) -> its known entry."""
    return {
        Entry(k.property, k.table, "", function, path, term, d): k
        for k in sorted(entries)
        if k.known
        for path, function, term, d in k.as_new
    }


def merged(entries: Iterable[Entry]) -> dict[Entry, Entry]:
    """Each entry -> itself with the aliases of every entry equal to it (the same known bug seen on several
    releases: each release's code digest is that bug's)."""
    out: dict[Entry, Entry] = {}
    for e in entries:
        had = out.get(e, e)
        out[e] = replace(e, as_new=tuple(sorted({*had.as_new, *e.as_new})))
    return out


def is_known(cause: Cause, entries: frozenset[Entry]) -> bool:
    """Whether the baseline knows the cause: it makes entries, each of them in ``entries`` or an alias of a known
    entry there (the module docstring says why that is the same bug)."""
    mine = entries_of(cause)
    alias = aliases(entries)
    return bool(mine) and all(e in entries or e in alias for e in mine)


def made_by(causes: Iterable[Cause]) -> set[Entry]:
    """Every entry the causes make."""
    return set().union(*(entries_of(c) for c in causes))


@dataclass(frozen=True)
class Expected:
    """What one target (or release) must and may show: the entries a cause there may make, and those one must."""

    entries: frozenset[Entry] = frozenset()
    required: frozenset[Entry] = frozenset()


Listed = tuple[Entry, frozenset[str] | None, bool]  # an entry, its releases (None: the document's), required


@dataclass(frozen=True)
class Known:
    """A baseline document, read: its target, the releases it covers, its entries and where each is expected."""

    target: str
    releases: tuple[str, ...]  # the releases it covers (its own list, else its target's and its entries')
    listed: tuple[Listed, ...] = ()

    @property
    def entries(self) -> frozenset[Entry]:
        """Every entry, wherever expected (what a document without releases knows on its target)."""
        return frozenset(e for e, _, _ in self.listed)

    def covers(self, release: str) -> bool:
        """Whether a document over releases (or of one release) covers ``release``."""
        return release in self.releases

    def expected(self, release: str | None) -> Expected:
        """What is expected at ``release`` (None: a target without one: the entries that name no release)."""
        mine = [
            (e, req)
            for e, rs, req in self.listed
            if (rs is None and (release is None or self.covers(release)))
            or (release is not None and rs is not None and release in rs)
        ]
        return Expected(frozenset(e for e, _ in mine), frozenset(e for e, req in mine if req))

    def scope(self, name: str, release: str | None) -> Expected | None:
        """What the baseline expects on the target named ``name`` (``portable_target``) at ``release`` (a release
        target's version, else None); None: it does not cover that target, and must not suppress anything there."""
        if self.target == name:
            if release is not None and self.releases and release not in self.releases:
                return None
            return self.expected(release)
        if self.target == RELEASES_TARGET and release is not None and name == f"sglang=={release}":
            return self.expected(release) if self.covers(release) else None
        return None

    def coverage(self) -> str:
        """What it covers, for a message."""
        at = f" at {', '.join(self.releases)}" if self.releases and self.target == RELEASES_TARGET else ""
        return f"{self.target or 'no target'}{at}"


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
    out.fixed = sorted(baseline - used(causes, baseline))
    return out


def used(causes: Iterable[Cause], baseline: frozenset[Entry]) -> set[Entry]:
    """The baseline's entries the causes make: themselves, or (a known cause read as a piece cause) an alias of
    theirs, each such cause then named by the known key in its identity (``known_as``: SARIF keeps the alert)."""
    made = made_by(causes)
    alias = aliases(baseline)
    for c in causes:
        mine = entries_of(c) if c.kind is CauseKind.PIECE and is_known(c, baseline) else set()
        c.known_as = {(e.path, e.function, e.term, e.digest): alias[e].known for e in mine - baseline if e in alias}
    return {e for e in baseline if e in made} | {alias[e] for e in made if e in alias}


def judged_lines(j: Judged) -> list[str]:
    """What a command prints after its causes when given a baseline."""
    lines = [f"baseline: {len(j.new)} new root cause(s), {len(j.known)} known, {len(j.fixed)} fixed entr(ies)"]
    lines += [f"  known: {c.label} ({len(c.variants)} variant(s))" for c in j.known]
    lines += [f"  NEW: {c.label}: {c.title}" for c in j.new]
    lines += [f"  fixed: {e}" for e in j.fixed]
    return lines
