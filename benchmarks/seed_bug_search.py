"""Time and examples to the first counterexample of the seed bug: the campaign, uniform random, and ``prove``.

    python benchmarks/seed_bug_search.py [--revision sglang-0.5.18] [--seeds 10] [--group dcp>1]

The seed bug (#35424) is the group ``write-within-row/dcp>1`` on 0.5.18.
The campaign (the covering set, then Hypothesis), Hypothesis alone and the
uniform sampler are the samplers of ``examples_to_failure.py`` (reused, same
stopping rule), timed per seed; an example is one decode scenario.  ``prove`` enumerates the bounded space
in a fixed order and stops after the block in which the group first turns
up; its examples are the configurations it checked before the first one of
the group (a configuration here covers every committed length up to the
bound, in closed form), and its time is to the end of that block.  Then the
whole sweep, for the total.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from examples_to_failure import campaign, hypothesis_alone, uniform  # noqa: E402  (the lead's samplers)

from fuzz.engines.sglang.prove.request import request  # noqa: E402
from fuzz.engines.sglang.prove.sweep import prove  # noqa: E402
from fuzz.findings.kinds import Property, Signature  # noqa: E402
from fuzz.targets.base import Target, resolve_target  # noqa: E402


def timed_sampler(
    fn: Callable[[Target, int, str], int], target: Target, seeds: int, group: str
) -> tuple[list[int], list[float]]:
    counts, seconds = [], []
    for s in range(seeds):
        t0 = time.perf_counter()
        counts.append(fn(target, s, group))
        seconds.append(time.perf_counter() - t0)
    return counts, seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--revision", default="sglang-0.5.18")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--group", default="dcp>1", help="regime of the write-within-row group (the seed bug: dcp>1)")
    args = p.parse_args(argv)
    target = resolve_target(f"reference@{args.revision}")
    signature = Signature(Property.WRITE_WITHIN_ROW, args.group)
    print(f"target {target.spec}, group {signature}; samplers over {args.seeds} seeds (median, max)", flush=True)
    print(f"{'method':<20} {'examples to first':>22} {'seconds to first':>22}")
    for name, fn in (
        ("campaign (ours)", campaign),
        ("hypothesis alone", hypothesis_alone),
        ("uniform random", uniform),
    ):
        counts, seconds = timed_sampler(fn, target, args.seeds, args.group)
        print(
            f"{name:<20} {statistics.median(counts):>13,.1f} ({max(counts):>6,}) "
            f"{statistics.median(seconds):>13.3f} ({max(seconds):>6.2f})",
            flush=True,
        )

    t0 = time.perf_counter()
    first = prove(target, request(target, "full"), stop_when=lambda r: signature in r.groups)
    first_s = time.perf_counter() - t0
    grp = first.groups.get(signature)
    if grp is None:
        print(f"{'prove':<20} the group is not in the bounded space")
        return 1
    print(
        f"{'prove':<20} {(grp.first_at or 0) + 1:>22,} {first_s:>22.3f}   (block of {first.configurations:,} "
        f"configurations, {first.launch_configurations:,} launch configurations)"
    )
    t0 = time.perf_counter()
    full = prove(target, request(target, "full"))
    print(
        f"prove, whole space: {full.groups[signature].configurations:,} of {full.configurations:,} configurations "
        f"in the group, worst {full.groups[signature].worst} columns past the row, {time.perf_counter() - t0:.1f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
