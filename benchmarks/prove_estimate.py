"""How far ``prove``'s "about N left" is from the time it really took: the estimate at 25% of its blocks.

    python benchmarks/prove_estimate.py [--target sglang==0.5.23] [--space full] [--at 0.25]

Runs ``kvrow-fuzz prove`` in this process, its progress lines (stderr) and
report (stdout) timestamped as they are printed.  At the first progress line
at or past ``--at`` of the sweep's blocks it takes the estimate that line
prints, and sets it against the time that really remained: until the
proof's report began (the sweep and its witnesses' confirmation) and until
the command ended.  Beside it, what the blocks' pace (the estimate before
issue 35: elapsed x blocks left / blocks done) said at the same line.  The
target: within a factor of 1.5.  Figures are this run's (a shared machine is
noisy: run it twice).  A real release needs its wheel in the cache.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from typing import TextIO

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuzz.cli import main as cli  # noqa: E402

BLOCK = re.compile(r"\] prove: block (?P<done>\d+) of (?P<blocks>\d+), .*, (?P<elapsed>\S+), (?P<left>.*)$")
TARGET_FACTOR = 1.5


class Stamped:
    """A text stream that keeps each line with the time it was completed."""

    def __init__(self, echo: TextIO | None = None) -> None:
        self.lines: list[tuple[float, str]] = []
        self._part = ""
        self.echo = echo

    def write(self, text: str) -> int:
        now = time.monotonic()
        *whole, self._part = (self._part + text).split("\n")
        self.lines += [(now, line) for line in whole]
        if self.echo is not None:
            self.echo.write(text)
        return len(text)

    def flush(self) -> None:
        if self.echo is not None:
            self.echo.flush()

    def isatty(self) -> bool:
        return False


def seconds(text: str) -> float:
    """``45s``, ``12m05s``, ``2h21m`` (``fuzz.prove.progress.duration``) back to seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not m or not text:
        raise ValueError(f"not a duration: {text!r}")
    h, mi, s = (int(g or 0) for g in m.groups())
    return 3600 * h + 60 * mi + s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="sglang==0.5.23")
    p.add_argument("--space", default="full")
    p.add_argument("--at", type=float, default=0.25, help="the fraction of the blocks done (default 0.25)")
    args = p.parse_args()
    err, out = Stamped(echo=sys.stderr), Stamped()
    with tempfile.TemporaryDirectory() as cases:
        real_out, real_err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
        try:
            started = time.monotonic()
            code = cli(["prove", "--target", args.target, "--space", args.space, "--cases", cases])
            ended = time.monotonic()
        finally:
            sys.stdout, sys.stderr = real_out, real_err
    report = next(t for t, line in out.lines if line.strip())
    at = next(
        ((t, m) for t, line in err.lines if (m := BLOCK.search(line)) and int(m["done"]) >= args.at * int(m["blocks"])),
        None,
    )
    print(f"prove --target {args.target} --space {args.space}: exit {code}, {ended - started:.1f}s in all")
    if at is None:
        raise SystemExit(f"no progress line at or past {args.at:.0%} of the blocks (a sweep under 2 s?)")
    t, m = at
    done, blocks, elapsed = int(m["done"]), int(m["blocks"]), seconds(m["elapsed"])
    said = re.fullmatch(r"about (\S+) left", m["left"])
    if said is None:
        raise SystemExit(f"the line at block {done} of {blocks} gives no estimate: {m['left']!r}")
    estimate = seconds(said[1])
    paced = elapsed * (blocks - done) / done
    to_report, to_end = report - t, ended - t
    print(f"at block {done} of {blocks} ({done / blocks:.0%}), {t - started:.1f}s in: estimate {estimate:.0f}s left")
    print(f"  really left: {to_report:.1f}s until the proof's report, {to_end:.1f}s until the command ended")
    for name, value in (("estimate", estimate), ("blocks' pace (before)", paced)):
        ratio = max(value, 1e-9) / to_report
        verdict = "within" if max(ratio, 1 / ratio) <= TARGET_FACTOR else "outside"
        print(f"  {name}: {value:.0f}s, {ratio:.2f}x the time until the report ({verdict} {TARGET_FACTOR}x)")


if __name__ == "__main__":
    main()
