"""``prove --jobs N``: the sweep split over N worker processes on this machine, merged into one result.

Each worker sweeps one sub-shard of the space (``grid.shard_mask``): within
shard I of N, worker j of J takes shard (I - 1) + N j + 1 of N J, so the J
workers partition exactly what shard I/N covers (and with ``--shard`` unset,
the whole space).  Workers are spawned (a fresh interpreter: torch and fork
do not mix), resolve the target from its spec again, and send back their
``ProveResult``; ``result.merge_results`` adds them up.  The verdict is the
single process's (``tests/test_shards.py`` holds the shards' union equal to
the whole).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Collection
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from allocator_model.pools import KVPool
from fuzz.common.shards import WHOLE, Shard

from .result import ProveResult, merge_results
from .space import Space


def sub_shards(shard: Shard, jobs: int) -> list[Shard]:
    """The ``jobs`` shards of ``shard.count * jobs`` whose union is ``shard``."""
    return [Shard(shard.offset + shard.count * j + 1, shard.count * jobs) for j in range(jobs)]


def _part(args: tuple[str, Space, Shard, dict[str, Any]]) -> ProveResult:
    from fuzz.targets import resolve_target

    from .sweep import prove

    spec, space, shard, kw = args
    return prove(resolve_target(spec), space, shard=shard, **kw)


def prove_in_parallel(
    spec: str,
    space: Space,
    jobs: int,
    *,
    shard: Shard = WHOLE,
    algorithm: str | None,
    calls: bool | None,
    traced: bool,
    device: str,
    kinds: Collection[KVPool] | None = None,
) -> ProveResult:
    """``sweep.prove`` of ``spec`` with ``jobs`` worker processes (see the module docstring)."""
    kw = {"algorithm": algorithm, "calls": calls, "traced": traced, "device": device, "kinds": kinds}
    t0 = time.monotonic()
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(pool.map(_part, [(spec, space, sub, kw) for sub in sub_shards(shard, jobs)]))
    merged = merge_results(parts)
    merged.seconds = time.monotonic() - t0
    return merged
