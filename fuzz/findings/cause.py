"""Root causes: the findings of one target grouped by what fixes them (their engine decides it).

A ``Cause`` is one known bug (its upstream number, or ``new``), one piece of
the target's code that the reference computes differently (``new``, naming
the piece), or nothing found (``unexplained``). Its variants are the bug
groups it explains; a group fixed only by two fixes together is listed
under both, marked ``needs both``. One type, one renderer
(``render.causes_block``), one JSON shape (``Cause.to_json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fuzz.common.compat import StrEnum

from .kinds import Signature


class CauseKind(StrEnum):
    KNOWN = "known"  # a known bug's fix alone removes the failure
    PIECE = "piece"  # the reference's version of one sizing function (or builder row) alone removes it
    UNEXPLAINED = "unexplained"  # no single fix nor pair of fixes does


@dataclass
class Cause:
    """One root cause on one target and the bug groups it explains."""

    key: str  # the known fix's key, the piece's entry name, or "unexplained"
    kind: CauseKind
    bug: str  # "#33579", "new", or "" (unexplained)
    title: str
    fix: str = ""
    table: str = ""  # the table the cause is in (a name its engine declares); "": none, and no baseline knows it
    missing: str = ""  # the term the code lacks, where the known bug's catalog entry names one
    variants: list[Signature] = field(default_factory=list)  # groups this cause alone explains
    needs_both: dict[str, list[Signature]] = field(default_factory=dict)  # other cause key -> groups fixed by both
    values: list[str] = field(default_factory=list)  # "extra_max_context_len 8, the reference's 71" per piece
    where: list[str] = field(default_factory=list)  # the code the cause lives in (file:line function)
    # The same code without lines: (repository path, qualified function), what a baseline keys on.
    code: list[tuple[str, str]] = field(default_factory=list)
    # A new cause's identity in each of those functions: its code digest (``fuzz.causes.identity``; None: the code
    # could not be read, and no baseline knows the cause). Known causes are known by their fix's key instead.
    digests: dict[tuple[str, str], str | None] = field(default_factory=dict)
    # A known cause's identity as the piece counterfactual alone gives it (each piece its fix replaces, where the
    # reference's version from that piece on makes a variant pass): (path, function, term, digest). A baseline
    # records them with the known entry, so the same code found as a new piece cause (a known fix refused
    # because another piece changed) is still that known bug (``baseline_entries.aliases``).
    aliases: list[tuple[str, str, str, str]] = field(default_factory=list)
    # Set by a baseline's verdict: alias (path, function, term, digest) -> the known fix's key it stands for.
    known_as: dict[tuple[str, str, str, str], str] = field(default_factory=dict)
    baseline_state: str | None = None  # against a --baseline: "new" or "unchanged" (SARIF's baselineState)

    @property
    def groups(self) -> set[Signature]:
        """Every bug group it explains: its variants and those it explains together with another cause."""
        return {*self.variants, *(s for sigs in self.needs_both.values() for s in sigs)}

    @property
    def rank(self) -> tuple[int, int]:
        """Worst outcome first (a silent variant before stale reads and guards), then the most variants."""
        groups = self.groups
        worst = min((s.outcome.rank for s in groups), default=9)
        return worst, -len(groups)

    @property
    def label(self) -> str:
        """How a table names it: the upstream number, else ``new: KEY`` (or ``unexplained``)."""
        if self.kind is CauseKind.KNOWN and self.bug and self.bug != "new":
            return self.bug
        return "unexplained" if self.kind is CauseKind.UNEXPLAINED else f"new: {self.key}"

    def heading(self) -> str:
        label = {CauseKind.KNOWN: self.bug, CauseKind.PIECE: "new", CauseKind.UNEXPLAINED: "unexplained"}[self.kind]
        return f"{label}: {self.title}"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind.value,
            "bug": self.bug,
            "title": self.title,
            "fix": self.fix,
            **({"missing": self.missing} if self.missing else {}),
            "variants": [str(s) for s in self.variants],
            "needs_both": {k: [str(s) for s in v] for k, v in sorted(self.needs_both.items())},
            "values": self.values,
            "where": self.where,
            "code": [
                {"path": p, "function": f, **({"digest": self.digests[p, f]} if self.digests.get((p, f)) else {})}
                for p, f in self.code
            ],
            **({"baseline": self.baseline_state} if self.baseline_state else {}),
        }

    @property
    def properties(self) -> list[str]:
        """The properties its variants break (a baseline entry is one of these in one function)."""
        return sorted({s.prop.value for s in self.groups})
