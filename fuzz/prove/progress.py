"""What a long ``prove`` says while it runs: how far the sweep is, and about how long is left.

A sweep that calls a release's sizing functions per configuration checks
about 1,500 launch configurations a second, so the full space takes hours;
it must not sit silent.  ``SweepProgress`` prints a line at the start and
then at most every ``every`` seconds (on stderr, through ``on_line``):

* calling a target's functions: first the launch configurations are
  counted (a fraction of the sweep's time), then each line gives the
  configurations done of the total, the rate and the time left at that
  rate;
* a traced or vectorized sweep: blocks (one kind of pool, one algorithm,
  one page size) done of the total, and the time left as the blocks left
  will cost (``BlockCost``).

Blocks differ in cost by three orders of magnitude (a block without
speculation holds 16 launch configurations, an EAGLE block at one page size
277,072; a kind of pool a release refuses most launches of holds few), so
the blocks' pace misleads: on ``sglang==0.5.23``'s full space it said "about
2m42s left" at 11 s of a sweep that ended 41 s later.  The sweep counts each
block's launch configurations first (``sizes``) and the time left is what
the measured blocks cost, per block and per configuration, applied to the
blocks left.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

MIN_BLOCK_SECONDS = 1e-3  # a block's measured time, at least (its weight in the fit is 1 / its time)


@dataclass
class BlockCost:
    """What a block costs as the measured ones say: ``per_block + per_config * configurations``.

    Fitted by least squares over the measured blocks, each weighed by 1 / its time: a block's time varies in
    proportion to its length on a shared machine, so a long block's noise must not swamp what the short ones
    say of the cost every block pays.  Undetermined (None) until the measured blocks hold two sizes at least.
    """

    n: int = 0
    w: float = 0.0  # sums of the weights, and of weight x configs, x time, x configs^2, x configs x time
    wc: float = 0.0
    wt: float = 0.0
    wcc: float = 0.0
    wct: float = 0.0
    sizes: set[int] = field(default_factory=set)

    def add(self, seconds: float, configs: int) -> None:
        t = max(seconds, MIN_BLOCK_SECONDS)
        w = 1.0 / t
        self.n += 1
        self.w += w
        self.wc += w * configs
        self.wt += w * t
        self.wcc += w * configs * configs
        self.wct += w * configs * t
        if len(self.sizes) < 2:
            self.sizes.add(configs)

    def fit(self) -> tuple[float, float] | None:
        """(per block, per configuration) seconds, neither negative; None while undetermined."""
        if len(self.sizes) < 2:
            return None
        det = self.w * self.wcc - self.wc * self.wc
        per_config = (self.w * self.wct - self.wc * self.wt) / det if det > 0 else -1.0
        per_block = (self.wt - per_config * self.wc) / self.w
        if per_config < 0:  # the blocks' lengths say nothing of their sizes: the mean block
            return self.wt / self.w, 0.0
        if per_block < 0:  # nothing paid per block: the configurations' pace
            return 0.0, self.wct / self.wcc
        return per_block, per_config


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
    # Each block's launch configurations, in the order the sweep takes them (None: not counted; the blocks' pace).
    sizes: list[int] | None = None
    cost: BlockCost = field(default_factory=BlockCost)  # what the blocks done cost
    _last: float = -1.0
    _block_started: float = -1.0

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()
        self._last = self._block_started = self.started

    def restart_pace(self) -> None:
        """The pace (and the next line) counts from now: what came before was start-up, not sweeping."""
        self.started = self._last = self._block_started = self.clock()

    def due(self) -> bool:
        now = self.clock()
        if now - self._last < self.every:
            return False
        self._last = now
        return True

    def say(self, line: str) -> None:
        self.on_line(f"[{self.target}] prove: {line}")

    def tick(self, configs: int = 1) -> None:
        """``configs`` more launch configurations called."""
        self.configs_done += configs
        if self.due():
            self.say(self.line())

    def block_done(self, configs: int, called: bool) -> None:
        """A block finished (its ``configs`` counted here unless ``called`` already ticked them); what it cost is
        measured from the end of the one before."""
        now = self.clock()
        self.cost.add(now - self._block_started, configs)
        self._block_started = now
        self.blocks_done += 1
        if not called:
            self.configs_done += configs
        if self.due():
            self.say(self.line())

    def fraction(self) -> float:
        if self.configs_total:
            return min(self.configs_done / self.configs_total, 1.0)
        return self.blocks_done / self.blocks if self.blocks else 1.0

    def seconds_left(self) -> float | None:
        """The time left (None: not yet known).  Calls once per configuration: at the configurations' pace so
        far.  Counted blocks: the blocks left as the measured ones cost (``BlockCost``).  Else the blocks'
        pace."""
        if self.sizes is not None and not self.configs_total:
            fit = self.cost.fit()
            if fit is None:
                return None
            left = self.sizes[self.blocks_done :]
            return fit[0] * len(left) + fit[1] * sum(left)
        f, elapsed = self.fraction(), self.clock() - self.started
        if f <= 0 or elapsed <= 0:
            return None
        return elapsed * (1 - f) / f

    def left(self) -> str:
        """The time left, said (``estimating`` before it is known)."""
        seconds = self.seconds_left()
        return "estimating the time left" if seconds is None else f"about {duration(seconds)} left"

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
