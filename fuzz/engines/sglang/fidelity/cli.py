"""``kvrow-fuzz fidelity`` and ``kvrow-fuzz matrix``: their options, and each command's run and output.

The work is the engines' (``differential``, ``matrix``) and the table the
report's (``matrix_report``); here: parse, call, save case files, print,
and decide the exit status (``fuzz.common.errors.ExitCode``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fuzz.common import interrupts
from fuzz.common.defaults import FIDELITY_CONFIGS, PAGE_TABLE_STEPS, WRITE_PATH_STEPS
from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.files import check_output_dir
from fuzz.common.heartbeat import heartbeat
from fuzz.common.options import (
    PROFILE_NAMES,
    add_command,
    add_output_options,
    default_jobs,
    non_negative_int,
    positive_int,
    seed_int,
)
from fuzz.common.text import printable

if TYPE_CHECKING:
    from .differential import FidelityResult
    from .matrix import Row

# The engines' defaults, from their light home (``fuzz.common.defaults``), and, copied for the parser until
# ``matrix`` imports them from there too (``tests/test_cli.py`` holds them equal): ``matrix.DEFAULT_EXAMPLES``
# and ``matrix.DEFAULT_OUT``.
DEFAULT_CONFIGS = FIDELITY_CONFIGS
DEFAULT_STEPS = WRITE_PATH_STEPS
DEFAULT_PAGE_TABLE_STEPS = PAGE_TABLE_STEPS
DEFAULT_EXAMPLES = 300
DEFAULT_OUT = "fuzz-matrix"


def register(subparsers: Any) -> None:
    register_fidelity(subparsers)
    register_matrix(subparsers)


# -- fidelity -----------------------------------------------------------------


def register_fidelity(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "fidelity",
        "compare the model with real SGLang sizing code",
        (
            "Differential fidelity: call every sizing function of a real target and of the modeled revision of its "
            "version on the same configurations. Exit 0: they agree; 1: a model-mismatch; 2: bad input."
        ),
        cmd_fidelity,
    )
    p.add_argument(
        "--target", action="append", required=True, metavar="SPEC", help="sglang==X.Y.Z, sglang or PATH (repeatable)"
    )
    p.add_argument("--revision", metavar="NAME", help="model revision to compare with (default: the target's version)")
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--configs",
        type=positive_int,
        default=DEFAULT_CONFIGS,
        metavar="N",
        help=f"distinct configurations over every KV pool kind, weighed as the strategies (default {DEFAULT_CONFIGS})",
    )
    size.add_argument(
        "--per-kind",
        type=positive_int,
        metavar="N",
        help="N distinct configurations for each KV pool kind the release builds, drawn with the kind pinned",
    )
    add_write_path_steps(p)
    add_page_table_steps(p)
    add_output_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress lines (otherwise on stderr)")


def add_write_path_steps(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--write-path-steps",
        type=non_negative_int,
        default=DEFAULT_STEPS,
        metavar="N",
        help=f"decode steps per KV pool kind also run on SGLang's own write path and held to the model's, where "
        f"the target has it (its tree and triton) (default {DEFAULT_STEPS}; 0 skips it)",
    )


def add_page_table_steps(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--page-table-steps",
        type=non_negative_int,
        default=DEFAULT_PAGE_TABLE_STEPS,
        metavar="N",
        help=f"mode builds of each checked backend's CUDA-graph page table also run on SGLang's own builders and "
        f"held to the model's twin, where the target has them (its tree and triton) (default "
        f"{DEFAULT_PAGE_TABLE_STEPS} per backend; 0 skips it)",
    )


def cmd_fidelity(args: argparse.Namespace) -> ExitCode:
    from allocator_model.revisions import REVISIONS
    from fuzz.findings.output import Output
    from fuzz.findings.render import counterexample_block
    from fuzz.findings.report import Command
    from fuzz.targets.resolve import resolve_targets

    from .differential import fidelity

    output = Output(args, Command.FIDELITY)
    if args.revision and args.revision not in REVISIONS:
        raise BadInput(f"unknown revision {args.revision!r} (known: {', '.join(REVISIONS)})")
    results: list[FidelityResult] = []
    targets = resolve_targets(args.target)
    for target in targets:
        revision = REVISIONS[args.revision] if args.revision else target.revision
        size = f"{args.per_kind} configurations per KV pool kind" if args.per_kind else f"{args.configs} configurations"
        what = f"[{target.spec}] fidelity: {size} against model {revision.name}"
        if not args.quiet:
            say(what)
        with heartbeat(None if args.quiet else still(what)):
            r = fidelity(
                target,
                revision=revision,
                configs=args.configs,
                per_kind=args.per_kind,
                write_path_steps=args.write_path_steps,
                page_table_steps=args.page_table_steps,
            )
        for f in r.findings:
            output.save(f)
            print(counterexample_block(f), flush=True)
        print(f"{target.spec}: model {r.revision.name} {r.summary()} in {r.seconds:.1f}s", flush=True)
        results.append(r)
        if r.interrupted:  # a signal, taken between two comparisons: what was compared and found stands
            print(f"interrupted: {r.configs} configurations compared on {target.spec}; reported above", flush=True)
            break
    with interrupts.shielded():
        output.report(
            [r.to_json() for r in results], configs=None if args.per_kind else args.configs, per_kind=args.per_kind
        )
        output.sarif_log((f for r in results for f in r.findings), targets)
    return output.status(found=any(r.findings for r in results), interrupted=any(r.interrupted for r in results))


# -- matrix -------------------------------------------------------------------


def register_matrix(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "matrix",
        "fuzz every SGLang release's own sizing code, one table",
        (
            "Fuzz each release's allocation_sizing.py (wheels fetched with pip into the cache, see `kvrow-fuzz "
            "targets`) and check the model's fidelity to it. Writes DIR/matrix.md, DIR/matrix.json (after each "
            "release) and DIR/cases/. Exit 0: every release clean and faithful; 1: a bug group or a model-mismatch; "
            "2: bad input."
        ),
        cmd_matrix,
    )
    p.add_argument(
        "--releases", metavar="RANGE", help="e.g. 0.5.16..0.5.23 or 0.5.18,0.5.19 (default: every modeled release)"
    )
    p.add_argument(
        "--profile", choices=PROFILE_NAMES, default="ci", help="Hypothesis profile (default ci: deterministic)"
    )
    p.add_argument(
        "--max-examples",
        type=positive_int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"examples per round (default {DEFAULT_EXAMPLES}; 500 also meets #35265 in 0.5.16-0.5.18)",
    )
    p.add_argument("--seed", type=seed_int, default=0, metavar="N", help="the seed every release runs with (default 0)")
    p.add_argument(
        "--fidelity-configs",
        type=non_negative_int,
        default=DEFAULT_CONFIGS,
        metavar="N",
        help=(
            f"distinct configurations per KV pool kind for the fidelity check (default {DEFAULT_CONFIGS}; 0 skips it)"
        ),
    )
    add_write_path_steps(p)
    add_page_table_steps(p)
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=default_jobs(),
        metavar="N",
        help="worker processes for the campaigns (default: 2, or 1 on one core)",
    )
    p.add_argument(
        "--out",
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"where matrix.md, matrix.json and cases/ go (default {DEFAULT_OUT})",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--expect",
        metavar="FILE",
        help=(
            "a baseline (kvrow-fuzz baseline write FILE --releases RANGE; fuzz/findings/baseline.schema.json): "
            "exit 0 when every release's root causes are in its entries (by property, function, path) and each "
            "required entry is found, 1 otherwise (CI: the tool still finds the known upstream bugs, and a new one "
            "fails the job)"
        ),
    )


def say(line: str) -> None:
    """A progress line: stderr, at once."""
    print(line, file=sys.stderr, flush=True)


def still(what: str) -> Callable[[float], None]:
    """A heartbeat's line: what is running, and for how long."""
    return lambda seconds: say(f"{what}, {seconds:.0f}s")


