"""``python -m fuzz lifecycle``: stateful fuzzing of the request lifecycle, one campaign per target.

Exit status as ``run``: 0 no invariant broken, 1 at least one finding (a case
file per finding, replayable with ``python -m fuzz repro``), 2 bad input.
"""

from __future__ import annotations

from hypothesis import settings as Settings

from . import casefile
from .cli import _positive_int, add_campaign_options, campaign_header, campaign_settings, drive_campaigns, resolve_targets
from .lifecycle import (
    DEFAULT_STEPS,
    RUNS,
    LifecycleFailure,
    LifecycleResult,
    config_line,
    format_step,
    lifecycle_campaign,
    lifecycle_document,
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


def cmd_lifecycle(args) -> int:
    targets = resolve_targets(args.target)
    profile_name, hyp, seed = campaign_settings(args)
    if not args.max_examples:
        hyp = Settings(hyp, max_examples=RUNS[profile_name])

    def report_bound(result: LifecycleResult, out) -> None:
        gap = result.committed_vs_bound
        print(f"{result.examples} runs, {result.steps} steps, {result.steps_per_second:.0f} steps/s; longest "
              f"kv_committed_len at a decode allocation: "
              + ("none" if gap is None else f"the scheduler's bound {'+' if gap >= 0 else '-'} {abs(gap)}"), file=out)

    return drive_campaigns(
        args, targets,
        campaign_header(f"profile {profile_name}, {hyp.max_examples} state-machine runs per round of up to "
                        f"{args.steps} steps", hyp, seed),
        lambda target, progress: lifecycle_campaign(target, hyp, steps=args.steps, seed=seed, on_progress=progress),
        lambda target, f: casefile.save_document(lifecycle_document(target.spec, f), args.cases),
        _print_failure,
        after=report_bound,
    )
