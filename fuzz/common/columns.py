"""Text at a width: what every command prints as text fits ``WIDTH`` columns and still reads and pastes.

A report is read in a terminal, a CI log or an issue: a line past the
screen's edge is cut or wrapped where the terminal likes.  ``fold`` breaks
prose at spaces with a hanging indent (a word is never split: a path or a
signature stays whole, so it may run past the edge alone);
``shell_lines`` breaks a command line between its arguments with shell
continuations (`` \\`` and an indent), each flag kept with its value, so the
lines pasted together are the same command; ``collapse_chains`` shortens
a call chain to its entry point and its last call.  Only the text changes:
the JSON report, case files and SARIF keep every line whole.
"""

from __future__ import annotations

import re
import textwrap

WIDTH = 120  # columns of every line a command prints as text
HANG = 2  # how much further a folded line's continuation is indented than the line itself
CONTINUATION = 4  # how much further a command's continuation lines are indented than its first

# One shell word as written: unquoted runs, '...' and "..." strings, escapes, glued together.
_WORD = re.compile(r"""(?:[^\s'"\\]+|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+""")
_NAME = r"[A-Za-z_][\w.]*"
_CHAIN = re.compile(rf"{_NAME}(?: -> {_NAME}){{3,}}")  # a call chain of four calls or more
_NOTE = re.compile(r"^(?P<command>.*?)  \((?P<note>.*)\)$")  # ``COMMAND  (note)``: what a launch line adds


def fold(text: str, width: int = WIDTH, hang: int = HANG) -> str:
    """Each line of ``text`` at most ``width`` columns where its words allow: a longer one broken at spaces, its
    continuations indented ``hang`` columns more than it; a line that fits is left exactly as it is."""
    out: list[str] = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += textwrap.wrap(
            line[len(lead) :],
            width,
            initial_indent=lead,
            subsequent_indent=lead + " " * hang,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(out)


def shell_lines(label: str, command: str, width: int = WIDTH) -> list[str]:
    """``label`` + ``command`` in lines of at most ``width`` columns that paste and run as the one command: each
    line but the last ends in `` \\``, the next is indented ``CONTINUATION`` columns past the label's own indent,
    a flag stays with its value and a quoted word stays whole.  A trailing ``  (note)`` (what the command leaves
    to the user, such as which model) goes on a line of its own as a ``# note`` comment."""
    note = _NOTE.match(command)
    if note:
        command = note["command"]
    units: list[str] = []
    for word in _WORD.findall(command):
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += " " + word  # a flag and its value: one unit
        else:
            units.append(word)
    indent = " " * (len(label) - len(label.lstrip()) + CONTINUATION)
    heads = [label.rstrip() + " "]
    rows: list[list[str]] = [[]]
    for unit in units:
        if rows[-1] and len(heads[-1] + " ".join([*rows[-1], unit])) + 2 > width:
            heads.append(indent)
            rows.append([])
        rows[-1].append(unit)
    lines = [head + " ".join(row) for head, row in zip(heads, rows, strict=True)]
    lines = [line + " \\" for line in lines[:-1]] + [lines[-1].rstrip()]
    if note:
        lines.append(fold(f"{indent}# {note['note']}", width))
    return lines


def collapse_chains(text: str) -> str:
    """``a -> b -> c -> d`` as ``a -> (2 more) -> d``: a chain of calls shown by its entry point and its last call
    (the writer, on a write path); the whole chain stays in the report."""
    return _CHAIN.sub(lambda m: _collapsed(m.group().split(" -> ")), text)


def _collapsed(calls: list[str]) -> str:
    return f"{calls[0]} -> ({len(calls) - 2} more) -> {calls[-1]}"
