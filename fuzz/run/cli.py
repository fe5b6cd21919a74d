"""``python -m fuzz run``: fuzz the decode properties of one or more targets.

Exit 0: no counterexample; 1: at least one (a case file per group); 2: bad
input; 130: interrupted before anything was found.

Light at import (its parser serves ``--help`` without torch or Hypothesis):
the engines are imported by the functions that run them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

from fuzz.common.errors import ExitCode
from fuzz.common.options import add_command, campaign_header, campaign_options

if TYPE_CHECKING:
    from hypothesis import settings as Settings

    from fuzz.campaign.driver import CampaignResult
    from fuzz.targets.base import Target


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
        after=report_stages,
    )


def report_stages(result: CampaignResult, out: TextIO) -> None:
    """What the verdict proved and what it sampled, and where its decode steps ran."""
    from fuzz.prove.quick import proved_line

    stats = result.stats
    line = proved_line(stats)
    if line:
        print(line, file=out)
    if stats.get("write_path") == "sglang":
        print(
            f"   write path: {stats.get('sglang_decode_steps', 0):,} decode steps of "
            f"{stats.get('sglang_scenarios', 0):,} scenarios ran on SGLang's own code "
            f"({stats.get('sglang_seconds', 0.0):.1f}s); every example ran on the model's",
            file=out,
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
    from fuzz.prove.quick import proof_stage  # prove sits above run: the command layer hands it in
    from fuzz.tables.hunt import with_tables

    proof = proof_stage if options.get("proof", True) else None
    hunt = engine_of(target).hunt(target, RunOptions(pins, cover_part, options.get("write_path", "auto"), proof))
    return run_campaign(target, with_tables(hunt, target, pins), hyp, seed=seed, **hooks)
