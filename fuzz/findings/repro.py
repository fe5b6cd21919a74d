"""The line that replays a case file: what a finding, a merged report and a block all print."""

from __future__ import annotations

import shlex

REPRO_COMMAND = "python -m fuzz repro"
PLACEHOLDER = "YOUR_CHECKOUT"  # what a repro line gives as --target where a shard's spec would run code a path names


def repro_line(case_path: str, target: str | None = None) -> str:
    """The command that replays a case file, shell-quoted so it can be pasted as it is."""
    line = f"{REPRO_COMMAND} {shlex.quote(case_path)}"
    return line + (f" --target {shlex.quote(target)}" if target else "")
