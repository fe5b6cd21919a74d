"""Text that came from outside (a shard's report, a case file, a target's message) made safe to show.

One sanitiser for every string printed from data this tool did not make
itself: ``printable`` escapes every character that could end a line, move
the cursor, recolour the terminal or reorder what is shown (C0 and C1
controls, DEL, the Unicode line and paragraph separators, the bidirectional
overrides, lone surrogates), so one value prints as one line that says
what it holds.  ``markdown_block`` puts lines into a fenced code block that
no line can close: the fence is longer than any run of backticks inside.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Characters never shown as they are: controls, separators, bidi overrides and isolates, lone surrogates.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\ud800-\udfff]")
MAX_SHOWN = 2000  # characters of one untrusted value shown at the most


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(value: object, limit: int = MAX_SHOWN) -> str:
    """``value`` as text on one line: every unsafe character escaped (``\\x1b``, ``\\u2028``), cut at ``limit``."""
    text = _UNSAFE.sub(_escape, str(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def markdown_block(lines: Iterable[str]) -> str:
    """A fenced Markdown code block of ``lines`` (each made ``printable``) that nothing inside can close."""
    shown = [printable(line) for line in lines]
    longest = max((len(run) for line in shown for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *shown, fence]) + "\n"