def cmd_matrix(args: argparse.Namespace) -> ExitCode:
    from fuzz.engines.sglang.real.versions import VersionError
    from fuzz.targets.base import TargetError

    from .matrix import (
        MatrixInterrupted,
        MatrixSettings,
        compare_with_expectations,
        load_expectations,
        parse_releases,
        run_matrix,
    )
    from .matrix_report import CASES_DIR, MATRIX_JSON, MATRIX_MD, catalog_ids, write_matrix

    check_output_dir(args.out, "--out")
    try:
        releases = parse_releases(args.releases)
    except VersionError as e:
        raise BadInput(f"--releases: {e}") from None
    expected = load_expectations(args.expect, releases) if args.expect else None
    settings = MatrixSettings(
        args.profile,
        args.max_examples,
        args.seed,
        args.fidelity_configs,
        args.write_path_steps,
        args.page_table_steps,
    )
    known = catalog_ids()
    started = time.monotonic()
    progress = None if args.quiet else say

    def on_release(row: Row, finished: list[Row]) -> None:
        """Rewrite the table with every finished release, so an interrupted matrix keeps them."""
        write_matrix(args.out, finished, settings, requested=releases, seconds=time.monotonic() - started, known=known)
        if progress:
            seconds = row.campaign.seconds if row.campaign else 0.0
            progress(
                f"[{row.release}] {row.status}: {len(row.findings)} group(s), {seconds:.1f}s "
                f"({len(finished)} of {len(releases)} releases done, {os.path.join(args.out, MATRIX_MD)} updated)"
            )

    if progress:
        progress(f"matrix: {len(releases)} release(s), {args.jobs} job(s); a line as each release completes")
    interrupted = False
    try:
        rows = run_matrix(
            releases,
            settings,
            jobs=args.jobs,
            cases_dir=os.path.join(args.out, CASES_DIR),
            on_release=on_release,
            progress=progress,
        )
    except TargetError as e:
        raise BadInput(str(e)) from None
    except MatrixInterrupted as stop:
        rows, interrupted = stop.finished, True
    text = write_matrix(args.out, rows, settings, requested=releases, seconds=time.monotonic() - started, known=known)
    print(text, end="")
    print(
        f"\nwritten: {os.path.join(args.out, MATRIX_MD)}, {os.path.join(args.out, MATRIX_JSON)}, "
        f"{os.path.join(args.out, CASES_DIR)}/"
    )
    if interrupted:
        print(f"interrupted: {len(rows)} of {len(releases)} releases done; reported above")
        return ExitCode.FOUND if any(r.findings for r in rows) else ExitCode.INTERRUPTED
    if any(r.error for r in rows):
        return ExitCode.BAD_INPUT
    if expected is not None:
        surprises = compare_with_expectations(rows, expected)
        for line in surprises:
            print(printable(line))  # a baseline's entries travel (a pull request can edit one): shown escaped
        print("expectations: " + ("met" if not surprises else f"{len(surprises)} difference(s)"))
        return ExitCode.FOUND if surprises else ExitCode.CLEAN
    return ExitCode.FOUND if any(r.findings for r in rows) else ExitCode.CLEAN
