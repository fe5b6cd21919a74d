"""A line every few seconds while a long step runs that cannot report its own position.

``fidelity`` compares thousands of configurations in one call; rather than
sit silent for a minute, the command says it is still at it.  The lines
come from a daemon thread, which stops (and is joined) when the block ends,
however it ends.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HEARTBEAT_SECONDS = 5.0


@contextmanager
def heartbeat(say: Callable[[float], None] | None, every: float = HEARTBEAT_SECONDS) -> Iterator[None]:
    """While the block runs, ``say(seconds elapsed)`` every ``every`` seconds (None: nothing)."""
    if say is None:
        yield
        return
    stop = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            say(time.monotonic() - started)

    thread = threading.Thread(target=beat, name="kvrow-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
