"""The hunt of a table checked on its own, and a campaign's hunts run as one.

``TableHunt`` is a ``Hunt`` (``fuzz.campaign.driver``): a ``@given`` test
over the table's cases, each judged by the verdict pipeline; its findings
are raised one exception class per group, as every campaign's are, so each
group shrinks alone.  ``Hunts`` runs an engine's own hunt and the tables'
as one campaign: one covering pass, then rounds of every hunt's test,
until a round finds nothing new in any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from hypothesis import given
from hypothesis import settings as Settings
from hypothesis import target as hypothesis_target

from fuzz.campaign.driver import Hunt, Progress, Tracker, seeded
from fuzz.common.compat import BaseExceptionGroup  # novermin (on 3.10 the backport)
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding
from fuzz.targets.base import Target
from fuzz.verdict import PIPELINE

from .case import TableCase
from .declared import TABLE_CASE, Table, tables


class TableHunt:
    """Hypothesis over one table's cases (``Table.cases``), each through the verdict pipeline."""

    def __init__(
        self,
        target: Target,
        table: Table,
        pins: Mapping[str, Any] | None = None,
        props: Iterable[Property] | None = None,
    ):
        self.target, self.table, self.pins = target, table, dict(pins or {})
        self.props = None if props is None else tuple(p for p in table.properties if p in set(props))
        self.covered: int | None = None  # the covering set's size, once run
        self.name = f"table-{table.name}"
        self.pinned_out = table.pinned_out(self.pins) if table.pinned_out is not None else None

    def owns(self, f: Finding) -> bool:
        return f.kind is TABLE_CASE and f.case.get("table") == self.table.name

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        target, t = self.target, self.table
        assert t.cases is not None
        if self.pinned_out is not None:  # no case exists under the pins: nothing to draw
            return lambda: None

        def test(drawn: tuple[Any, Mapping[str, Any]]) -> None:
            progress.tick(tracker.groups)
            config, data = drawn
            case = TableCase(t, config, data)
            judged = PIPELINE.case(target, case, self.props, confirm=False, found_at=progress.examples)
            worst = max((v.overshoot for v in (f.violation for f in judged.findings)), default=0)
            hypothesis_target(float(worst), label=f"overshoot past a part of {t.name}")
            for f in judged.findings:
                if not tracker.is_known(f.signature):
                    tracker.fail(f)

        test.__qualname__ = test.__name__ = f"test_{t.name}"  # the example database keys a test by its name
        share = (
            settings if t.share >= 1 else Settings(settings, max_examples=max(1, int(settings.max_examples * t.share)))
        )
        wrapped: Callable[[], None] = share(seeded(given(t.cases(target, self.pins))(test), seed))
        return wrapped

    def cover(self, tracker: Tracker, progress: Progress) -> Iterable[Finding]:
        """The table's covering set (``Table.cover``), each case judged before the search; none: the search alone."""
        if self.table.cover is None or self.pinned_out is not None:
            return ()
        return self._covered(tracker, progress)

    def _covered(self, tracker: Tracker, progress: Progress) -> Iterator[Finding]:
        assert self.table.cover is not None
        cases = self.table.cover(self.target, self.pins)
        self.covered = len(cases)
        for config, data in cases:
            progress.tick(tracker.groups)
            case = TableCase(self.table, config, data)
            for f in PIPELINE.case(self.target, case, self.props, confirm=False, found_at=progress.examples).findings:
                if not tracker.is_known(f.signature):
                    yield self.finish(f)

    def finish(self, f: Finding) -> Finding:
        """The table's own last step (``Table.finish``), else the finding as found (no own path to confirm on)."""
        return self.table.finish(self.target, f) if self.table.finish is not None else f

    def stats(self) -> dict[str, Any]:
        if self.pinned_out is not None:
            return {f"{self.table.name}_pinned_out": self.pinned_out}
        return {f"{self.table.name}_covering_cases": self.covered} if self.covered is not None else {}


def table_hunts(
    target: Target, pins: Mapping[str, Any] | None = None, props: Iterable[Property] | None = None
) -> list[TableHunt]:
    """A hunt per table of ``target``'s engine that is checked on its own (``Table.hunted``) and judged on it
    (``Table.refused_on``); ``props``: only those properties, and only the tables that have one of them."""
    wanted = None if props is None else set(props)
    return [
        TableHunt(target, t, pins, props)
        for t in tables()
        if t.engine == target.engine
        and t.hunted
        and t.refused_on(target) is None
        and (wanted is None or wanted & set(t.properties))
    ]


class Hunts:
    """An engine's own hunt and its tables' hunts as one: the campaign's name is the engine's hunt's, a finding is
    finished by the hunt that made it."""

    def __init__(self, own: Hunt, tables: Sequence[TableHunt]):
        self.own, self.tables = own, list(tables)
        self.hunts: list[Hunt] = [own, *tables]
        self.name = own.name

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        tests = [h.round_test(settings, seed, tracker, progress) for h in self.hunts]

        def run() -> None:
            failed: list[Exception] = []
            for test in tests:
                try:
                    test()
                except Exception as e:  # noqa: BLE001 - every hunt's failures, raised together below
                    failed.append(e)
            if len(failed) == 1:
                raise failed[0]
            if failed:
                raise BaseExceptionGroup("several hunts failed", failed)

        return run

    def cover(self, tracker: Tracker, progress: Progress) -> Iterator[Finding]:
        for h in self.hunts:
            yield from h.cover(tracker, progress)

    def finish(self, f: Finding) -> Finding:
        owner = next((h for h in self.tables if h.owns(f)), None)
        return owner.finish(f) if owner is not None else self.own.finish(f)

    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for h in self.hunts:
            out.update(h.stats())
        return out


def with_tables(
    hunt: Hunt, target: Target, pins: Mapping[str, Any] | None = None, props: Iterable[Property] | None = None
) -> Hunt:
    """``hunt`` and the hunts of ``target``'s tables checked on their own, as one (``hunt`` alone where none is);
    ``props``: the properties the campaign judges (None: every one)."""
    extra = table_hunts(target, pins, props)
    return Hunts(hunt, extra) if extra else hunt
