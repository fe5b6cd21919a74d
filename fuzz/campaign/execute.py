"""What every campaign command does per target: fuzz, save and print each finding, summarize, exit status.

Shared by ``run`` and ``lifecycle``.  A group's case file is written as
soon as the search meets it, and again once it is shrunk (before anything
is printed about it), so a kill later loses nothing of it; the report is
rewritten as groups come, and written whole before the summary.  With
``--jobs`` or ``--shard`` a target's campaign runs as streams
(``fuzz.campaign.parallel``): in this process when it is one stream, else
in worker processes that save their case files themselves; either way one
result per target, of the same shape.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO, TypedDict

from hypothesis import settings as Settings

from fuzz.common import interrupts
from fuzz.common.columns import WIDTH, fold
from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.options import campaign_jobs, campaign_settings, parse_pins, read_baseline
from fuzz.common.shards import WHOLE, Shard
from fuzz.engines import engine_of
from fuzz.findings import baseline
from fuzz.findings.cause import Cause
from fuzz.findings.model import Finding
from fuzz.findings.output import Output
from fuzz.findings.render import Detail, causes_block, counterexample_block, summary_table
from fuzz.findings.report import Command
from fuzz.tables.judged import judged_field, judged_lines, judgements
from fuzz.targets.base import Target
from fuzz.targets.resolve import resolve_targets
from fuzz.verdict import PIPELINE

from .driver import CampaignResult, Progress, stable_seed
from .parallel import CampaignJob, FuzzCall, plan_streams, run_streams


@dataclass
class CampaignSetup:
    """A campaign command's inputs, checked: targets, profile, Hypothesis settings, seed, pins, jobs, shard."""

    output: Output
    targets: list[Target]
    profile: str
    hyp: Settings
    seed: int | None
    pins: dict[str, Any]
    jobs: int = 1
    shard: Shard | None = None
    baseline: Any = None  # --baseline: target spec -> its baseline.Entry frozenset (None: every cause fails)
    strict: bool = False  # --baseline-strict

    @property
    def split(self) -> bool:
        """Whether the campaign runs as streams (``--jobs`` above 1 or ``--shard``) rather than as one."""
        return self.jobs > 1 or self.shard is not None

    def note(self) -> str:
        """What the header adds for a split campaign: the jobs, the shard."""
        if not self.split:
            return ""
        return f", {self.jobs} jobs" + (f", shard {self.shard}" if self.shard else "")


def setup_campaign(args: argparse.Namespace, command: Command) -> CampaignSetup:
    """What every campaign command does before any work: outputs checked, targets resolved, settings, pins.

    A shard under a random profile needs ``--seed``: every shard derives its
    streams from the same seed, or the shards are not parts of one campaign.
    A split campaign without one picks one (printed in the header).
    """
    output = Output(args, command)  # outputs first: an unwritable path is exit 2 before any work
    targets = resolve_targets(args.target, args.sglang_version)
    profile, hyp, seed = campaign_settings(args)
    if args.shard and args.seed is None and not hyp.derandomize:
        raise BadInput(f"--shard needs --seed N under the {profile} profile (every shard derives its seeds from it)")
    jobs = campaign_jobs(args, profile)
    if seed is None and not hyp.derandomize and jobs > 1:
        seed = random.SystemRandom().randrange(2**32)
    base = read_baseline(args, targets)
    return CampaignSetup(
        output, targets, profile, hyp, seed, parse_pins(args.pin, targets), jobs, args.shard, base, args.baseline_strict
    )


class CampaignHooks(TypedDict):
    """What ``drive_campaigns`` hands each campaign: the keywords of ``fuzz.campaign.driver.run_campaign``."""

    on_progress: Callable[[Progress], None] | None
    on_finding: Callable[[Finding], None]
    on_met: Callable[[Finding], None]


