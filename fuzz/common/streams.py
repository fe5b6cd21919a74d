"""Standard output that survives its reader going away, a full disk, or not being open at all; and the one
record of outputs a command lost, which its exit status answers for.

``fuzz run ... | head -1`` closes the pipe after one line; ``>/dev/full`` fails every write with ENOSPC;
``>&-`` starts the process with no standard output (``sys.stdout`` is None).  None of these is a reason to
stop: the campaign must still write every case file and exit with the status its findings give (1), not die
on BrokenPipeError or OSError.  Once a write fails, output is discarded (the descriptor is pointed at
/dev/null, so the interpreter's own final flush cannot fail either) and the work goes on.

A reader that went away (EPIPE) asked for no more: nothing is lost, nothing is said, the status is the
command's own.  Anything else (ENOSPC, EIO, no standard output at all when there was something to show) lost
output somebody meant to read: one line on stderr says so, and ``LOST`` remembers it, as it remembers an
output file that could not be written (``fuzz.findings.output.guarded``).  ``settled`` then turns a clean
exit into 2 (``fuzz.cli.main``): a command whose output is lost never exits 0, so a script reading
``paths > FILE`` or ``repro --emit-test > FILE`` on a full disk never takes an empty file for an answer.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from .errors import ExitCode


class LostOutputs:
    """What one command could not put where it was meant to go (standard output, a file); reset per command."""

    def __init__(self) -> None:
        self.what: list[str] = []

    def add(self, what: str) -> None:
        self.what.append(what)

    def reset(self) -> None:
        self.what.clear()

    def __bool__(self) -> bool:
        return bool(self.what)


LOST = LostOutputs()  # the process's one record: ``fuzz.cli.main`` resets it before each command


class ClosedPipeTolerant:
    """A text stream proxy: writes pass through until the stream cannot take them, then go nowhere."""

    def __init__(self, stream: TextIO | None):
        self._stream = stream
        self.closed_pipe = stream is None  # no standard output at all: nothing to write to

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)  # type: ignore[union-attr]
            except OSError as e:
                self._closed(e)
        elif self._stream is None and text and not self._said:
            self._lose("standard output is closed")
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()  # type: ignore[union-attr]
            except OSError as e:
                self._closed(e)

    _said = False  # the one line about lost output is printed (once per stream)

    def _lose(self, what: str) -> None:
        LOST.add("standard output")
        self._said = True
        _say(what)

    def _closed(self, error: OSError) -> None:
        self.closed_pipe = True
        if not isinstance(error, BrokenPipeError):  # a reader that left wants no more; anything else is lost
            self._lose(f"standard output cannot be written ({error.strerror or error})")
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


def settled(status: int) -> int:
    """The exit status of a command that returned ``status``, once standard output is flushed: a clean status
    (0) becomes 2 when any output was lost (``LOST``); a finding (1) or an interrupt (130) says more and stays."""
    try:
        sys.stdout.flush()  # what is still buffered fails here, not unseen at the interpreter's exit
    except (OSError, ValueError, AttributeError):  # not our proxy (a test's capture): nothing to learn
        pass
    return ExitCode.BAD_INPUT if status == ExitCode.CLEAN and LOST else status


def _say(what: str) -> None:
    """The one line lost standard output is worth (on stderr, if that can be written)."""
    try:
        print(
            f"fuzz: {what}: what it would show is lost and the exit status will not be 0; "
            "the command goes on and still writes its files",
            file=sys.stderr,
            flush=True,
        )
    except (OSError, AttributeError, ValueError):
        pass
