"""A test-only checked table: per-request rows of draft slots, with a planted bug (acceptance of issue 34).

Each running request owns row ``row`` of a ``[max_running_requests, W]``
table.  At a decode step its writer reserves the draft tokens past the
request's length and, like SGLang's allocator, rounds the end up to the
allocator's page (``page_size * attn_dcp_size``).  The width function gives
the row the context and the draft tokens as headroom, but not the page
rounding (the planted regression: the rounding was dropped from the
headroom), so near the context limit a paged allocator's rounded end runs
into the next request's row.

Declared only where a test asks (``fuzz.tables.declared.declared``, or
``KVROW_FUZZ_TABLES=toy_rows:TABLE`` in a child process): no other test sees it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from allocator_model.config import ServingConfig
from allocator_model.regimes import regime
from allocator_model.sizing import alloc_page_size
from fuzz.findings.kinds import Property
from fuzz.tables import GUARD, Access, AccessKind, CodeRef, Layout, Span, Table, Width
from fuzz.tables.declared import Reach
from strategies.configs import serving_configs

HERE = "tests/tables/toy_rows.py"


def draft_tokens(config: ServingConfig) -> int:
    """The tokens a decode step writes past the request's length: the draft tokens, or the one next token."""
    return config.speculative_num_draft_tokens or 1


def toy_row_width(config: ServingConfig) -> int:
    """A row: the context, then headroom for one step's draft tokens (planted: without the page rounding)."""
    return config.context_len + draft_tokens(config)


def toy_write_end(config: ServingConfig, seq_len: int) -> int:
    """Where a decode step's reserve ends: past the draft tokens, rounded up to the allocator's page."""
    page = alloc_page_size(config.page_size, config.attn_dcp_size)
    return -(-(seq_len + draft_tokens(config)) // page) * page


def _data(config: ServingConfig, data: Mapping[str, Any]) -> tuple[int, int]:
    """The case's row and length, checked: a case file is data."""
    if set(data) != {"row", "seq_len"} or not all(type(data[k]) is int for k in data):
        raise ValueError('a toy_rows case is {"row": int, "seq_len": int}')
    row, seq_len = data["row"], data["seq_len"]
    if not 0 <= row < config.max_running_requests or not 1 <= seq_len <= config.context_len:
        raise ValueError(f"row {row} or seq_len {seq_len} is outside {config.short()}")
    return row, seq_len


def observe(width: Callable[[ServingConfig], int]) -> Callable[[Any, ServingConfig, Mapping[str, Any]], list[Access]]:
    """The table's observer for rows ``width`` wide: one decode step's write into the request's row, and what it
    changed past the row (the next row's first columns, or past the last row the guard)."""

    def step(target: Any, config: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
        row, seq_len = _data(config, data)
        w, end = width(config), toy_write_end(config, seq_len)
        rows = config.max_running_requests
        spill = () if end <= w else (Span(row + 1, 0, end - w) if row + 1 < rows else Span(None, 0, end - w, GUARD),)
        ahead = f"reserve {draft_tokens(config)} token(s) past seq_len {seq_len}, rounded to the allocator's page"
        touched, bound = (Span(row, seq_len, end),), (Span(row, 0, w),)
        return [Access("toy_rows", f"request {row}", AccessKind.WRITE, touched, bound, spill, step=ahead)]

    return step


def cases(target: Any, pins: Mapping[str, Any]) -> st.SearchStrategy[tuple[ServingConfig, dict[str, int]]]:
    """A configuration, then a row and a length: at the context limit first (where the rows end), then any."""

    def data(config: ServingConfig) -> st.SearchStrategy[tuple[ServingConfig, dict[str, int]]]:
        seq_len = st.just(config.context_len) | st.integers(1, config.context_len)
        row = st.integers(0, config.max_running_requests - 1)
        return st.tuples(st.just(config), st.fixed_dictionaries({"row": row, "seq_len": seq_len}))

    return serving_configs(pins=pins).flatmap(data)


def group(config: ServingConfig) -> str:
    return regime(config, alloc_page_size(config.page_size, config.attn_dcp_size)).value


def closed_form(width: Callable[[ServingConfig], int]) -> Callable[[Any, ServingConfig], Reach]:
    """The writer's furthest end is at the context limit (it grows with the length)."""

    def reach(target: Any, config: ServingConfig) -> Reach:
        end = toy_write_end(config, config.context_len)
        return Reach(width(config), end, {"row": 0, "seq_len": config.context_len})

    return reach


def fixed_row_width(config: ServingConfig) -> int:
    """The corrected row: the draft tokens' end rounded up to the allocator's page, at the context limit."""
    return toy_write_end(config, config.context_len)


def table(width: Callable[[ServingConfig], int]) -> Table:
    """The table with rows ``width`` wide."""
    return Table(
        name="toy_rows",
        engine="sglang",
        layout=Layout.ROWS,
        width=Width(
            of=lambda target, config: width(config),
            model=lambda config, _: width(config),
            code=(CodeRef(HERE, width.__name__),),
        ),
        writers=(CodeRef(HERE, "toy_write_end"),),
        readers=(),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        cases=cases,
        observe=observe(width),
        group=group,
        closed_form=closed_form(width),
        proved=(Property.WRITE_WITHIN_ROW,),
    )


TABLE = table(toy_row_width)  # the planted bug
FIXED = table(fixed_row_width)  # corrected: every check stays quiet on it