def exit_status(results: list[CampaignResult], strict: bool = False) -> ExitCode:
    """0 clean, 1 findings (also when interrupted after some), 130 interrupted with none, 2 errors; against a
    baseline, 1 only for a new root cause (or, ``strict``, a fixed entry)."""
    return Output.status(
        found=any(r.failing(strict) for r in results),
        interrupted=any(r.interrupted for r in results),
        error=any(r.error for r in results),
    )


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
    setup: CampaignSetup,
    header: str,
    fuzz: FuzzCall,
    options: dict[str, Any] | None = None,
) -> ExitCode:
    """Run ``fuzz`` per target (``fuzz_target``); save, print, report; the exit status.

    ``fuzz(target, settings, seed, cover_part, pins, options, hooks)`` is a
    module-level function (a worker process finds it by name); ``options``
    the command's own keywords.  Findings reach disk first: a group's case
    file as soon as the search meets it (unshrunk), replaced by the shrunk
    one when its round ends; with ``--json``, the report is rewritten each
    time, the running target marked interrupted until it ends.  A kill
    loses at most the examples run since, never a group already met.
    """
    out = sys.stdout
    print(fold(header + setup.note()), file=out, flush=True)
    quiet = bool(args.quiet)
    detail = Detail.of(args)
    results: list[CampaignResult] = []
    for target in setup.targets:
        print(fold(f"== {target.spec}: {target.label}", hang=3), file=out, flush=True)
        modeled = engine_of(target).modeled_line(target, (options or {}).get("write_path") != "model")
        if modeled:  # a real target: what it still takes from the model
            print(fold(modeled), file=out, flush=True)
        found: dict[str, Finding] = {}
        started = time.monotonic()
        examples = 0

        def report_so_far() -> None:
            if setup.output.json:
                running = in_progress(target, found, started, examples)  # noqa: B023 - this target's, called now
                setup.output.report([r.to_json() for r in [*results, running]])

        def on_progress(p: Progress) -> None:
            nonlocal examples
            examples = p.examples
            report_so_far()  # noqa: B023 - every progress tick (~2 s): the examples so far
            if not quiet:
                print(p.line(), file=sys.stderr, flush=True)

        def met(f: Finding) -> None:
            """A group met, its case file already saved."""
            found[str(f.signature)] = f  # noqa: B023
            report_so_far()  # noqa: B023
            if not quiet:
                print(
                    f"[{f.target}] met {f.signature} at example {f.found_at}: saved {f.case_path} (shrinking)",
                    file=sys.stderr,
                    flush=True,
                )

        def final(f: Finding) -> None:
            """A group's final case, its case file already saved; its block now under ``--verbose`` (else its
            cause's section shows it, once the target's causes are known)."""
            found[str(f.signature)] = f  # noqa: B023
            report_so_far()  # noqa: B023
            if detail is Detail.EVERY:
                print(counterexample_block(f, width=WIDTH), file=out, flush=True)

        report_so_far()
        job = CampaignJob(fuzz, target.spec, args.sglang_version, setup.profile, setup.pins, options or {}, args.cases)
        try:
            result = fuzz_target(target, setup, job, command, met, final, on_progress)
            results.append(result)
            conclude(target, result, setup, out, command, detail)
        except KeyboardInterrupt:  # a signal the campaign did not take (a second Ctrl-C): what is on disk stands
            if not results or results[-1].target != target.spec:
                results.append(in_progress(target, found, started, examples))
                print_blocks(results[-1].findings, [], detail, out)
            results[-1].interrupted = True
        if results[-1].interrupted:
            print("interrupted: reporting what was found so far", file=out)
            break
    with interrupts.shielded():  # what was found is written, however many signals come now
        setup.output.report([r.to_json() for r in results])
        setup.output.sarif_log(
            (f for r in results for f in r.findings), setup.targets, {r.target: r.causes for r in results}
        )
        print(summary_table(results), file=out, flush=True)
    return exit_status(results, setup.strict)


def conclude(
    target: Target,
    result: CampaignResult,
    setup: CampaignSetup,
    out: TextIO,
    command: Command,
    detail: Detail = Detail.LEADS,
) -> None:
    """After a target's campaign: its root causes (``causes_block`` at ``detail``, the blocks of any group no cause
    explains), the baseline's verdict on them, its engine's lines on what the hunt counted
    (``Engine.campaign_lines``), and what it judged (each table of the target's engine, ``fuzz.tables.judged``:
    the report's ``"tables"``), every line folded at ``WIDTH``.

    Causes are skipped when the campaign was interrupted (they are replays: a stopped run reports what it met);
    its groups are then shown each in its block."""
    if result.error:
        print(fold(f"ERROR {target.spec}: {result.error}"), file=out)
    if result.findings and not result.interrupted:
        result.causes = PIPELINE.causes(target, result.findings)
        print(causes_block(target.spec, result.causes, result.findings, detail=detail, width=WIDTH), file=out)
    print_blocks(result.findings, result.causes, detail, out)
    if setup.baseline is not None and not result.interrupted:
        result.baseline = PIPELINE.judge(result.causes, setup.baseline[target.spec])
        print(fold("\n".join(baseline.judged_lines(result.baseline))), file=out, flush=True)
    for line in engine_of(target).campaign_lines(target, command, result):
        print(fold(line), file=out)
    js = judgements(target, command, result.stats)
    result.stats["tables"] = judged_field(js)
    print(fold("\n".join(judged_lines(js))), file=out, flush=True)


def print_blocks(findings: list[Finding], causes: list[Cause], detail: Detail, out: TextIO) -> None:
    """The full block of each finding no cause's section names (none found, or the campaign interrupted before
    them), unless ``--verbose`` printed every block as it came."""
    named = {s for c in causes for s in c.groups}
    for f in findings:
        if detail is not Detail.EVERY and f.signature not in named:
            print(counterexample_block(f, width=WIDTH), file=out, flush=True)


def fuzz_target(
    target: Target,
    setup: CampaignSetup,
    job: CampaignJob,
    command: Command,
    met: Callable[[Finding], None],
    final: Callable[[Finding], None],
    on_progress: Callable[[Progress], None] | None,
) -> CampaignResult:
    """One target's campaign: as one (no ``--jobs``/``--shard``: exactly the plain driver), as the one stream
    of this shard in this process, or as worker processes; ``met``/``final`` see each group once saved."""

    def save_then(then: Callable[[Finding], None]) -> Callable[[Finding], None]:
        def hook(f: Finding) -> None:
            setup.output.save(f)  # findings reach disk first
            then(f)

        return hook

    hooks = CampaignHooks(on_progress=on_progress, on_met=save_then(met), on_finding=save_then(final))
    if not setup.split:
        return job.fuzz(target, setup.hyp, setup.seed, (0, 1), setup.pins, job.options, hooks)
    base = setup.seed if setup.seed is not None else stable_seed(command.value, target)
    streams = plan_streams(base, setup.hyp.max_examples, setup.jobs, setup.shard or WHOLE)
    if len(streams) == 1:
        st = streams[0]
        hyp = Settings(setup.hyp, max_examples=st.max_examples)
        result = job.fuzz(target, hyp, st.seed, st.cover_part, setup.pins, job.options, hooks)
        result.stats = {**result.stats, "jobs": 1, "seeds": [st.seed]}
    else:
        result = run_streams(job, streams, met, final, on_progress)
    if setup.shard:
        result.stats["shard"] = str(setup.shard)
    return result
