"""``kvrow-fuzz run``: fuzz the decode properties of one or more targets.

Exit 0: no counterexample; 1: at least one (a case file per group); 2: bad
input; 130: interrupted before anything was found.

Light at import (its parser serves ``--help`` without torch or Hypothesis):
the engines are imported by the functions that run them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fuzz.common.errors import ExitCode
from fuzz.common.options import add_command, campaign_header, campaign_options
from fuzz.engines import BUILTIN_RUN

if TYPE_CHECKING:
    from hypothesis import settings as Settings

    from fuzz.campaign.driver import CampaignResult
    from fuzz.targets.base import Target


def register(subparsers: Any) -> None:
    add_command(
        subparsers,
        "run",
        "fuzz one or more targets",
        "Fuzz targets with Hypothesis. Exit 0: no counterexample; 1: at least one; 2: bad input. Each bug group is "
        "reported by its representative case (a deployment people run, its own case file, TARGET--prod--"
        "GROUP.json) where the search finds one, its minimal case after it; the search's budget: "
        + "; ".join(f"{name}: {text}" for name, text in BUILTIN_RUN.items())
        + ".",
        cmd_run,
        parents=[campaign_options()],
    )


def cmd_run(args: argparse.Namespace) -> ExitCode:
    from fuzz.campaign.execute import drive_campaigns, setup_campaign
    from fuzz.engines import engine_of
    from fuzz.findings.report import Command

    s = setup_campaign(args, Command.RUN)
    for target in s.targets:
        engine_of(target).has_own_path(target, args.write_path)  # asked for its own and it cannot: exit 2 first
    return drive_campaigns(
        args,
        Command.RUN,
        s,
        campaign_header(f"profile {s.profile}, {s.hyp.max_examples} examples per round", s.hyp, s.seed),
        fuzz_decode,
        {"write_path": args.write_path},
    )


def fuzz_decode(
    target: Target,
    hyp: Settings,
    seed: int | None,
    cover_part: tuple[int, int],
    pins: dict[str, Any],
    options: dict[str, Any],
    hooks: Any,
) -> CampaignResult:
    """The campaign of ``run`` on one target: its engine's own hunt and the hunts of the tables checked on their own
    (module level: a ``--jobs`` worker finds it by name)."""
    from fuzz.campaign.driver import run_campaign
    from fuzz.engines import engine_of
    from fuzz.engines.base import RunOptions
    from fuzz.tables.hunt import with_tables

    asked = RunOptions(pins, cover_part, options.get("write_path", "auto"), options.get("proof", True))
    hunt = engine_of(target).hunt(target, asked)
    return run_campaign(target, with_tables(hunt, target, pins), hyp, seed=seed, **hooks)
