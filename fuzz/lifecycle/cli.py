"""``python -m fuzz lifecycle``: stateful fuzzing of the request lifecycle, one campaign per target.

Exit status as ``run``: 0 no invariant broken, 1 at least one finding (a case
file per finding, replayable with ``python -m fuzz repro``), 2 bad input.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from hypothesis import settings as Settings

from fuzz.campaign.driver import CampaignResult
from fuzz.campaign.execute import drive_campaigns
from fuzz.common.errors import ExitCode
from fuzz.common.options import (
    campaign_header,
    campaign_options,
    campaign_settings,
    check_outputs,
    parse_pins,
    positive_int,
)
from fuzz.findings.report import Command
from fuzz.targets.resolve import resolve_targets

from .machine import DEFAULT_STEPS, RUNS, lifecycle_campaign


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "lifecycle",
        parents=[campaign_options()],
        help="stateful fuzzing of the request lifecycle",
        description=(
            "Drive a running batch (admit, chunked prefill, decode with accept runs and overlap lag, adaptive steps, "
            "stop, retract) with Hypothesis' state machines and check the pool after every step. "
            "Exit 0: no invariant broken; 1: at least one finding; 2: bad input."
        ),
    )
    p.add_argument(
        "--steps",
        type=positive_int,
        default=DEFAULT_STEPS,
        metavar="N",
        help=f"steps per state-machine run at most (default {DEFAULT_STEPS})",
    )
    p.set_defaults(func=cmd_lifecycle)


def report_bound(result: CampaignResult, out: TextIO) -> None:
    """Runs, steps, and the longest kv_committed_len a decode allocation reached against the scheduler's bound."""
    s = result.stats
    gap = s.get("max_committed_len_minus_bound")
    rate = s.get("steps", 0) / max(result.seconds, 1e-9)
    print(
        f"{result.examples} runs, {s.get('steps', 0)} steps, {rate:.0f} steps/s; longest "
        f"kv_committed_len at a decode allocation: "
        + ("none" if gap is None else f"the scheduler's bound {'+' if gap >= 0 else '-'} {abs(gap)}"),
        file=out,
    )


def cmd_lifecycle(args: argparse.Namespace) -> ExitCode:
    check_outputs(args)
    targets = resolve_targets(args.target, args.sglang_version)
    profile_name, hyp, seed = campaign_settings(args)
    pins = parse_pins(args.pin)
    if not args.max_examples:
        hyp = Settings(hyp, max_examples=RUNS[profile_name])
    return drive_campaigns(
        args,
        Command.LIFECYCLE,
        targets,
        campaign_header(
            f"profile {profile_name}, {hyp.max_examples} state-machine runs per round of up to {args.steps} steps",
            hyp,
            seed,
        ),
        lambda target, progress, on_finding: lifecycle_campaign(
            target, hyp, steps=args.steps, seed=seed, on_progress=progress, pins=pins, on_finding=on_finding
        ),
        after=report_bound,
    )
