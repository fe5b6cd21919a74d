"""What a sweep is asked to do: one ``ProveRequest`` (the space, what of it, how, where), decided once.

``request(target, space, ...)`` turns the command line's choices into it:
the method follows from the target (a model target's formulas are
vectorized; a real target's functions are traced once per path, or called
once per configuration with ``traced=False``; ``calls=True`` calls even a
model target's), so the sweep reads one value instead of three flags.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from dataclasses import dataclass

from allocator_model.pools import KVPool
from fuzz.common.compat import StrEnum
from fuzz.common.shards import WHOLE, Shard
from fuzz.engines.sglang.target_type import SGLangTarget

from .grid import ALL_ALGORITHMS
from .space import SPACES, Space


class Method(StrEnum):
    """How a sweep gets each configuration's sizing numbers (what its report's ``method`` says)."""

    VECTORIZED = "vectorized model"  # the revision's formulas on tensors
    TRACED = "sizing calls, once per path of each block"  # the target's functions on traced values
    CALLS = "sizing calls per configuration"  # the target's functions, one configuration at a time

    @property
    def calls(self) -> bool:
        return self is not Method.VECTORIZED


@dataclass(frozen=True)
class ProveRequest:
    """One sweep: its space and method, which algorithm(s) and kinds of pool, which slice, on which device.

    ``shard``: only that shard's launch configurations (``grid.shard_mask``); the shards' sweeps partition it.
    ``blocks_part``: only the blocks it takes (block i when ``blocks_part.takes(i)``): how ``--jobs`` splits a
    sweep between worker processes, each block (and its sizing calls) swept by one of them.
    """

    space: Space
    method: Method
    algorithm: str | None = ALL_ALGORITHMS
    kinds: frozenset[KVPool] | None = None  # None: every kind the target's release builds
    shard: Shard = WHOLE
    blocks_part: Shard = WHOLE
    device: str = "cpu"  # where the sweep's tensors live; the verdict does not depend on it

    def part(self, blocks_part: Shard) -> ProveRequest:
        return dataclasses.replace(self, blocks_part=blocks_part)


def request(
    target: SGLangTarget,
    space: Space | str = "full",
    *,
    algorithm: str | None = ALL_ALGORITHMS,
    calls: bool | None = None,
    traced: bool = True,
    kinds: Collection[KVPool] | None = None,
    shard: Shard = WHOLE,
    blocks_part: Shard = WHOLE,
    device: str = "cpu",
) -> ProveRequest:
    """The request for ``target``: ``calls`` (default: a real target) calls its functions, ``traced`` once per
    path of each block where the target has plain callers (``Surface.plain``), else once per configuration."""
    by_calls = not target.is_model if calls is None else calls
    if not by_calls:
        method = Method.VECTORIZED
    elif traced and target.sizing.plain() is not None:
        method = Method.TRACED
    else:
        method = Method.CALLS
    return ProveRequest(
        SPACES[space] if isinstance(space, str) else space,
        method,
        algorithm,
        None if kinds is None else frozenset(kinds),
        shard,
        blocks_part,
        device,
    )
