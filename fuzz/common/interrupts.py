"""Ctrl-C and SIGTERM that are never lost.

A KeyboardInterrupt raised by a signal handler lands wherever the
interpreter happens to be; inside a garbage-collector callback (Hypothesis
installs one) it is printed as "Exception ignored" and dropped, and the run
goes on.  So while a campaign runs (``deferred``), a signal only sets a flag,
and the campaign raises KeyboardInterrupt at its next example
(``raise_if_requested``), where it always propagates.  A second signal
interrupts at once; outside a campaign a signal interrupts at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class _State:
    deferred = 0
    requested = False


def handler(signum: int, frame: FrameType | None) -> None:
    if _State.deferred and not _State.requested:
        _State.requested = True
        return
    raise KeyboardInterrupt


def install() -> None:
    """SIGINT and SIGTERM (CI cancels, time limits) both stop a run the same way; main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)


def raise_if_requested() -> None:
    """Raise KeyboardInterrupt here if a signal asked for it (call at safe points: between examples)."""
    if _State.requested:
        _State.requested = False
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """Signals during the block set a flag for ``raise_if_requested`` instead of raising wherever they land."""
    _State.deferred += 1
    try:
        yield
    finally:
        _State.deferred -= 1
        if not _State.deferred:
            _State.requested = False
