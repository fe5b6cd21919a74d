"""Hypothesis strategies over valid serving configurations (built valid, never filtered)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from hypothesis import reject
from hypothesis import strategies as st

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.pools import KVPool

from . import space

T = TypeVar("T")


class DrawChooser:
    """The ``choose`` interface of strategies.space (``space.Chooser``), backed by a Hypothesis ``draw``."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integers(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def sampled_from(self, values: Iterable[T]) -> T:
        return self.draw(st.sampled_from(tuple(values)))

    def booleans(self) -> bool:
        return self.draw(st.booleans())

    def often(self, value: T, values: Iterable[T]) -> T:
        # Half the time ``value``, and what shrinking moves to: booleans shrink to False.
        return self.sampled_from(values) if self.draw(st.booleans()) else value

    def subset(self, values: Iterable[int], min_size: int, max_size: int) -> tuple[int, ...]:
        return tuple(sorted(self.draw(st.sets(st.sampled_from(tuple(values)), min_size=min_size, max_size=max_size))))


@st.composite
def spec_args(draw: st.DrawFn, algorithm: str | None) -> dict[str, Any]:
    return space.spec_args(DrawChooser(draw), algorithm)


@st.composite
def serving_configs(
    draw: st.DrawFn,
    algorithms: Collection[str] = algo.ALL,
    pins: Mapping[str, Any] | None = None,
    pools: Mapping[KVPool, Collection[str]] | None = None,
    dcp: bool = True,
    hisparse_adaptive: bool = True,
    alloc_pages: Callable[[int], bool] | None = None,
) -> ServingConfig:
    """A valid configuration; ``pools``: the kinds of KV pool to draw with their algorithms (None: standard only).

    ``dcp`` False: the release has no decode context parallelism, attn_dcp_size is 1; ``hisparse_adaptive`` and
    ``alloc_pages``: as ``space.serving_config`` takes them.
    """
    chooser = DrawChooser(draw)
    cfg = space.serving_config(
        chooser, algorithms, pins, pools, dcp=dcp, hisparse_adaptive=hisparse_adaptive, alloc_pages=alloc_pages
    )
    if cfg is None:
        reject()  # only pinned fields can clash with drawn ones
    return cfg
