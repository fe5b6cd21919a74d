"""Standard output that survives its reader going away, a full disk, or not being open at all.

``fuzz run ... | head -1`` closes the pipe after one line; ``>/dev/full`` fails every write with ENOSPC;
``>&-`` starts the process with no standard output (``sys.stdout`` is None).  None of these is a reason to
stop: the campaign must still write every case file and exit with the status its findings give (1), not die
on BrokenPipeError or OSError, or exit 0.  Once a write fails, output is discarded (the descriptor is pointed
at /dev/null, so the interpreter's own final flush cannot fail either), one line on stderr says so unless the
reader simply went away, and the work goes on.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


class ClosedPipeTolerant:
    """A text stream proxy: writes pass through until the stream cannot take them, then go nowhere."""

    def __init__(self, stream: TextIO | None):
        self._stream = stream
        self.closed_pipe = stream is None  # no standard output at all: nothing to write to
        if stream is None:
            _say("standard output is closed")

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)  # type: ignore[union-attr]
            except OSError as e:
                self._closed(e)
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()  # type: ignore[union-attr]
            except OSError as e:
                self._closed(e)

    def _closed(self, error: OSError) -> None:
        self.closed_pipe = True
        if not isinstance(error, BrokenPipeError):  # a reader that left wants no more; anything else is news
            _say(f"standard output cannot be written ({error.strerror or error})")
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())  # type: ignore[union-attr]
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's capture)
            pass

    def isatty(self) -> bool:
        return False if self._stream is None else self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _say(what: str) -> None:
    """The one line an unwritable standard output is worth (on stderr, if that can be written)."""
    try:
        print(f"fuzz: {what}: the run goes on; its results go to the files it writes", file=sys.stderr, flush=True)
    except (OSError, AttributeError, ValueError):
        pass
