"""The target boundary: what a call into a target's sizing code may raise, how long it may run, how large an
answer may be.

Target code is not ours.  Whatever it raises is what it did (a finding: ``sizing-raised``), including what is
not an ``Exception`` (``TARGET_BASE_EXCEPTIONS``: a sizing function raising GeneratorExit or calling
sys.exit() is broken; the tool neither stops nor exits for it); only the user's KeyboardInterrupt and this
tool's own signals pass through.  An answer past ``MAX_SIZING_ANSWER`` is a finding before any tensor is sized
from it (never a 26 TB allocation); a call that does not return within ``SIZING_SECONDS`` is one line and exit 2.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from fuzz.common.bounds import MAX_SIZING_ANSWER
from fuzz.targets.base import TargetCallError

from .runtime.bounds import bounded

# One call into a target's sizing code (a page size, a row width, a reserve) answers in microseconds; past this
# it does not return (a loop that never ends): one line and exit 2, never a stalled CI job.
SIZING_SECONDS = 30.0


class _Depth(threading.local):
    depth = 0


_BOUND = _Depth()


def depth() -> int:
    """How many sizing calls this thread is inside (the outermost carries the time bound)."""
    return _BOUND.depth


class bounded_call:  # noqa: N801 - used as a function: ``with bounded_call(what, filename):``
    """The time bound of one outermost sizing call (``runtime.bounds.bounded``), naming the running function.

    A class, not a generator: a proof makes about 10^5 such calls."""

    __slots__ = ("what", "filename", "inner")

    def __init__(self, what: Callable[[], str], filename: str) -> None:
        self.what, self.filename = what, filename

    def _known(self, name: str) -> str | None:
        return "the sizing file" if name == self.filename else None

    def __enter__(self) -> None:
        _BOUND.depth += 1
        try:
            self.inner = bounded(self.what, SIZING_SECONDS, self._known)
            self.inner.__enter__()
        except BaseException:
            _BOUND.depth -= 1
            raise

    def __exit__(self, *exc: Any) -> bool | None:
        try:
            return self.inner.__exit__(*exc)
        finally:
            _BOUND.depth -= 1


# What target code may raise that is not an ``Exception`` yet is no signal of ours (KeyboardInterrupt is the
# user's; the tracer's ``Unsupported`` and the write path's time bound pass through): a sizing function that
# raises GeneratorExit or calls sys.exit() is broken, and the tool neither stops nor exits for it.
TARGET_BASE_EXCEPTIONS: tuple[type[GeneratorExit], type[SystemExit]] = (GeneratorExit, SystemExit)
RAISED_BY_TARGET: tuple[type[Exception], type[GeneratorExit], type[SystemExit]] = (Exception, *TARGET_BASE_EXCEPTIONS)


class TargetRaised(Exception):
    """Target code raised one of ``TARGET_BASE_EXCEPTIONS``: as an ordinary exception, named as it was."""


def out_of_range(value: int, where: Callable[[], str], context: Callable[[], str]) -> None:
    """A ``TargetCallError`` (a finding: sizing-out-of-range) for a count (a page, a width, a reserve) past
    ``MAX_SIZING_ANSWER``: checked here, before any tensor is sized from it.  ``where`` and ``context`` word the
    call and its arguments, only for the error.  (Aligned lens are not counts: they follow the lengths they are
    given, and a row write past the pool is observed, never allocated.)"""
    if value > MAX_SIZING_ANSWER:
        shown = str(value) if value < 10**15 else f"~1e{len(str(value)) - 1}"
        raise TargetCallError(
            f"{where()} returned {shown}, past this tool's bound of {MAX_SIZING_ANSWER} for any sizing answer "
            f"(sizing-out-of-range) {context()}"
        )
