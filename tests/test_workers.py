"""The one worker pool behind every ``--jobs`` (``fuzz.common.workers``): tasks taken as workers free up, events
reach the parent, and no task is ever dropped (one that raises, one whose worker dies, one asked to stop)."""

from __future__ import annotations

import os
import time
from typing import Any

from fuzz.common.workers import DONE, ERROR, STOPPED, WorkerPool


def square(task: int, emit: Any) -> int:
    emit("seen", os.getpid())
    return task * task


def raises_or_dies(task: str, emit: Any) -> str:
    if task == "raise":
        raise ValueError("no good\nsecond line")
    if task == "die":
        os._exit(3)
    return task


def waits_for_sigterm(task: int, emit: Any) -> int:
    from fuzz.common import interrupts

    emit("waiting", task)
    for _ in range(600):
        interrupts.raise_if_requested()  # what a campaign does at each example
        time.sleep(0.05)
    return task


def test_every_task_ends_done_in_task_order_with_its_events():
    seen: list[tuple[int, str, Any]] = []
    with WorkerPool(square, list(range(7)), 2) as pool:
        ends = pool.run(lambda i, kind, payload: seen.append((i, kind, payload)))
    assert [ends[i].kind for i in range(7)] == [DONE] * 7 and [ends[i].value for i in range(7)] == [
        i * i for i in range(7)
    ]
    pids = {p for _, kind, p in seen if kind == "seen"}
    assert len([e for e in seen if e[1] == "seen"]) == 7 and 1 <= len(pids) <= 2  # two workers took them all
    assert pool.exit_codes == [0, 0]  # each told there is no more, none left waiting and killed at the exit


def test_a_raising_task_and_a_dying_worker_end_their_task_as_errors():
    with WorkerPool(raises_or_dies, ["ok", "raise", "die"], 3) as pool:
        ends = pool.run(lambda *event: None)
    assert ends[0].kind == DONE and ends[0].value == "ok"
    assert ends[1].kind == ERROR and ends[1].value == "ValueError: no good"
    assert ends[2].kind == ERROR and ends[2].value == "died (exit status 3)"
    assert sorted(pool.exit_codes) == [0, 1, 3]  # ok's worker told there is no more; raise's exits 1; die's 3


def test_asked_to_stop_every_task_ends_stopped():
    waiting: set[int] = set()
    with WorkerPool(waits_for_sigterm, [1, 2], 2) as pool:
        while len(waiting) < 2:
            for i, kind, _ in pool.poll():
                if kind == "waiting":
                    waiting.add(i)
        pool.interrupt()
        ends = pool.run(lambda *event: None)
    assert {e.kind for e in ends.values()} == {STOPPED} and pool.asked == 1
