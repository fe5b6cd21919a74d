"""``python -m fuzz run``: fuzz the decode properties of one or more targets.

Exit 0: no counterexample; 1: at least one (a case file per group); 2: bad
input; 130: interrupted before anything was found.
"""

from __future__ import annotations

import argparse
from typing import Any

from fuzz.campaign.execute import drive_campaigns
from fuzz.common.errors import ExitCode
from fuzz.common.options import campaign_header, campaign_options, campaign_settings, check_outputs, parse_pins
from fuzz.findings.report import Command
from fuzz.targets.resolve import resolve_targets

from .engine import campaign


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        parents=[campaign_options()],
        help="fuzz one or more targets",
        description=("Fuzz targets with Hypothesis. Exit 0: no counterexample; 1: at least one; 2: bad input."),
    )
    p.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> ExitCode:
    check_outputs(args)
    targets = resolve_targets(args.target, args.sglang_version)
    profile_name, hyp, seed = campaign_settings(args)
    pins = parse_pins(args.pin)
    return drive_campaigns(
        args,
        Command.RUN,
        targets,
        campaign_header(f"profile {profile_name}, {hyp.max_examples} examples per round", hyp, seed),
        lambda target, progress, on_finding: campaign(
            target, hyp, seed=seed, on_progress=progress, pins=pins, on_finding=on_finding
        ),
    )
