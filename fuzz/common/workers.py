"""The one worker-pool design behind every ``--jobs``: spawned processes taking tasks, sending events back.

``run``/``lifecycle`` (one task per stream), ``prove`` (the blocks dealt
into parts, taken as workers free up) and ``matrix`` (one task per release)
all run their work through ``WorkerPool``:

* workers are spawned (a fresh interpreter: torch and fork do not mix) and
  ask the parent for the next task as they free up, so a worker that
  finishes early takes the next task;
* a task is ``fn(task, emit)`` for a module-level ``fn`` (it travels by
  name); ``emit(kind, payload)`` sends an event to the parent while it runs,
  and its return value ends it (``End``: done, with the value);
* Ctrl-C reaches the parent only (workers ignore SIGINT); ``interrupt()``
  asks every worker to stop (SIGTERM: taken at the next example,
  ``fuzz.common.interrupts``; the task ends ``stopped`` with what it sends),
  a second call kills them;
* a task that raises ends ``error`` with its one-line message, and a worker
  that dies mid-task (killed, out of memory) ends its task ``error`` too:
  never dropped; a worker whose parent died stops at its next event.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing import connection
from typing import Any

from . import interrupts

POLL_SECONDS = 0.1
DONE, ERROR, STOPPED = "done", "error", "stopped"
_READY = "ready"  # a worker asks for its next task

Emit = Callable[[str, Any], None]
TaskFn = Callable[[Any, Emit], Any]


@dataclass(frozen=True)
class End:
    """How a task ended: ``done`` (``value`` its result), ``error`` (``value`` the one-line message), ``stopped``."""

    kind: str
    value: Any = None


def _worker(fn: TaskFn, conn: Any) -> None:
    """A worker: asks for a task, runs it, sends its events and its end, until the parent sends no more."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops every worker
    signal.signal(signal.SIGTERM, interrupts.handler)  # taken at the next example (``interrupts``)
    parent = multiprocessing.parent_process()
    while True:
        conn.send((None, _READY, None))
        item = conn.recv()
        if item is None:
            return
        i, task = item

        def emit(kind: str, payload: Any, i: int = i) -> None:
            if parent is not None and not parent.is_alive():  # the parent was killed: stop, keep what is saved
                raise KeyboardInterrupt
            conn.send((i, kind, payload))

        try:
            value = fn(task, emit)
        except KeyboardInterrupt:
            conn.send((i, STOPPED, None))
            return
        except BaseException as e:  # noqa: BLE001 - sent to the parent, which reports it for the task
            conn.send((i, ERROR, f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__))
            raise SystemExit(1) from None
        conn.send((i, DONE, value))


@dataclass
class WorkerPool:
    """``jobs`` spawned workers running ``fn`` over ``tasks`` (see the module docstring).

    Each worker has a pipe of its own to the parent, which hands out the
    tasks and reads the events: nothing is shared between workers, so one
    killed mid-write (SIGKILL, out of memory) cannot leave a lock that
    blocks the others.
    """

    fn: TaskFn
    tasks: list[Any]
    jobs: int
    name: str = "kvrow-fuzz"
    ends: dict[int, End] = field(default_factory=dict)
    asked: int = 0  # stop requests sent: 1 asks (SIGTERM), 2 kills

    def __post_init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        n = max(1, min(self.jobs, len(self.tasks)))
        self._conns: list[Any] = []
        self._theirs: list[Any] = []  # the workers' ends, closed here once they started (so a death reads as EOF)
        self._procs: list[Any] = []
        for k in range(n):
            mine, theirs = ctx.Pipe()
            self._conns.append(mine)
            self._theirs.append(theirs)
            self._procs.append(
                ctx.Process(target=_worker, args=(self.fn, theirs), name=f"{self.name}-{k}", daemon=True)
            )
        self._next = 0  # the next task to hand out
        self._running: dict[int, int] = {}  # worker -> the task it runs
        self._open: set[int] = set(range(n))  # workers whose pipe is still open

    def __enter__(self) -> WorkerPool:
        for p, theirs in zip(self._procs, self._theirs, strict=True):
            p.start()
            theirs.close()
        return self

    def __exit__(self, *exc: object) -> None:
        for k in sorted(self._open):  # a worker that ended its last task waits for the next: there is none
            try:
                self._conns[k].send(None)
            except OSError:  # it is gone
                pass
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
        for c in self._conns:
            c.close()

    @property
    def exit_codes(self) -> list[int | None]:
        """Each worker's exit status (None: still running); -9 is one this pool had to kill."""
        return [p.exitcode for p in self._procs]

    @property
    def done(self) -> bool:
        return len(self.ends) == len(self.tasks)

    def interrupt(self) -> None:
        """Ask every worker to stop at its next example; a second time, kill them."""
        self.asked += 1
        for p in self._procs:
            if p.exitcode is None:
                (p.terminate if self.asked == 1 else p.kill)()

    def poll(self, timeout: float = POLL_SECONDS) -> Iterator[tuple[int, str, Any]]:
        """The events that came within ``timeout`` (a task's own kinds, and DONE/ERROR/STOPPED as it ends)."""
        ready = connection.wait([self._conns[k] for k in self._open], timeout)
        for k in sorted(self._conns.index(c) for c in ready):
            try:
                i, kind, payload = self._conns[k].recv()
            except (EOFError, OSError):  # the worker is gone
                self._open.discard(k)
                yield from self._lost(k)
                continue
            if kind == _READY:
                self._hand_out(k)
                continue
            if kind in (DONE, ERROR, STOPPED):
                self.ends[i] = End(kind, payload)
                self._running.pop(k, None)
            yield i, kind, payload
        if not self._open:  # every worker gone: what none of them ran ends too
            for i in range(len(self.tasks)):
                if i not in self.ends:
                    self.ends[i] = End(STOPPED) if self.asked else End(ERROR, "never ran: every worker had exited")
                    yield i, self.ends[i].kind, self.ends[i].value

    def _hand_out(self, k: int) -> None:
        if self._next < len(self.tasks) and not self.asked:
            self._running[k] = self._next
            self._conns[k].send((self._next, self.tasks[self._next]))
            self._next += 1
        else:
            self._conns[k].send(None)

    def _lost(self, k: int) -> Iterator[tuple[int, str, Any]]:
        """Worker k's pipe closed: the task it was running ends (stopped if we asked, else it died)."""
        i = self._running.pop(k, None)
        if i is None or i in self.ends:
            return
        self._procs[k].join(timeout=5)
        end = End(STOPPED) if self.asked else End(ERROR, f"died (exit status {self._procs[k].exitcode})")
        self.ends[i] = end
        yield i, end.kind, end.value

    def run(self, on_event: Callable[[int, str, Any], None]) -> dict[int, End]:
        """Every task to its end, each event handed to ``on_event``; Ctrl-C/SIGTERM stop the workers (twice: kill)."""
        with interrupts.deferred():
            while not self.done:
                try:
                    interrupts.raise_if_requested()
                except KeyboardInterrupt:
                    self.interrupt()
                for event in self.poll():
                    on_event(*event)
        return self.ends
