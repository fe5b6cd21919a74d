"""``python -m fuzz lifecycle``: stateful fuzzing of the request lifecycle, one campaign per target.

Exit status as ``run``: 0 no invariant broken, 1 at least one finding (a case
file per finding, replayable with ``python -m fuzz repro``), 2 bad input.
"""

from __future__ import annotations

import json
import sys

from hypothesis import settings as Settings

from . import casefile
from .cli import EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_FOUND, _positive_int, _summary, add_campaign_options, campaign_settings, resolve_targets
from .lifecycle import (
    DEFAULT_STEPS,
    RUNS,
    LifecycleFailure,
    LifecycleResult,
    config_line,
    format_step,
    lifecycle_campaign,
    lifecycle_document,
    save_lifecycle_case,
)


def register(subparsers) -> None:
    p = subparsers.add_parser("lifecycle", help="stateful fuzzing of the request lifecycle", description=(
        "Drive a running batch (admit, chunked prefill, decode with accept runs and overlap lag, adaptive steps, "
        "stop, retract) with Hypothesis' state machines and check the pool after every step. "
        "Exit 0: no invariant broken; 1: at least one finding; 2: bad input."))
    add_campaign_options(p, targets_help="reference[@REVISION] or any target `python -m fuzz targets` lists (repeatable)")
    p.add_argument("--steps", type=_positive_int, default=DEFAULT_STEPS, metavar="N",
                   help=f"steps per state-machine run at most (default {DEFAULT_STEPS})")
    p.set_defaults(func=cmd_lifecycle)


def _print_failure(f: LifecycleFailure, out) -> None:
    print(f"COUNTEREXAMPLE {f.signature} on {f.target} (lifecycle, {len(f.steps)} steps)", file=out)
    print(f"  config: {config_line(f.config)}", file=out)
    for i, step in enumerate(f.steps, 1):
        print(f"  {i:>3}. {format_step(step)}", file=out)
    for line in f.violation.describe().splitlines():
        print(f"  {line}", file=out)
    print(f"repro: {f.repro}", file=out)


def _exit_status(results: list[LifecycleResult]) -> int:
    if any(r.interrupted for r in results):
        return EXIT_FOUND if any(r.failures for r in results) else 130
    if any(r.failures for r in results):
        return EXIT_FOUND
    return EXIT_BAD_INPUT if any(r.error for r in results) else EXIT_CLEAN


def cmd_lifecycle(args) -> int:
    targets = resolve_targets(args.target)
    profile_name, hyp, seed = campaign_settings(args)
    if not args.max_examples:
        hyp = Settings(hyp, max_examples=RUNS[profile_name])
    out = sys.stdout
    print(f"profile {profile_name}, {hyp.max_examples} state-machine runs per round of up to {args.steps} steps"
          + (f", seed {seed}" if seed is not None else ", derandomized" if hyp.derandomize else ""), file=out)
    progress = None if args.quiet else (lambda p: print(p.line(), file=sys.stderr, flush=True))
    results: list[LifecycleResult] = []
    for target in targets:
        print(f"== {target.spec}: {target.label}", file=out, flush=True)
        result = lifecycle_campaign(target, hyp, steps=args.steps, seed=seed, on_progress=progress)
        results.append(result)
        for f in result.failures:
            f.case_path = save_lifecycle_case(lifecycle_document(target.spec, f), args.cases)
            _print_failure(f, out)
        if result.error:
            print(f"ERROR {target.spec}: {result.error}", file=out)
        gap = result.committed_vs_bound
        print(f"{result.examples} runs, {result.steps} steps, {result.steps_per_second:.0f} steps/s; longest "
              f"kv_committed_len at a decode allocation: "
              + ("none" if gap is None else f"the scheduler's bound {'+' if gap >= 0 else '-'} {abs(gap)}"), file=out)
        if result.interrupted:
            print("interrupted: reporting what was found so far", file=out)
            break
    _summary(results, out)
    if args.json:
        casefile.write_atomically(args.json, json.dumps({"targets": [r.to_json() for r in results]}, indent=2) + "\n")
    return _exit_status(results)
