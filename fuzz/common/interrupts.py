"""Ctrl-C and SIGTERM that are never lost.

A KeyboardInterrupt raised by a signal handler lands wherever the
interpreter happens to be; inside a garbage-collector callback (Hypothesis
installs one) it is printed as "Exception ignored" and dropped, and the run
goes on.  So while a campaign runs (``deferred``), a signal only sets a flag,
and the campaign raises KeyboardInterrupt at its next example
(``raise_if_requested``), where it always propagates.  A second signal
interrupts at once; outside a campaign a signal interrupts at once.

Writing what was found (``shielded``) is never interrupted: a signal then
only sets the flag, however many arrive, so a second Ctrl-C after findings
still leaves the report and the SARIF log on disk.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class _State:
    deferred = 0
    shielded = 0
    requested = False


def handler(signum: int, frame: FrameType | None) -> None:
    if _State.shielded:
        _State.requested = True
        return
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


@contextmanager
def shielded() -> Iterator[None]:
    """Signals during the block (a few writes: the report, the SARIF log) only set the flag, however many;
    ``requested()`` afterwards tells whether one came."""
    _State.shielded += 1
    try:
        yield
    finally:
        _State.shielded -= 1


def requested() -> bool:
    """Whether a signal is waiting to be taken (``raise_if_requested``)."""
    return _State.requested
