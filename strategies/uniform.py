"""A uniform random sampler of the same space, for comparison benchmarks only.

Every dimension is drawn uniformly, and the committed length uniformly in
[1, bound]: what fuzzing looks like without near-limit strategies.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TypeVar

from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario

from . import space

T = TypeVar("T")


class RandomChooser:
    """The ``choose`` interface of strategies.space (``space.Chooser``), backed by ``random.Random``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integers(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def sampled_from(self, values: Iterable[T]) -> T:
        return self.rng.choice(tuple(values))

    def booleans(self) -> bool:
        return self.rng.random() < 0.5

    def often(self, value: T, values: Iterable[T]) -> T:
        return self.sampled_from(values)  # uniform: no preference

    def subset(self, values: Iterable[int], min_size: int, max_size: int) -> tuple[int, ...]:
        pool = tuple(values)
        return tuple(sorted(self.rng.sample(pool, self.rng.randint(min_size, min(max_size, len(pool))))))


def uniform_scenario(rng: random.Random, revision: Revision) -> DecodeScenario:
    scenario = space.decode_scenario(RandomChooser(rng), revision, near_limit=False)
    assert scenario is not None  # never None without pins
    return scenario
