"""Examples per second of ``run``'s search against a bare Hypothesis test over the same draws, in one run.

    python benchmarks/example_cost.py [--target reference] [--examples 2000] [--repeat 3]

Both are ``@given`` tests over ``strategies.scenarios.decode_scenarios`` of
the target's revision, with the same settings (derandomized, no database, no
shrinking needed: the reference is clean):

* bare: the test body is the arithmetic of the case with no tensor: the row
  width, the reserve and the rounded allocation end (``ModelSizing``,
  ``ceil_to_page``), compared with the width;
* kvrow: the body ``run`` gives every example (``DecodeHunt.round_test``):
  the scenario on a real ``req_to_token`` tensor and a real allocator,
  every property checked.

Prints each rate (the best of ``--repeat`` runs, taken in turns, so a noisy
neighbour counts against neither) and the ratio kvrow / bare.  One torch
thread.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from hypothesis import HealthCheck, given, settings

from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.numeric import ceil_to_page
from allocator_model.scenario import DecodeScenario
from fuzz.campaign.driver import Progress, Tracker
from fuzz.engines.sglang.decode.engine import DecodeHunt
from fuzz.targets.resolve import resolve_target
from strategies.scenarios import decode_scenarios


def common(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[settings.default.phases[2]],  # generate only
    )


def bare_rate(spec: str, examples: int) -> float:
    target = resolve_target(spec)
    sizing = ModelSizing(target.revision)

    def arithmetic(s: DecodeScenario) -> None:
        cfg: ServingConfig = s.config
        width = sizing.req_to_token_row_width(cfg)
        page = sizing.alloc_page_size(cfg)
        reserve = sizing.alloc_reserve_per_decode(cfg, s.runtime(s.num_steps)) if cfg.spec_on else 1
        end = ceil_to_page(s.committed_len + reserve, page)
        assert end - width < 1 << 30

    test = common(examples)(given(decode_scenarios(target.revision))(arithmetic))
    t0 = time.perf_counter()
    test()
    return examples / (time.perf_counter() - t0)


def kvrow_rate(spec: str, examples: int) -> float:
    target = resolve_target(spec)
    hunt = DecodeHunt(target)
    progress = Progress(spec, time.monotonic())
    test = hunt.round_test(common(examples), None, Tracker(), progress)
    t0 = time.perf_counter()
    test()
    return progress.examples / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="reference")
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    bare = kvrow = 0.0
    for _ in range(args.repeat):  # interleaved, so a passing neighbour weighs on both alike
        bare = max(bare, bare_rate(args.target, args.examples))
        kvrow = max(kvrow, kvrow_rate(args.target, args.examples))
    print(f"target {args.target}, {args.examples} examples per run, best of {args.repeat}")
    print(f"bare Hypothesis test (same draws, the arithmetic, no tensor): {bare:8.1f} examples/s")
    print(f"kvrow-fuzz run (real req_to_token tensor, every property):    {kvrow:8.1f} examples/s")
    print(f"ratio kvrow / bare: {kvrow / bare:.2f} (target >= 0.7)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
