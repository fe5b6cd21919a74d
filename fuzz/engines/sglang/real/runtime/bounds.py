"""A time bound on every call into SGLang's code, and the record of which of its functions a call entered.

``bounded(what, seconds, loader)``: on the main thread a ``SIGALRM`` timer
(``signal.setitimer(ITIMER_REAL)``) raises ``SGLangTimeout`` in the running
frame, which also interrupts a blocking system call; off the main thread a
watchdog thread injects it with ``PyThreadState_SetAsyncExc``, which takes
effect at the next bytecode (a C call that never returns to Python, such as
a blocked lock, is then not interrupted).  The exception names the innermost
executed SGLang function that was running: one line, never a stalled run.
An earlier SIGALRM handler and timer are restored afterwards.

``SGLangTimeout`` derives from ``BaseException`` so SGLang's own
``except Exception`` blocks cannot swallow it.

``Entered``: a ``sys.settrace`` hook (a global one only: no line events, so
about 1 ms per step) recording, in order and once each, the
functions defined in the executed SGLang files that a call entered (the
kernels included: triton's interpreter calls their Python functions).  The
previous trace function (a debugger's, coverage's) is restored afterwards,
and is not called meanwhile.
"""

from __future__ import annotations

import _signal
import contextlib
import ctypes
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from fuzz.common.compat import code_qualname

DEFAULT_SECONDS = 60.0


class SGLangTimeout(BaseException):
    """A call into SGLang's code ran past its time bound."""


def _innermost(frame: types.FrameType | None, known: Callable[[str], str | None]) -> str:
    while frame is not None:
        module = known(frame.f_code.co_filename)
        if module is not None:
            return f"{code_qualname(frame.f_code)} ({module} line {frame.f_lineno})"
        frame = frame.f_back
    return "no SGLang function (the harness)"


def _named(what: str | Callable[[], str]) -> str:
    return what if isinstance(what, str) else what()


def bounded(
    what: str | Callable[[], str], seconds: float, known: Callable[[str], str | None]
) -> contextlib.AbstractContextManager[None]:
    """Run the block with a time bound of ``seconds``; past it, ``SGLangTimeout`` naming the running function.

    ``what``: the call, or a function naming it (worked out only when the bound is passed)."""
    if seconds <= 0:
        return contextlib.nullcontext()
    if threading.current_thread() is threading.main_thread():
        return _Alarm(what, seconds, known)
    return _watchdog(what, seconds)


class _Alarm:
    """The main thread's bound: a ``SIGALRM`` timer for the block, the handler and timer before it put back after.

    A class, not a generator, on ``_signal`` (what ``signal`` wraps, without its enum conversions, 4 us a
    call): a proof enters one per sizing call (about 10^5), so it costs what its system calls cost.  The
    handler ``_signal.signal`` returns is the raw value ``signal.signal`` would have wrapped; put back as it is.
    """

    __slots__ = ("what", "seconds", "known", "previous", "old")

    def __init__(self, what: str | Callable[[], str], seconds: float, known: Callable[[str], str | None]) -> None:
        self.what, self.seconds, self.known = what, seconds, known

    def _handler(self, signum: int, frame: types.FrameType | None) -> None:
        raise SGLangTimeout(
            f"{_named(self.what)} ran past its {self.seconds:g}s bound, in {_innermost(frame, self.known)}"
        )

    def __enter__(self) -> None:
        self.previous = _signal.signal(_signal.SIGALRM, self._handler)
        self.old = _signal.setitimer(_signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _signal.signal(_signal.SIGALRM, self.previous)
        old_delay, old_interval = self.old
        if old_delay:
            _signal.setitimer(_signal.ITIMER_REAL, old_delay, old_interval)


@contextlib.contextmanager
def _watchdog(what: str | Callable[[], str], seconds: float) -> Iterator[None]:
    """Off the main thread: a watcher injects the timeout into this thread, once, only while the block runs.

    The injection is never cleared with ``PyThreadState_SetAsyncExc(id, NULL)``: in CPython 3.11 that
    leaves the interpreter's "async exception pending" flag up, and every later bytecode of every thread
    then takes the slow path (with a trace function set, a step no longer finishes).
    """
    target = threading.get_ident()
    done = threading.Event()
    lock = threading.Lock()
    running = [True]

    class _Timeout(SGLangTimeout):
        def __init__(self) -> None:
            super().__init__(
                f"{_named(what)} ran past its {seconds:g}s bound (off the main thread: named by the caller)"
            )

    def watch() -> None:
        if not done.wait(seconds):
            with lock:
                if running[0]:
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(_Timeout))

    watcher = threading.Thread(target=watch, name="kvrow-sglang-timebound", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            running[0] = False
        done.set()
        watcher.join()


class Entered:
    """The executed SGLang functions a block entered, in order, each once (``names``)."""

    def __init__(self, known: Callable[[str], str | None]) -> None:
        self._known = known
        self.names: list[str] = []
        self._seen: set[tuple[str, str]] = set()
        self._filenames: dict[str, bool] = {}

    def _hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        # A global trace function: called once per new frame ("call"); returning None traces no lines.
        code = frame.f_code
        filename = code.co_filename
        hit = self._filenames.get(filename)
        if hit is None:
            hit = self._filenames[filename] = self._known(filename) is not None
        if not hit or code.co_name.startswith("<"):
            return
        name = code_qualname(code)
        if (filename, name) not in self._seen:
            self._seen.add((filename, name))
            self.names.append(name)

    def recording(self) -> contextlib.AbstractContextManager[None]:
        return _traced_by(self._hook)


@contextlib.contextmanager
def _traced_by(hook: Callable[..., Any] | None) -> Iterator[None]:
    """``hook`` as the global trace function for the block; the one before it put back after."""
    previous = sys.gettrace()
    sys.settrace(hook)
    try:
        yield
    finally:
        sys.settrace(previous)


def untraced() -> contextlib.AbstractContextManager[None]:
    """A block whose calls into SGLang's code are the harness's own, not the path's: no ``Entered`` records them."""
    return _traced_by(None)
