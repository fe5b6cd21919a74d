"""What an execution did to a checked table: each owner's accesses, and the part of the table each may touch.

An engine turns its own record of a run (the model's ``ScenarioRun``, a step on
its own code) into ``Access``es; the generic checks (``fuzz.tables.checks``)
judge those, whatever the table's layout.  ``native`` keeps the engine's
record, for the engine's worded checks and stories.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuzz.common.compat import StrEnum


class AccessKind(StrEnum):
    WRITE = "write"  # the engine stores into the table
    READ = "read"  # a reader reads a published length of it
    COMMIT = "commit"  # a scratch's accepted part mapped back into another table
    # a builder copies entries of another table (its source) into this one: ``touched`` is where in the source
    # what it stored came from, ``bound`` its owner's part of the source
    COPY = "copy"


GUARD = "guard"  # the owner of what lies past a table's end: nobody's part


@dataclass(frozen=True)
class Span:
    """Columns ``[start, end)`` of ``row`` (None: a flat table), or of the guard past the table (``row`` None,
    ``owner`` ``GUARD``)."""

    row: int | None
    start: int
    end: int
    owner: str | None = None  # whose part it is, where the table knows (the victim of a spill)

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class Access:
    """One access by ``owner``: the spans it ``touched`` (for a write stopped by the engine's own guard, what it
    asked for), the spans it may touch (``bound``), and what changed outside ``bound`` (the storage's diff)."""

    table: str
    owner: str
    kind: AccessKind
    touched: tuple[Span, ...]
    bound: tuple[Span, ...]
    changed_outside: tuple[Span, ...] = ()
    stopped_by: str | None = None  # the engine's own check that stopped it (nothing written)
    step: str = ""
    native: Any = None
    source: str | None = None  # a copy's: the table it copies from


def within(span: Span, bound: tuple[Span, ...]) -> bool:
    """Whether ``span`` lies inside one of ``bound``'s spans (an empty span always does)."""
    return span.size == 0 or any(b.row == span.row and b.start <= span.start and span.end <= b.end for b in bound)


def past(span: Span, bound: tuple[Span, ...]) -> int:
    """How far ``span`` ends past the end of the bound span of its row (0: not past it)."""
    ends = [b.end for b in bound if b.row == span.row]
    return max(0, span.end - max(ends)) if ends else span.size
