"""What every campaign command does per target: fuzz, save and print each finding, summarize, exit status.

Shared by ``run`` and ``lifecycle``.  A group's case file is written as
soon as the search meets it, and again once it is shrunk (before anything
is printed about it), so a kill later loses nothing of it; the report is
rewritten as groups come, and written whole before the summary.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO, TypedDict

from hypothesis import settings as Settings

from fuzz.common.errors import ExitCode
from fuzz.common.options import campaign_settings, check_outputs, parse_pins
from fuzz.findings import casefile
from fuzz.findings.model import Finding
from fuzz.findings.render import counterexample_block, summary_table
from fuzz.findings.report import Command, write_report
from fuzz.findings.sarif import with_targets, write_sarif
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


class CampaignHooks(TypedDict):
    """What ``drive_campaigns`` hands each campaign: the keywords of ``fuzz.campaign.driver.run_campaign``."""

    on_progress: Callable[[Progress], None] | None
    on_finding: Callable[[Finding], None]
    on_met: Callable[[Finding], None]


# fuzz_one(target, hooks): the campaign on one target, with the hooks passed on to the driver
FuzzOne = Callable[[Target, CampaignHooks], CampaignResult]


def exit_status(results: list[CampaignResult]) -> ExitCode:
    """0 clean, 1 findings (also when interrupted after some), 130 interrupted with none, 2 errors."""
    if any(r.findings for r in results):
        return ExitCode.FOUND
    if any(r.interrupted for r in results):
        return ExitCode.INTERRUPTED
    return ExitCode.BAD_INPUT if any(r.error for r in results) else ExitCode.CLEAN


def in_progress(target: Target, found: dict[str, Finding], started: float, examples: int) -> CampaignResult:
    """A target's entry while its campaign runs: what is on disk so far, marked interrupted.

    The report on disk says "interrupted" until the campaign's own result
    replaces it: true of a run killed before its end (SIGKILL, a runner's
    time limit), which never gets to write that result.
    """
    findings = sorted(found.values(), key=lambda f: str(f.signature))
    return CampaignResult(
        target.spec,
        examples=max([examples, *(f.found_at for f in findings)]),
        seconds=time.monotonic() - started,
        findings=findings,
        interrupted=True,
    )


def drive_campaigns(
    args: argparse.Namespace,
    command: Command,
    targets: list[Target],
    header: str,
    fuzz_one: FuzzOne,
    after: Callable[[CampaignResult, TextIO], None] | None = None,
) -> ExitCode:
    """Run ``fuzz_one`` per target; save, print, report; the exit status.

    Findings reach disk first: a group's case file as soon as the search
    meets it (unshrunk), replaced by the shrunk one when its round ends;
    with ``--json``, the report is rewritten each time, the running target
    marked interrupted until it ends.  A kill loses at most the examples
    run since, never a group already met.
    """
    out = sys.stdout
    print(header, file=out, flush=True)
    quiet = bool(args.quiet)
    results: list[CampaignResult] = []
    for target in targets:
        print(f"== {target.spec}: {target.label}", file=out, flush=True)
        modeled = getattr(target.sizing, "modeled", None)
        if modeled is not None:  # a real target: what it still takes from the model
            print(f"   modeled, not read from the target: {'; '.join(modeled())}", file=out, flush=True)
        found: dict[str, Finding] = {}
        started = time.monotonic()
        examples = 0

        def report_so_far() -> None:
            if args.json:
                running = in_progress(target, found, started, examples)  # noqa: B023 - this target's, called now
                write_report(args.json, command, [r.to_json() for r in [*results, running]])

        def on_progress(p: Progress) -> None:
            nonlocal examples
            examples = p.examples
            report_so_far()  # noqa: B023 - every progress tick (~2 s): the examples so far
            if not quiet:
                print(p.line(), file=sys.stderr, flush=True)

        def on_met(f: Finding) -> None:
            path = casefile.save(f, args.cases)
            found[str(f.signature)] = f  # noqa: B023
            report_so_far()  # noqa: B023
            if not quiet:
                print(
                    f"[{f.target}] met {f.signature} at example {f.found_at}: saved {path} (shrinking)",
                    file=sys.stderr,
                    flush=True,
                )

        def on_finding(f: Finding) -> None:
            casefile.save(f, args.cases)
            found[str(f.signature)] = f  # noqa: B023
            report_so_far()  # noqa: B023
            print(counterexample_block(f), file=out, flush=True)

        report_so_far()
        result = fuzz_one(target, CampaignHooks(on_progress=on_progress, on_finding=on_finding, on_met=on_met))
        results.append(result)
        if result.error:
            print(f"ERROR {target.spec}: {result.error}", file=out)
        if after:
            after(result, out)
        if result.interrupted:
            print("interrupted: reporting what was found so far", file=out)
            break
    if args.json:
        write_report(args.json, command, [r.to_json() for r in results])
    if args.sarif:
        write_sarif(args.sarif, command, with_targets([f for r in results for f in r.findings], targets))
    print(summary_table(results), file=out)
    return exit_status(results)
