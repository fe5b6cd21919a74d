"""A test-only table, shape 1: rows whose writes are clamped at the row's end while the published length runs past.

An attention backend's page table: row ``row`` holds the pages of one
request, ``max_pages`` wide.  A decode step stores the pages its reserve
adds but stops at the row's end, and publishes the request's page count,
which its readers read.  Planted: the width counts the context's pages but
not the draft tokens' (``max_pages``), so near the limit the write is
clamped, nothing spills, and the reader reads columns past the row that no
write stored: ``read-within-row``, a stale read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st
from shape_configs import draft_tokens, drawn, group, ints, lengths

from allocator_model.config import ServingConfig
from fuzz.findings.kinds import Property
from fuzz.tables import Access, AccessKind, CodeRef, Layout, Span, Table, Width
from fuzz.tables.declared import Reach

HERE = "tests/tables/clamped_rows.py"


def pages(tokens: int, page: int) -> int:
    return -(-tokens // page)


def max_pages(config: ServingConfig) -> int:
    """A row: the pages of the context (planted: the draft tokens' pages are not counted)."""
    return pages(config.context_len, config.page_size)


def fixed_max_pages(config: ServingConfig) -> int:
    """The corrected row: the pages of the context and one step's draft tokens."""
    return pages(config.context_len + draft_tokens(config), config.page_size)


def published(config: ServingConfig, seq_len: int) -> int:
    """The page count a step publishes: the pages of the length and the draft tokens past it."""
    return pages(seq_len + draft_tokens(config), config.page_size)


def observe(width: Callable[[ServingConfig], int]) -> Callable[[Any, ServingConfig, Mapping[str, Any]], list[Access]]:
    def step(target: Any, config: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
        row, seq_len = ints(data, "row", "seq_len")
        if not 0 <= row < config.max_running_requests or not 1 <= seq_len <= config.context_len:
            raise ValueError(f"row {row} or seq_len {seq_len} is outside {config.short()}")
        w, end = width(config), published(config, seq_len)
        start = min(pages(seq_len, config.page_size), w)
        bound = (Span(row, 0, w),)
        return [
            Access("clamped_rows", f"request {row}", AccessKind.WRITE, (Span(row, start, min(end, w)),), bound,
                   step=f"store the pages up to {end}, clamped at the row's end"),
            Access("clamped_rows", f"request {row}", AccessKind.READ, (Span(row, 0, end),), bound,
                   step=f"the reader reads the published {end} pages"),
        ]  # fmt: skip

    return step


def closed_form(width: Callable[[ServingConfig], int]) -> Callable[[Any, ServingConfig], Reach]:
    """The published count is largest at the context limit."""

    def reach(target: Any, config: ServingConfig) -> Reach:
        data = {"row": 0, "seq_len": config.context_len}
        return Reach(width(config), published(config, config.context_len), data, Property.READ_WITHIN_ROW)

    return reach


def row_and_length(config: ServingConfig) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"row": st.integers(0, config.max_running_requests - 1), "seq_len": lengths(config)})


def table(width: Callable[[ServingConfig], int]) -> Table:
    return Table(
        name="clamped_rows",
        engine="sglang",
        layout=Layout.ROWS,
        width=Width(lambda target, c: width(c), lambda c, _: width(c), (CodeRef(HERE, width.__name__),)),
        writers=(CodeRef(HERE, "observe"),),
        readers=(CodeRef(HERE, "published"),),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED, Property.READ_WITHIN_ROW),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        cases=drawn(row_and_length),
        observe=observe(width),
        group=group,
        closed_form=closed_form(width),
        proved=(Property.READ_WITHIN_ROW,),
    )


TABLE = table(max_pages)
FIXED = table(fixed_max_pages)
