"""The full proof of real code: traced sweeps (one and two worker processes) against one call per configuration.

    python benchmarks/prove_real_code.py [--target sglang==0.5.23] [--space full] [--plain-shard 200]

Prints, in one run: the seconds of ``prove`` over the space with the real
sizing functions traced (``fuzz.engines.sglang.prove.traced_rows``) in one process and in
two (``--jobs 2``), that both found the same groups with the same counts,
and the plain program's pace (every function called once per launch
configuration) measured on one shard of ``--plain-shard`` of the space and
scaled to the whole; then the ratios.  One torch thread per process.
"""

from __future__ import annotations

import argparse
import sys
import time

from fuzz.common.shards import Shard
from fuzz.engines.sglang.prove.parallel import prove_in_parallel
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.result import ProveResult
from fuzz.engines.sglang.prove.space import SPACES
from fuzz.engines.sglang.prove.sweep import prove
from fuzz.targets.resolve import resolve_target


def verdict(r: ProveResult) -> dict[str, tuple[int, int | None]]:
    return {str(s): (g.configurations, g.worst) for s, g in r.groups.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="sglang==0.5.23")
    ap.add_argument("--space", default="full", choices=sorted(SPACES))
    ap.add_argument("--plain-shard", type=int, default=200, help="the plain calls run on 1/N of the space")
    args = ap.parse_args()
    target, space = resolve_target(args.target), SPACES[args.space]

    t0 = time.perf_counter()
    one = prove(target, request(target, space))
    one_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    two = prove_in_parallel(args.target, request(target, space), 2)
    two_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    part = prove(target, request(target, space, traced=False, shard=Shard(1, args.plain_shard)))
    plain_s = (time.perf_counter() - t0) * one.launch_configurations / max(part.launch_configurations, 1)

    print(f"target {args.target}, space {args.space}: {one.launch_configurations:,} launch configurations")
    print(f"traced, 1 process:   {one_s:7.1f} s  ({sum(one.sizing_calls.values()):,} sizing calls)")
    print(f"traced, 2 processes: {two_s:7.1f} s  (same groups and counts: {verdict(one) == verdict(two)})")
    print(
        f"one call per configuration: {plain_s:7.0f} s estimated "
        f"({part.launch_configurations:,} launch configurations of shard 1/{args.plain_shard} measured)"
    )
    print(f"speed-up traced / plain: {plain_s / one_s:.0f}x (1 process), {plain_s / two_s:.0f}x (2 processes)")
    return 0 if verdict(one) == verdict(two) else 1


if __name__ == "__main__":
    sys.exit(main())
