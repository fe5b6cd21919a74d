"""A uniform random sampler of the same space, for comparison benchmarks only.

Every dimension is drawn uniformly, and the committed length uniformly in
[1, bound]: what fuzzing looks like without near-limit strategies.
"""

from __future__ import annotations

import random

from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario

from . import space


class RandomChooser:
    """The ``choose`` interface of strategies.space, backed by ``random.Random``."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def integers(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def sampled_from(self, values):
        return self.rng.choice(tuple(values))

    def booleans(self) -> bool:
        return self.rng.random() < 0.5

    def often(self, value, values):
        return self.sampled_from(values)  # uniform: no preference

    def subset(self, values, min_size: int, max_size: int) -> tuple:
        values = tuple(values)
        return tuple(sorted(self.rng.sample(values, self.rng.randint(min_size, min(max_size, len(values))))))


def uniform_scenario(rng: random.Random, revision: Revision) -> DecodeScenario:
    return space.decode_scenario(RandomChooser(rng), revision, near_limit=False)  # never None without pins
