"""``--shard I/N`` and ``--jobs N``: how one campaign or one proof is split across machines and cores.

Shards are numbered from 1 (``--shard 1/3``, ``2/3``, ``3/3``), as a
GitHub Actions matrix lists them.  Shard I of N takes item ``i`` of any
deterministic enumeration exactly when ``i mod N == I - 1``, so the N
shards partition it: their union is the whole, and no item is taken twice.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from .text import parse_int, printable

MAX_SHARDS = 4096
MAX_JOBS = 512


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``; ``Shard(1, 1)`` is the whole."""

    index: int
    count: int

    def takes(self, i: int) -> bool:
        """Whether item ``i`` (0-based) of an enumeration is this shard's: the shards partition it."""
        return i % self.count == self.index - 1

    @property
    def offset(self) -> int:
        """The 0-based index of this shard."""
        return self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


WHOLE = Shard(1, 1)


def parse_shard(text: str) -> Shard:
    """An argparse type: ``I/N`` with 1 <= I <= N (at most ``MAX_SHARDS``)."""
    index, sep, count = text.strip().partition("/")
    try:
        i, n = parse_int(index), parse_int(count)
    except ValueError:
        shown = printable(text, 60)
        raise argparse.ArgumentTypeError(f"expected I/N (e.g. 2/3, shards numbered from 1), got {shown!r}") from None
    if not sep or not 1 <= n <= MAX_SHARDS or not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected I/N with 1 <= I <= N <= {MAX_SHARDS}, got {printable(text, 60)!r}")
    return Shard(i, n)


def every_core() -> int:
    """The cores this process may run on (its affinity where the OS says, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not every OS has affinity
        return max(1, os.cpu_count() or 1)


def parse_jobs(text: str) -> int:
    """An argparse type: a positive number of worker processes, or ``0``/``auto`` for every core."""
    if text.strip().lower() == "auto":
        return every_core()
    try:
        n = parse_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of jobs, 0 or auto, got {printable(text, 60)!r}") from None
    if n < 0 or n > MAX_JOBS:
        raise argparse.ArgumentTypeError(f"expected 0 (every core) to {MAX_JOBS} jobs, got {n}")
    return n or every_core()
