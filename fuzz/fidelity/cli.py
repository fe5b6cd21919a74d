"""``python -m fuzz fidelity`` and ``python -m fuzz matrix``: the model against real SGLang code, release by release."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from allocator_model.revisions import REVISIONS

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.files import write_atomically
from fuzz.common.options import default_jobs, positive_int, seed_int
from fuzz.common.profiles import PROFILES
from fuzz.findings import casefile
from fuzz.findings.render import repro_line
from fuzz.targets.base import TargetError
from fuzz.targets.resolve import resolve_targets
from fuzz.targets.sglang.versions import VersionError

from .differential import DEFAULT_CONFIGS, fidelity
from .matrix import (DEFAULT_EXAMPLES, DEFAULT_OUT, catalog_ids, compare_with_expectations, load_expectations,
                     markdown, parse_releases, run_matrix)


def register(subparsers: Any) -> None:
    register_fidelity(subparsers)
    register_matrix(subparsers)


# -- the command --------------------------------------------------------------

def register_fidelity(subparsers: Any) -> None:

    p = subparsers.add_parser("fidelity", help="compare the model with real SGLang sizing code", description=(
        "Differential fidelity: call every sizing function of a real target and of the modeled revision of its "
        "version on the same configurations. Exit 0: they agree; 1: a model-mismatch; 2: bad input."))
    p.add_argument("--target", action="append", required=True, metavar="SPEC",
                   help="sglang==X.Y.Z, sglang or PATH (repeatable)")
    p.add_argument("--revision", metavar="NAME", help="model revision to compare with (default: the target's version)")
    p.add_argument("--configs", type=positive_int, default=DEFAULT_CONFIGS, metavar="N",
                   help=f"distinct configurations (default {DEFAULT_CONFIGS})")
    p.add_argument("--cases", default="fuzz-cases", metavar="DIR", help="where case files go (default fuzz-cases)")
    p.add_argument("--json", metavar="FILE", help="write a JSON report")
    p.set_defaults(func=cmd_fidelity)


def cmd_fidelity(args) -> int:
    if args.revision and args.revision not in REVISIONS:
        raise BadInput(f"unknown revision {args.revision!r} (known: {', '.join(REVISIONS)})")
    results = []
    for target in resolve_targets(args.target):
        r = fidelity(target, revision=REVISIONS.get(args.revision), configs=args.configs)
        for m in r.mismatches:
            m.case_path = casefile.save_document(m.document(), args.cases)
            print(f"COUNTEREXAMPLE {m.signature} on {m.target} (model {m.revision})")
            print(f"  {m.violation.describe()}".replace("\n", "\n  "))
            print(f"repro: {repro_line(m.case_path)}")
        print(f"{target.spec}: model {r.revision} {r.summary()} in {r.seconds:.1f}s", flush=True)
        results.append(r)
    if args.json:
        write_atomically(args.json, json.dumps({"fidelity": [r.to_json() for r in results]}, indent=2) + "\n")
    return ExitCode.FOUND if any(r.mismatches for r in results) else ExitCode.CLEAN


def register_matrix(subparsers: Any) -> None:

    p = subparsers.add_parser("matrix", help="fuzz every SGLang release's own sizing code, one table", description=(
        "Fuzz each release's allocation_sizing.py (wheels fetched with pip into the cache, see `python -m fuzz "
        "targets`) and check the model's fidelity to it. Writes DIR/matrix.md, DIR/matrix.json and DIR/cases/. "
        "Exit 0: every release clean and faithful; 1: a bug group or a model-mismatch; 2: bad input."))
    p.add_argument("--releases", metavar="RANGE", help="e.g. 0.5.16..0.5.23 or 0.5.18,0.5.19 (default: every modeled release)")
    p.add_argument("--profile", choices=PROFILES, default="ci", help="Hypothesis profile (default ci: deterministic)")
    p.add_argument("--max-examples", type=positive_int, default=DEFAULT_EXAMPLES, metavar="N",
                   help=f"examples per round (default {DEFAULT_EXAMPLES}; 500 also meets #35265 in 0.5.16-0.5.18)")
    p.add_argument("--seed", type=seed_int, default=0, metavar="N", help="the seed every release runs with (default 0)")
    p.add_argument("--fidelity-configs", type=int, default=DEFAULT_CONFIGS, metavar="N",
                   help=f"distinct configurations for the fidelity check (default {DEFAULT_CONFIGS}; 0 skips it)")
    p.add_argument("--jobs", type=positive_int, default=default_jobs(), metavar="N",
                   help="worker processes for the campaigns (default: 2, or 1 on one core)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"where matrix.md, matrix.json and cases/ go (default {DEFAULT_OUT})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--expect", metavar="FILE", help=(
        "JSON {release: {\"required\": [signatures], \"allowed\": [signatures]}}: exit 0 when every release finds "
        "its required groups and nothing outside required + allowed, 1 otherwise (CI: the tool still finds the known "
        "upstream bugs, and a new one fails the job)"))
    p.set_defaults(func=cmd_matrix)


def cmd_matrix(args) -> int:
    try:
        releases = parse_releases(args.releases)
    except VersionError as e:
        raise BadInput(f"--releases: {e}") from None
    if args.fidelity_configs < 0:
        raise BadInput("--fidelity-configs must be >= 0")
    expected = load_expectations(args.expect, releases) if args.expect else None
    started = time.monotonic()
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        rows = run_matrix(releases, profile=args.profile, max_examples=args.max_examples, seed=args.seed,
                          fidelity_configs=args.fidelity_configs, jobs=args.jobs, out=args.out, progress=progress)
    except TargetError as e:
        raise BadInput(str(e)) from None
    total = time.monotonic() - started
    known = catalog_ids()
    examples = args.max_examples
    header = (f"# SGLang release matrix\n\nprofile {args.profile} ({examples} examples per round), seed {args.seed}, "
              f"fidelity over {args.fidelity_configs} configurations, {total:.1f}s in all")
    text = markdown(rows, known, header)
    write_atomically(os.path.join(args.out, "matrix.md"), text)
    report = {"profile": args.profile, "seed": args.seed, "fidelity_configs": args.fidelity_configs,
              "seconds": round(total, 3), "releases": [r.to_json(known) for r in rows]}
    write_atomically(os.path.join(args.out, "matrix.json"), json.dumps(report, indent=2) + "\n")
    print(text, end="")
    print(f"\nwritten: {os.path.join(args.out, 'matrix.md')}, {os.path.join(args.out, 'matrix.json')}, "
          f"{os.path.join(args.out, 'cases')}/")
    if any(r.campaign.error for r in rows):
        return ExitCode.BAD_INPUT
    if expected is not None:
        surprises = compare_with_expectations(rows, expected)
        for line in surprises:
            print(line)
        print("expectations: " + ("met" if not surprises else f"{len(surprises)} difference(s)"))
        return ExitCode.FOUND if surprises else ExitCode.CLEAN
    if any(r.campaign.findings for r in rows) or any(r.fidelity and r.fidelity.mismatches for r in rows):
        return ExitCode.FOUND
    return ExitCode.CLEAN


