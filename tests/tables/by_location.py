"""A test-only table, shape 3: a flat cache indexed by the allocator's location (the KV cache itself).

Each request owns the locations the allocator handed it; a decode step
writes its token's KV at its own locations.  Under the overlap scheduler
the step's write is still in flight when the next batch is scheduled.
Planted (``free_finished``): a finished request's locations go back to the
allocator at once, the next request is handed them (the free list is
last-in first-out), and the in-flight write lands in them:
``write-within-row``, the new owner named.  Its fix frees them only once the
write retires (``free_after_write``).  The parts are bounded by ownership,
not a width: the findings indict the free (``Table.blame``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st
from shape_configs import draft_tokens, drawn, group, ints, lengths

from allocator_model.config import ServingConfig
from fuzz.findings.kinds import Property
from fuzz.tables import Access, AccessKind, CodeRef, Layout, Span, Table, Width

HERE = "tests/tables/by_location.py"
PADDING = 1  # location 0 is the padding slot: no request owns it


def cache_locations(config: ServingConfig) -> int:
    """The cache's locations: the padding slot, then a context for every running request."""
    return PADDING + (config.max_total_num_tokens or config.max_running_requests * config.context_len)


def free_finished(config: ServingConfig) -> bool:
    """Whether a finished request's locations are free while its last write is in flight (planted: under the
    overlap scheduler they are freed when it finishes)."""
    return config.enable_overlap


def free_after_write(config: ServingConfig) -> bool:
    """The fix: a finished request's locations are freed once its last write retires."""
    return False


def observe(
    freed_early: Callable[[ServingConfig], bool],
) -> Callable[[Any, ServingConfig, Mapping[str, Any]], list[Access]]:
    """Request 0 finishes at ``a_len`` tokens; request 1 is handed locations for its draft tokens; then request 0's
    last write lands."""

    def step(target: Any, config: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
        (a_len,) = ints(data, "a_len")
        if not 1 <= a_len <= config.context_len:
            raise ValueError(f"a_len {a_len} is outside {config.short()}")
        held = Span(None, PADDING, PADDING + a_len, "request 0")
        last = Span(None, PADDING + a_len - 1, PADDING + a_len)
        need = draft_tokens(config)
        if freed_early(config):  # last in, first out: request 1 gets request 0's last locations
            start = max(PADDING, PADDING + a_len - need)
            given, mine = Span(None, start, PADDING + a_len, "request 1"), ()
        else:
            given, mine = Span(None, PADDING + a_len, PADDING + a_len + need, "request 1"), (held,)
        spill = (
            ()
            if mine or not given.start <= last.start < given.end
            else (Span(None, last.start, last.end, "request 1"),)
        )
        return [
            Access("by_location", "request 1", AccessKind.WRITE, (given,), (given,), step="write its draft tokens"),
            Access("by_location", "request 0", AccessKind.WRITE, (last,), mine, spill,
                   step="its last token's write, in flight when it finished"),
        ]  # fmt: skip

    return step


def finished_length(config: ServingConfig) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"a_len": lengths(config)})


def table(freed_early: Callable[[ServingConfig], bool]) -> Table:
    return Table(
        name="by_location",
        engine="sglang",
        layout=Layout.BY_LOCATION,
        width=Width(
            lambda target, c: cache_locations(c), lambda c, _: cache_locations(c), (CodeRef(HERE, "cache_locations"),)
        ),
        writers=(CodeRef(HERE, "observe"),),
        readers=(),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        blame=(CodeRef(HERE, freed_early.__name__),),
        cases=drawn(finished_length),
        observe=observe(freed_early),
        group=group,
    )


TABLE = table(free_finished)
FIXED = table(free_after_write)
