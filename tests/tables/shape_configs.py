"""What the test-only table shapes share: SGLang's configurations, drawn and grouped as the engine does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from allocator_model.config import ServingConfig
from allocator_model.regimes import regime
from allocator_model.sizing import alloc_page_size
from strategies.configs import serving_configs


def draft_tokens(config: ServingConfig) -> int:
    """The tokens a decode step writes past the request's length: the draft tokens, or the one next token."""
    return config.speculative_num_draft_tokens or 1


def alloc_page(config: ServingConfig) -> int:
    return alloc_page_size(config.page_size, config.attn_dcp_size)


def group(config: ServingConfig) -> str:
    """The bug group of a configuration: its regime, as SGLang's findings are grouped."""
    return regime(config, alloc_page(config)).value


def lengths(config: ServingConfig) -> st.SearchStrategy[int]:
    """A request's length: at the context limit first (where the parts end), then any."""
    return st.just(config.context_len) | st.integers(1, config.context_len)


def drawn(
    data: Callable[[ServingConfig], st.SearchStrategy[dict[str, Any]]],
) -> Callable[[Any, Mapping[str, Any]], st.SearchStrategy[tuple[ServingConfig, dict[str, Any]]]]:
    """A table's ``cases``: a configuration (the pins applied), then the table's data for it."""

    def cases(target: Any, pins: Mapping[str, Any]) -> st.SearchStrategy[tuple[ServingConfig, dict[str, Any]]]:
        return serving_configs(pins=pins).flatmap(lambda c: st.tuples(st.just(c), data(c)))

    return cases


def ints(data: Mapping[str, Any], *names: str) -> list[int]:
    """The named integers of a case's data, checked: a case file is data."""
    if set(data) != set(names) or not all(type(data[n]) is int for n in names):
        raise ValueError(f"this table's case is {{{', '.join(repr(n) + ': int' for n in names)}}}")
    return [data[n] for n in names]
