"""The line that replays a case file: what a finding, a merged report and a block all print.

It starts with how a shell runs this installation (``fuzz.common.program.shell_command``: ``kvrow-fuzz``, else
its entry script's absolute path), so the line pasted into a fresh shell runs, nothing activated by hand.
"""

from __future__ import annotations

import shlex

from fuzz.common.program import shell_command

PLACEHOLDER = "YOUR_CHECKOUT"  # what a repro line gives as --target where a shard's spec would run code a path names


def repro_command() -> str:
    """The words before the case file: this installation's program and ``repro``."""
    return f"{shell_command()} repro"


def repro_line(case_path: str, target: str | None = None) -> str:
    """The command that replays a case file, shell-quoted so it can be pasted as it is."""
    line = f"{repro_command()} {shlex.quote(case_path)}"
    return line + (f" --target {shlex.quote(target)}" if target else "")
