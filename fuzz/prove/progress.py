"""What a long ``prove`` says while it runs: how far the sweep is, and about how long is left.

A sweep that calls a release's sizing functions per configuration checks
about 1,500 launch configurations a second, so the full space takes hours;
it must not sit silent.  ``SweepProgress`` prints a line at the start and
then at most every ``every`` seconds (on stderr, through ``on_line``):

* calling a target's functions: first the launch configurations are
  counted (a fraction of the sweep's time), then each line gives the
  configurations done of the total, the rate and the time left at that
  rate;
* a model target (vectorized, minutes at most): blocks (one algorithm at
  one page size) done of the total, and the time left at the blocks' pace.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


def duration(seconds: float) -> str:
    """``45s``, ``12m05s``, ``2h21m``: short enough for a progress line."""
    s = max(int(seconds + 0.5), 0)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


@dataclass
class SweepProgress:
    """The sweep's position; ``tick``/``block_done`` advance it and print when ``every`` seconds have passed."""

    target: str
    blocks: int  # blocks in the sweep (algorithm x page size)
    on_line: Callable[[str], None]
    every: float = 2.0
    configs_total: int | None = None  # launch configurations in the sweep, when counted first
    blocks_done: int = 0
    configs_done: int = 0
    clock: Callable[[], float] = time.monotonic
    started: float = -1.0  # when the pace started (the clock's time at creation unless set)
    _last: float = -1.0

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()
        self._last = self.started

    def restart_pace(self) -> None:
        """The pace (and the next line) counts from now: what came before was start-up, not sweeping."""
        self.started = self._last = self.clock()

    def due(self) -> bool:
        now = self.clock()
        if now - self._last < self.every:
            return False
        self._last = now
        return True

    def say(self, line: str) -> None:
        self.on_line(f"[{self.target}] prove: {line}")

    def counting(self, counted: int) -> None:
        """``counted`` blocks of the sweep counted so far (the count comes before a called sweep)."""
        if self.due():
            self.say(f"counting launch configurations: block {counted} of {self.blocks}")

    def tick(self, configs: int = 1) -> None:
        """``configs`` more launch configurations called."""
        self.configs_done += configs
        if self.due():
            self.say(self.line())

    def block_done(self, configs: int, called: bool) -> None:
        """A block finished (its ``configs`` counted here unless ``called`` already ticked them)."""
        self.blocks_done += 1
        if not called:
            self.configs_done += configs
        if self.due():
            self.say(self.line())

    def fraction(self) -> float:
        if self.configs_total:
            return min(self.configs_done / self.configs_total, 1.0)
        return self.blocks_done / self.blocks if self.blocks else 1.0

    def left(self) -> str:
        """The time left at the pace so far (``estimating`` before there is a pace)."""
        f, elapsed = self.fraction(), self.clock() - self.started
        if f <= 0 or elapsed <= 0:
            return "estimating the time left"
        return f"about {duration(elapsed * (1 - f) / f)} left"

    def line(self) -> str:
        elapsed = self.clock() - self.started
        if self.configs_total:
            rate = self.configs_done / max(elapsed, 1e-9)
            return (
                f"{self.configs_done:,} of {self.configs_total:,} launch configurations "
                f"({100 * self.fraction():.1f}%), {rate:,.0f}/s, {duration(elapsed)}, {self.left()}"
            )
        return (
            f"block {self.blocks_done} of {self.blocks}, {self.configs_done:,} launch configurations, "
            f"{duration(elapsed)}, {self.left()}"
        )
