"""A test-only table, shape 2: one flat buffer in which each request holds a range.

A buffer laid out per batch: request i's range starts where request i-1's
ends (the offsets are cumulative sums of the range lengths).  A decode step
writes the request's length plus the draft tokens into its range.  Planted:
the ranges are sized from the lengths alone (``range_len``), so each
request's draft tokens land in the start of the next request's range (the
last one's past the buffer): ``write-within-row``, the victim named.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st
from shape_configs import draft_tokens, drawn, group, lengths

from allocator_model.config import ServingConfig
from fuzz.findings.kinds import Property
from fuzz.tables import GUARD, Access, AccessKind, CodeRef, Layout, Span, Table, Width
from fuzz.tables.declared import Reach

HERE = "tests/tables/flat_ranges.py"
MAX_REQUESTS = 4


def range_len(config: ServingConfig, seq_len: int) -> int:
    """A request's range (planted: its length only, not the draft tokens its step writes)."""
    return seq_len


def fixed_range_len(config: ServingConfig, seq_len: int) -> int:
    """The corrected range: the length and one step's draft tokens."""
    return seq_len + draft_tokens(config)


def _lens(config: ServingConfig, data: Mapping[str, Any]) -> list[int]:
    lens = data.get("seq_lens") if set(data) == {"seq_lens"} else None
    if not isinstance(lens, list) or not 1 <= len(lens) <= MAX_REQUESTS or any(type(n) is not int for n in lens):
        raise ValueError(f'a flat_ranges case is {{"seq_lens": [1 to {MAX_REQUESTS} ints]}}')
    if any(not 1 <= n <= config.context_len for n in lens):
        raise ValueError(f"a length of {lens} is outside {config.short()}")
    return lens


def observe(
    size: Callable[[ServingConfig, int], int],
) -> Callable[[Any, ServingConfig, Mapping[str, Any]], list[Access]]:
    def step(target: Any, config: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
        lens = _lens(config, data)
        sizes = [size(config, n) for n in lens]
        bases = [sum(sizes[:i]) for i in range(len(sizes) + 1)]  # bases[-1]: the buffer's end
        out = []
        for i, n in enumerate(lens):
            end, own_end, buffer_end = bases[i] + n + draft_tokens(config), bases[i + 1], bases[-1]
            spill = []  # what lands past its range: the next request's first, then past the buffer
            if own_end < min(end, buffer_end):
                spill.append(Span(None, own_end, min(end, buffer_end), f"request {i + 1}'s range"))
            if end > buffer_end:
                spill.append(Span(None, buffer_end, end, GUARD))
            touched, bound = (Span(None, bases[i], end),), (Span(None, bases[i], bases[i + 1]),)
            step = f"write its {n} tokens and {draft_tokens(config)} draft token(s)"
            out.append(Access("flat_ranges", f"request {i}", AccessKind.WRITE, touched, bound, tuple(spill), step=step))
        return out

    return step


def closed_form(size: Callable[[ServingConfig, int], int]) -> Callable[[Any, ServingConfig], Reach]:
    """The write past its range is longest for the longest request."""

    def reach(target: Any, config: ServingConfig) -> Reach:
        n = config.context_len
        return Reach(size(config, n), n + draft_tokens(config), {"seq_lens": [n, 1]})

    return reach


def batch(config: ServingConfig) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"seq_lens": st.lists(lengths(config), min_size=1, max_size=MAX_REQUESTS)})


def table(size: Callable[[ServingConfig, int], int]) -> Table:
    return Table(
        name="flat_ranges",
        engine="sglang",
        layout=Layout.RANGES,
        width=Width(
            lambda target, c: size(c, c.context_len),
            lambda c, _: size(c, c.context_len),
            (CodeRef(HERE, size.__name__),),
        ),
        writers=(CodeRef(HERE, "observe"),),
        readers=(),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        cases=drawn(batch),
        observe=observe(size),
        group=group,
        closed_form=closed_form(size),
        proved=(Property.WRITE_WITHIN_ROW,),
    )


TABLE = table(range_len)
FIXED = table(fixed_range_len)
