"""The generic checks of a checked table: judged on ``Access``es, whatever the table's layout.

A table whose engine has worded checks of its own (SGLang's ``req_to_token``)
is judged by those; the generic ones judge the same accesses, and a test
holds the two to the same properties on the same runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fuzz.findings.kinds import SILENT, STALE_READ, Outcome, Property

from .declared import GENERIC_PROPERTIES, Table
from .observe import Access, AccessKind, past, within


@dataclass(frozen=True)
class Breach:
    """A property an access broke, and by how far (columns past its bound)."""

    prop: Property
    access: Access
    overshoot: int


def outcome_of(prop: Property, stopped_by: str | None) -> Outcome:
    """What a breach of ``prop`` does, as its finding's signature says it (``run``'s cases and ``prove``'s closed
    forms alike): a read past its part reads stale or foreign data; a write the engine's own check stops crashes
    the step (``stopped_by``); any other write is silent."""
    if prop is Property.READ_WITHIN_ROW:
        return STALE_READ
    return Outcome.stopped_by(stopped_by) if stopped_by is not None else SILENT


def _write_within_row(a: Access) -> Breach | None:
    """Every span a write (or commit) touches lies in its owner's part; one its own guard stopped counts too."""
    if a.kind not in (AccessKind.WRITE, AccessKind.COMMIT):
        return None
    outside = [s for s in a.touched if not within(s, a.bound)]
    if not outside:
        return None
    return Breach(Property.WRITE_WITHIN_ROW, a, max(past(s, a.bound) for s in outside))


def _neighbour_rows_untouched(a: Access) -> Breach | None:
    """Nothing outside the owner's part changes when it accesses its own."""
    if not a.changed_outside:
        return None
    return Breach(Property.NEIGHBOUR_ROWS_UNTOUCHED, a, max(past(s, a.bound) for s in a.touched) if a.touched else 0)


def _read_within_row(a: Access) -> Breach | None:
    """A read of a published length stays in its owner's part: a column past it was never written for the owner
    (a write clamped at the part's end, say), so the reader reads another owner's, or stale, data."""
    if a.kind is not AccessKind.READ:
        return None
    outside = [s for s in a.touched if not within(s, a.bound)]
    if not outside:
        return None
    return Breach(Property.READ_WITHIN_ROW, a, max(past(s, a.bound) for s in outside))


def _copied_from_own_row(a: Access) -> Breach | None:
    """What a builder copies comes from its owner's part of the source: an entry copied from another owner's part
    (a read past the part, a wrong row or stride) hands the reader another owner's data."""
    if a.kind is not AccessKind.COPY:
        return None
    outside = [s for s in a.touched if not within(s, a.bound)]
    if not outside:
        return None
    return Breach(Property.COPIED_FROM_OWN_ROW, a, sum(s.size for s in outside))


GENERIC: dict[Property, Callable[[Access], Breach | None]] = {
    Property.WRITE_WITHIN_ROW: _write_within_row,
    Property.NEIGHBOUR_ROWS_UNTOUCHED: _neighbour_rows_untouched,
    Property.READ_WITHIN_ROW: _read_within_row,
    Property.COPIED_FROM_OWN_ROW: _copied_from_own_row,
}
assert tuple(GENERIC) == GENERIC_PROPERTIES  # what a table checked on its own may declare (``declare_table``)


def judge(table: Table, accesses: Sequence[Access], props: Sequence[Property] | None = None) -> list[Breach]:
    """The first breach of each property of ``table`` (``props``: those of them), in the table's order of blame.

    A break of a property that ``table.same_write`` names as another one's (a neighbour a write past its part
    lands in) is left to that one where that one breaks on the same access: one break, named once.
    """
    wanted = [p for p in table.properties if p in GENERIC and (props is None or p in props)]
    found: list[Breach] = []
    for prop in wanted:
        also = table.same_write.get(prop)
        for a in accesses:
            if also in wanted and also is not None and GENERIC[also](a) is not None:
                continue
            breach = GENERIC[prop](a)
            if breach is not None:
                found.append(breach)
                break
    return found
