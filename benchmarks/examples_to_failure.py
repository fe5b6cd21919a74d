"""Examples to the first counterexample: the campaign, Hypothesis alone, and a uniform random sampler.

    python benchmarks/examples_to_failure.py [--revision sglang-0.5.18] [--seeds 30] [--group dcp>1]

For each seed, count the examples each sampler runs before the first
scenario that breaks a property on the revision (by default: the seed bug's
group, write-within-row with dcp > 1; ``--group any`` takes any failure).
"campaign" is what ``run`` does: the regime covering set
(``fuzz.engines.sglang.decode.coverage``), then Hypothesis with that seed; "hypothesis alone"
skips the covering set.  Prints the median, mean and 90th percentile of
each, and their ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import target as hypothesis_target

from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.decode.coverage import covering_set
from fuzz.engines.sglang.decode.properties import overshoot
from fuzz.targets.resolve import resolve_target
from strategies.scenarios import decode_scenarios
from strategies.uniform import uniform_scenario

CAP = 100_000


class Found(Exception):
    pass


def is_hit(violations, group: str) -> bool:
    if group == "any":
        return bool(violations)
    return any(v.group == group and v.prop == "write-within-row" for v in violations)


def campaign(target, seed: int, group: str) -> int:
    """The covering set first (the same for every seed), then Hypothesis."""
    for n, scenario in enumerate(covering_set(target), 1):
        if is_hit(check_scenario(target, scenario)[1], group):
            return n
    return n + hypothesis_alone(target, seed, group)


def hypothesis_alone(target, seed: int, group: str) -> int:
    calls = [0]

    @hypothesis_seed(seed)
    @settings(
        database=None,
        derandomize=False,
        max_examples=CAP,
        deadline=None,
        report_multiple_bugs=False,
        phases=(Phase.generate, Phase.target),
        suppress_health_check=list(HealthCheck),
    )
    @given(decode_scenarios(target.revision))
    def t(scenario):
        calls[0] += 1
        run, vs = check_scenario(target, scenario)
        if run is not None and not run.skipped:
            hypothesis_target(float(overshoot(run)))
        if is_hit(vs, group):
            raise Found

    try:
        t()
    except Found:
        return calls[0]
    return CAP


def uniform(target, seed: int, group: str) -> int:
    rng = random.Random(seed)
    for n in range(1, CAP + 1):
        _, vs = check_scenario(target, uniform_scenario(rng, target.revision))
        if is_hit(vs, group):
            return n
    return CAP


def summarize(name: str, counts: list[int], seconds: float) -> str:
    p90 = sorted(counts)[int(0.9 * (len(counts) - 1))]
    return (
        f"{name:<22} median {statistics.median(counts):>8.1f}  mean {statistics.mean(counts):>9.1f}  "
        f"p90 {p90:>7}  max {max(counts):>7}  ({seconds:.1f}s)"
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--revision", default="sglang-0.5.18")
    p.add_argument("--seeds", type=int, default=30)
    p.add_argument("--group", default="dcp>1", help="regime of the write-within-row group to find, or 'any'")
    args = p.parse_args(argv)
    target = resolve_target(f"reference@{args.revision}")
    print(f"target {target.spec}, group {args.group}, {args.seeds} seeds", flush=True)
    results = {}
    for name, fn in (
        ("campaign (ours)", campaign),
        ("hypothesis alone", hypothesis_alone),
        ("uniform random", uniform),
    ):
        t0 = time.monotonic()
        counts = [fn(target, s, args.group) for s in range(args.seeds)]
        results[name] = counts
        print(summarize(name, counts, time.monotonic() - t0), flush=True)
    a = statistics.median(results["campaign (ours)"])
    h, b = statistics.median(results["hypothesis alone"]), statistics.median(results["uniform random"])
    print(f"ratio uniform/campaign (medians): {b / a:.1f}x; uniform/hypothesis alone: {b / h:.1f}x")
    print(f"target median <= 3 for the campaign: {'met' if a <= 3 else 'NOT met'} ({a})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
