"""``prove --jobs N``: the sweep split over N worker processes on this machine, merged into one result.

The blocks of what shard I/N covers are dealt into ``PARTS_PER_JOB`` x J
parts (``sweep.prove``'s ``blocks_part``: part p of P takes block b when
b mod P = p - 1), and the J workers take the parts one at a time, each as
it finishes the last: the parts partition the sweep, each block's sizing
calls (its traced paths, its sample of plain calls) are made by one worker
only, and a worker dealt lighter blocks takes more parts (blocks differ
several-fold in cost; a fixed split of 0.5.23's full space left one worker
25% longer than the other).  Splitting each block's rows instead would make
every worker trace every block.  The parts are the tasks of the one worker pool
(``fuzz.common.workers``: spawned processes); a worker resolves the target
from its spec once, and sends back each part's ``ProveResult``;
``result.merge_results`` adds them up.  The verdict is the
single process's (``tests/test_shards.py`` holds the shards' union equal to
the whole).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fuzz.common.shards import Shard
from fuzz.common.workers import DONE, STOPPED, Emit, WorkerPool
from fuzz.prove.progress import SweepProgress
from fuzz.targets.base import TargetError

from .request import ProveRequest
from .result import ProveResult, merge_results

PARTS_PER_JOB = 8
_TARGETS: dict[str, Any] = {}  # per worker process: each spec resolved once, for all the parts it sweeps


def _part(args: tuple[str, ProveRequest], emit: Emit) -> ProveResult:
    """One part of the sweep in a worker (``fuzz.common.workers``); each finished block is an event."""
    from fuzz.targets.resolve import resolve_target

    from .sweep import prove

    spec, part = args
    if spec not in _TARGETS:
        _TARGETS[spec] = resolve_target(spec)
    return prove(_TARGETS[spec], part, on_block=lambda configs: emit("block", configs))


def _progress(spec: str, request: ProveRequest, on_line: Callable[[str], None]) -> SweepProgress:
    """The parent's progress over every block of the sweep (the workers report theirs)."""
    from fuzz.targets.resolve import resolve_target

    from .grid import target_algorithms
    from .sweep import blocks

    target = resolve_target(spec)
    todo = blocks(target, request.space, target_algorithms(target, request.algorithm), request.kinds)
    return SweepProgress(spec, len(todo), on_line)


def prove_in_parallel(
    spec: str, request: ProveRequest, jobs: int, *, on_progress: Callable[[str], None] | None = None
) -> ProveResult:
    """``sweep.prove`` of ``spec`` with ``jobs`` worker processes (see the module docstring).

    ``on_progress`` gets the blocks the workers finished, of all the sweep's, every couple of seconds.
    """
    t0 = time.monotonic()
    n = jobs * PARTS_PER_JOB
    parts_of = [(spec, request.part(Shard(p, n))) for p in range(1, n + 1)]
    progress = _progress(spec, request, on_progress) if on_progress else None
    started = False

    def on_event(i: int, kind: str, payload: Any) -> None:
        nonlocal started
        if kind == "block" and progress is not None:
            if not started:  # the pace starts at the first finished block, not at the workers' start-up
                progress.restart_pace()
                started = True
            progress.block_done(payload, called=False)

    with WorkerPool(_part, parts_of, jobs, name="kvrow-fuzz-prove") as pool:
        ends = pool.run(on_event)
    failed = [e for e in ends.values() if e.kind != DONE]
    if failed:
        if any(e.kind == STOPPED for e in failed):
            raise KeyboardInterrupt
        raise TargetError(f"prove --jobs: a worker failed: {failed[0].value}")
    merged = merge_results([ends[i].value for i in range(n)])
    merged.seconds = time.monotonic() - t0
    return merged
