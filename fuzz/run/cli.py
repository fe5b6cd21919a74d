"""``python -m fuzz run``: fuzz the decode properties of one or more targets.

Exit 0: no counterexample; 1: at least one (a case file per group); 2: bad
input; 130: interrupted before anything was found.
"""

from __future__ import annotations

import argparse
from typing import Any

from fuzz.campaign.execute import drive_campaigns, setup_campaign
from fuzz.common.errors import ExitCode
from fuzz.common.options import add_command, campaign_header, campaign_options
from fuzz.findings.report import Command

from .engine import campaign


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "run",
        "fuzz one or more targets",
        ("Fuzz targets with Hypothesis. Exit 0: no counterexample; 1: at least one; 2: bad input."),
        cmd_run,
        parents=[campaign_options()],
    )


def cmd_run(args: argparse.Namespace) -> ExitCode:
    s = setup_campaign(args)
    return drive_campaigns(
        args,
        Command.RUN,
        s.targets,
        campaign_header(f"profile {s.profile}, {s.hyp.max_examples} examples per round", s.hyp, s.seed),
        lambda target, hooks: campaign(target, s.hyp, seed=s.seed, pins=s.pins, **hooks),
    )
