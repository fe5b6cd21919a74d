"""Exit statuses and the one error a command reports as a single line.

Every command exits with an ``ExitCode``: 0 clean (or, for ``repro``, the
failure no longer reproduces), 1 at least one finding, 2 bad input (one line
on stderr, never a traceback), 130 interrupted before anything was found.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    CLEAN = 0
    FOUND = 1
    BAD_INPUT = 2
    INTERRUPTED = 130


class BadInput(Exception):
    """Input the tool refuses: reported as one line and exit status 2."""


MAX_ERROR_CHARS = 500  # a hostile value (a 50,000-character pin) is never echoed whole


def one_line(message: str, limit: int = MAX_ERROR_CHARS) -> str:
    """A bad-input message as the one line it is printed as: lines joined, controls escaped, ``limit`` long at most."""
    from .text import printable

    text = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    return printable(text, limit)
