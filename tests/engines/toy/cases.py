"""The toy engine's Hypothesis strategy: a configuration, then a request's row and its length.

Drawn as plain tuples (``Engine.fuzzed_draws``: the plugin's property tests
and ``run``'s hunt draw the same values).  The length is the context limit
first, then any: where a row ends is where its width matters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from .config import LIMITS, ToyConfig

Drawn = tuple[ToyConfig, int, int]  # (configuration, row, seq_len)


def _field(name: str, pins: Mapping[str, Any]) -> st.SearchStrategy[int]:
    if name in pins:
        return st.just(pins[name])
    low, high = LIMITS[name]
    if name == "page_size":
        return st.sampled_from([p for p in (1, 2, 4, 8, 16) if low <= p <= high])
    return st.integers(low, high)


def configs(pins: Mapping[str, Any] | None = None) -> st.SearchStrategy[ToyConfig]:
    """Every valid configuration, ``--pin``ned fields held (checked first by ``config.check_pins``)."""
    return st.builds(ToyConfig, **{name: _field(name, pins or {}) for name in LIMITS})


def step_cases(pins: Mapping[str, Any] | None = None) -> st.SearchStrategy[Drawn]:
    """A configuration, a row of its batch and a length within its context, the context limit first."""

    def case(config: ToyConfig) -> st.SearchStrategy[Drawn]:
        seq_len = st.just(config.context_len) | st.integers(1, config.context_len)
        return st.tuples(st.just(config), st.integers(0, config.rows - 1), seq_len)

    return configs(pins).flatmap(case)
