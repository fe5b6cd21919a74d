"""The bounded spaces ``prove`` sweeps: ``Space`` (the values of each dimension) and ``SPACES`` by name.

``full`` is the issue's space (about 12 million launch configurations),
``small`` a few values per dimension for targets whose sizing functions are
called per configuration, ``tiny`` seconds for the tests; each reaches every
regime.  Configurations outside server_args' rules are masked out later
(``grid.launch_grid``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from allocator_model.config import DEFAULT_ADAPTIVE_CANDIDATE_STEPS
from strategies.space import PAGE_SIZES


@dataclass(frozen=True)
class Space:
    """The dimensions swept; configurations outside server_args' rules are masked out."""

    name: str
    page_sizes: tuple[int, ...]
    dcp_sizes: tuple[int, ...]
    steps: tuple[int, ...]
    topks: tuple[int, ...]
    draft_tokens: tuple[int, ...]  # EAGLE topk > 1, NGRAM, DFLASH, DSPARK (EAGLE topk 1 uses S + 1)
    uno_draft_tokens: tuple[int, ...]
    # Adaptive candidate step sets: every subset of adaptive_steps with at most this many
    # members, plus SGLang's default set; every member as the launch step count.
    adaptive_max_candidates: int
    adaptive_steps: tuple[int, ...]

    def candidate_sets(self) -> list[tuple[int, ...]]:
        sets = {
            tuple(c)
            for n in range(1, self.adaptive_max_candidates + 1)
            for c in itertools.combinations(self.adaptive_steps, n)
        }
        sets.add(tuple(DEFAULT_ADAPTIVE_CANDIDATE_STEPS))
        return sorted(sets, key=lambda s: (len(s), s))

    def describe(self) -> str:
        return (
            f"{self.name}: page_size {_span(self.page_sizes)} x attn_dcp_size {_span(self.dcp_sizes)} x "
            f"steps {_span(self.steps)} x topk {_span(self.topks)} x draft tokens {_span(self.draft_tokens)} "
            f"(UNO {_span(self.uno_draft_tokens)}) x adaptive candidate sets (subsets of "
            f"{_span(self.adaptive_steps)} up to {self.adaptive_max_candidates}, and the default) "
            f"x every algorithm x overlap on/off x every residue of context_len mod the allocator page"
        )


def _span(values: Iterable[int]) -> str:
    v = sorted(values)
    if len(v) > 2 and v == list(range(v[0], v[-1] + 1)):
        return f"{v[0]}..{v[-1]}"
    return "{" + ",".join(map(str, v)) + "}"


SPACES: dict[str, Space] = {
    "full": Space(
        "full",
        PAGE_SIZES,
        tuple(range(1, 17)),
        tuple(range(1, 17)),
        tuple(range(1, 17)),
        tuple(range(1, 65)),
        tuple(range(1, 129)),
        3,
        tuple(range(16)),
    ),
    # For targets whose sizing is called per configuration: every regime, a few values per dimension.
    "small": Space(
        "small",
        (1, 2, 3, 4, 16, 64, 256),
        (1, 2, 3, 4, 8, 16),
        (1, 2, 3, 4, 5, 8, 16),
        (1, 2, 4, 8, 16),
        (1, 2, 3, 4, 6, 8, 9, 12, 16, 17, 24, 32, 64),
        (2, 4, 8, 9, 16, 17, 33, 64, 65, 128),
        2,
        tuple(range(16)),
    ),
    # For tests: seconds, still every regime.
    "tiny": Space(
        "tiny", (1, 2, 3, 16, 64), (1, 2, 3, 8), (1, 2, 5), (1, 2, 4), (1, 4, 8, 17), (3, 8, 17, 128), 1, (0, 1, 3, 7)
    ),
}
