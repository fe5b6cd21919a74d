"""State-machine steps per second of ``python -m fuzz lifecycle``, and what the model alone costs.

    python benchmarks/lifecycle_steps.py [--target reference] [--runs 300] [--steps 50] [--seed 0]

1. Hypothesis: a lifecycle campaign on the target (random with a fixed seed,
   no database) until --runs runs end normally.  Steps per second count every
   step applied, in runs Hypothesis discarded too; runs per second count the
   runs that ended normally.
2. The model alone: the step scripts of those same runs replayed through
   ``RunningBatch`` and every invariant, without Hypothesis.
Both in one process, so the share of time Hypothesis takes is measured on
the same machine state.  Aim: at least 300 steps per second for (1).
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, Phase, settings

from fuzz.common.threads import one_torch_thread
from fuzz.engines.sglang.lifecycle.machine import DEFAULT_STEPS, lifecycle_campaign
from fuzz.engines.sglang.lifecycle.replay import run_case
from fuzz.engines.sglang.lifecycle.script import LifecycleCase
from fuzz.targets.base import TargetError
from fuzz.targets.resolve import resolve_target


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="reference")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        target = resolve_target(args.target)
    except TargetError as e:
        print(f"lifecycle_steps: {e}", file=sys.stderr)
        return 2
    hyp = settings(
        database=None,
        derandomize=False,
        max_examples=args.runs,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    scripts: list = []
    result = lifecycle_campaign(target, hyp, steps=args.steps, seed=args.seed, max_rounds=1, record=scripts)
    if result.findings or result.error:
        print(f"note: {args.target} is not clean ({result.status}); the figures include its shrinking")
    print(f"target {args.target}, up to {args.steps} steps per run, seed {args.seed}")
    print(
        f"hypothesis: {result.examples} runs ended normally ({result.stats['runs_started']} started), "
        f"{result.stats['steps']} steps in {result.seconds:.2f} s: {result.stats['steps'] / result.seconds:.0f} "
        f"steps/s, {result.examples / result.seconds:.1f} runs/s"
    )
    steps = sum(len(s) for _, s in scripts)
    with one_torch_thread():  # as the campaign runs
        t0 = time.perf_counter()
        for cfg, script in scripts:
            run_case(target, LifecycleCase(cfg, script), story=False)
        model = time.perf_counter() - t0
    print(
        f"model alone: the {len(scripts)} normal runs' {steps} steps replayed with every invariant in {model:.2f} s: "
        f"{steps / model:.0f} steps/s"
    )
    print(
        "share of the campaign's time outside the model: "
        f"{1 - model * result.stats['steps'] / max(steps, 1) / result.seconds:.0%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
