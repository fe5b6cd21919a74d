"""``prove --jobs N``: the sweep split over N worker processes on this machine, merged into one result.

The blocks of what shard I/N covers are dealt into ``PARTS_PER_JOB`` x J
parts (``sweep.prove``'s ``blocks_part``: part p of P takes block b when
b mod P = p - 1), and the J workers take the parts one at a time, each as
it finishes the last: the parts partition the sweep, each block's sizing
calls (its traced paths, its sample of plain calls) are made by one worker
only, and a worker dealt lighter blocks takes more parts (blocks differ
several-fold in cost; a fixed split of 0.5.23's full space left one worker
25% longer than the other).  Splitting each block's rows instead would make
every worker trace every block.  Workers are spawned (a fresh interpreter: torch and fork
do not mix), resolve the target from its spec again, and send back their
``ProveResult``; ``result.merge_results`` adds them up.  The verdict is the
single process's (``tests/test_shards.py`` holds the shards' union equal to
the whole).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from allocator_model.pools import KVPool
from fuzz.common.shards import WHOLE, Shard

from .progress import SweepProgress
from .result import ProveResult, merge_results
from .space import Space

PARTS_PER_JOB = 8
_TARGETS: dict[str, Any] = {}  # per worker process: each spec resolved once, for all the parts it sweeps


def _part(args: tuple[str, Space, Shard, dict[str, Any], Any]) -> ProveResult:
    from fuzz.targets import resolve_target

    from .sweep import prove

    spec, space, shard, kw, events = args
    if spec not in _TARGETS:
        _TARGETS[spec] = resolve_target(spec)
    on_block = events.put if events is not None else None
    return prove(_TARGETS[spec], space, shard=shard, on_block=on_block, **kw)


def _follow(futures: list[Future[ProveResult]], events: Any, progress: SweepProgress) -> None:
    """The workers' finished blocks, as they come, into ``progress`` (a line every couple of seconds).

    The pace starts at the first block a worker finishes: starting the
    workers (a fresh interpreter, torch, the target) is not the sweep's pace.
    """
    first = True
    while True:
        try:
            configs = events.get(timeout=0.25)
            if first:
                progress.restart_pace()
                first = False
            progress.block_done(configs, called=False)
        except queue.Empty:
            if all(f.done() for f in futures):
                return


def _progress(
    spec: str, space: Space, algorithm: str | None, kinds: Collection[KVPool] | None, on_line: Callable[[str], None]
) -> SweepProgress:
    """The parent's progress over every block of the sweep (the workers report theirs)."""
    from fuzz.targets import resolve_target

    from .grid import target_algorithms
    from .sweep import blocks

    target = resolve_target(spec)
    return SweepProgress(spec, len(blocks(target, space, target_algorithms(target, algorithm), kinds)), on_line)


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
    on_progress: Callable[[str], None] | None = None,
) -> ProveResult:
    """``sweep.prove`` of ``spec`` with ``jobs`` worker processes (see the module docstring).

    ``on_progress`` gets the blocks the workers finished, of all the sweep's, every couple of seconds.
    """
    kw = {"algorithm": algorithm, "calls": calls, "traced": traced, "device": device, "kinds": kinds}
    t0 = time.monotonic()
    spawn = multiprocessing.get_context("spawn")
    with contextlib.ExitStack() as stack:
        events = stack.enter_context(spawn.Manager()).Queue() if on_progress else None
        pool = stack.enter_context(ProcessPoolExecutor(jobs, mp_context=spawn))
        n = jobs * PARTS_PER_JOB
        parts_of = [(spec, space, shard, kw | {"blocks_part": Shard(p, n)}, events) for p in range(1, n + 1)]
        futures = [pool.submit(_part, part) for part in parts_of]
        if on_progress:
            _follow(futures, events, _progress(spec, space, algorithm, kinds, on_progress))
        parts = [f.result() for f in futures]
    merged = merge_results(parts)
    merged.seconds = time.monotonic() - t0
    return merged
