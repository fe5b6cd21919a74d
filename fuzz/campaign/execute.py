"""What every campaign command does per target: fuzz, save and print each finding, summarize, exit status.

Shared by ``run`` and ``lifecycle``.  A finding's case file is written as
soon as its group is shrunk (before anything is printed about it), so a
kill later loses nothing of it; the report and the summary come last.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from hypothesis import settings as Settings

from fuzz.common.errors import ExitCode
from fuzz.common.options import campaign_settings, check_outputs, parse_pins
from fuzz.findings import casefile
from fuzz.findings.model import Finding
from fuzz.findings.render import counterexample_block, summary_table
from fuzz.findings.report import Command, write_report
from fuzz.targets.base import Target
from fuzz.targets.resolve import resolve_targets

from .driver import CampaignResult, Progress


@dataclass
class CampaignSetup:
    """A campaign command's inputs, checked: targets, profile, Hypothesis settings, seed, pins."""

    targets: list[Target]
    profile: str
    hyp: Settings
    seed: int | None
    pins: dict[str, Any]


def setup_campaign(args: argparse.Namespace) -> CampaignSetup:
    """What every campaign command does before any work: outputs checked, targets resolved, settings, pins."""
    check_outputs(args)
    targets = resolve_targets(args.target, args.sglang_version)
    profile, hyp, seed = campaign_settings(args)
    return CampaignSetup(targets, profile, hyp, seed, parse_pins(args.pin))


FuzzOne = Callable[[Target, Callable[[Progress], None] | None, Callable[[Finding], None]], CampaignResult]


def exit_status(results: list[CampaignResult]) -> ExitCode:
    """0 clean, 1 findings (also when interrupted after some), 130 interrupted with none, 2 errors."""
    if any(r.findings for r in results):
        return ExitCode.FOUND
    if any(r.interrupted for r in results):
        return ExitCode.INTERRUPTED
    return ExitCode.BAD_INPUT if any(r.error for r in results) else ExitCode.CLEAN


def drive_campaigns(
    args: argparse.Namespace,
    command: Command,
    targets: list[Target],
    header: str,
    fuzz_one: FuzzOne,
    after: Callable[[CampaignResult, TextIO], None] | None = None,
) -> ExitCode:
    """Run ``fuzz_one(target, on_progress, on_finding)`` per target; print, save, report; the exit status."""
    out = sys.stdout
    print(header, file=out, flush=True)
    progress = None if args.quiet else (lambda p: print(p.line(), file=sys.stderr, flush=True))
    results: list[CampaignResult] = []
    for target in targets:
        print(f"== {target.spec}: {target.label}", file=out, flush=True)

        def on_finding(f: Finding) -> None:
            casefile.save(f, args.cases)
            print(counterexample_block(f), file=out, flush=True)

        result = fuzz_one(target, progress, on_finding)
        results.append(result)
        if result.error:
            print(f"ERROR {target.spec}: {result.error}", file=out)
        if after:
            after(result, out)
        if result.interrupted:
            print("interrupted: reporting what was found so far", file=out)
            break
    print(summary_table(results), file=out)
    if args.json:
        write_report(args.json, command, [r.to_json() for r in results])
    return exit_status(results)
