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


MAX_INT_DIGITS = 40  # an integer a user or a file gives this tool: far past any size, seed or count it takes
_INT = re.compile(rf"\s*[+-]?[0-9]{{1,{MAX_INT_DIGITS}}}\s*", re.ASCII)


def parse_int(text: str) -> int:
    """The integer ``text`` spells (a sign, at most ``MAX_INT_DIGITS`` digits, spaces around): the one parser of
    integers given as text, so a 5,000-digit value is refused here in one line, never by Python's digit limit
    deep in a command; ValueError (its message names the value, shortened) otherwise."""
    if not isinstance(text, str) or not _INT.fullmatch(text):
        raise ValueError(f"not an integer of at most {MAX_INT_DIGITS} digits: {printable(text, 60)}")
    return int(text)
