"""Exit statuses and the one error a command reports as a single line.

Every command exits with an ``ExitCode``: 0 clean (or, for ``repro``, the
failure no longer reproduces), 1 at least one finding, 2 bad input or an
output that could not be written (one line on stderr, never a traceback),
3 no verdict (the process running the command ended before sending it:
never clean, ``fuzz.common.guard``), 130 interrupted before anything was
found.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class ExitCode(IntEnum):
    CLEAN = 0
    FOUND = 1
    BAD_INPUT = 2
    NO_VERDICT = 3
    INTERRUPTED = 130


class BadInput(Exception):
    """Input the tool refuses: reported as one line and exit status 2."""


class TargetError(Exception):
    """A target spec that cannot be resolved (bad name, missing file, no network, no engine for it...)."""


class WriteFailed(OSError):
    """An output file that could not be written (a full disk, EIO, a symbolic link refused): ``filename`` is the
    output's path, ``strerror`` why.  An OSError, so a caller that goes on after a failed write catches it as one."""


def os_error_line(error: OSError) -> str:
    """The one line an OSError that ended a command is: what could not be done to which file, and why."""
    from .text import printable

    why = error.strerror or str(error) or type(error).__name__
    if error.filename is None:
        return printable(why, 300)
    verb = "could not write " if isinstance(error, WriteFailed) else ""
    return f"{verb}{printable(error.filename, 300)}: {printable(why, 200)}"


MAX_ERROR_CHARS = 500  # a hostile value (a 50,000-character pin) is never echoed whole


def one_line(message: str, limit: int = MAX_ERROR_CHARS) -> str:
    """A bad-input message as the one line it is printed as: lines joined, controls escaped, ``limit`` long at most."""
    from .text import printable

    text = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    return printable(text, limit)


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``; did you mean 'run'?`` for the closest of ``known`` to a mistyped ``word`` ("" if none is close)."""
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
