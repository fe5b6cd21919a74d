"""Hypothesis strategies over valid serving configurations (built valid, never filtered)."""

from __future__ import annotations

from hypothesis import assume, strategies as st

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig

from . import space


class DrawChooser:
    """The ``choose`` interface of strategies.space, backed by a Hypothesis ``draw``."""

    def __init__(self, draw):
        self.draw = draw

    def integers(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def sampled_from(self, values):
        return self.draw(st.sampled_from(tuple(values)))

    def booleans(self) -> bool:
        return self.draw(st.booleans())

    def often(self, value, values):
        return value if self.draw(st.booleans()) else self.sampled_from(values)

    def subset(self, values, min_size: int, max_size: int) -> tuple:
        return tuple(sorted(self.draw(st.sets(st.sampled_from(tuple(values)), min_size=min_size, max_size=max_size))))


@st.composite
def spec_args(draw, algorithm: str | None) -> dict:
    return space.spec_args(DrawChooser(draw), algorithm)


@st.composite
def serving_configs(draw, algorithms=algo.ALL, pins: dict | None = None) -> ServingConfig:
    cfg = space.serving_config(DrawChooser(draw), algorithms, pins)
    assume(cfg is not None)  # only pinned fields can clash with drawn ones
    return cfg
