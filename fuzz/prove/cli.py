"""``python -m fuzz prove``: every configuration of a bounded space, checked in closed form."""

from __future__ import annotations

import sys
from typing import Any

from allocator_model import algorithms as algo

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.options import DEFAULT_CASES_DIR
from fuzz.findings import casefile
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation
from fuzz.findings.report import Command, write_report
from fuzz.findings.render import repro_line
from fuzz.targets.base import Target
from fuzz.targets.resolve import resolve_targets

from .sweep import NO_VIOLATION, SPACES, PAGE_ALIGNED_GROWTH, WRITE_WITHIN_ROW, ProveResult, confirm, prove, target_algorithms


def register(subparsers) -> None:
    p = subparsers.add_parser("prove", help="check every configuration of a bounded space (closed form)", description=(
        "Check the sizing for every valid configuration of a bounded space, in closed form. "
        "Exit 0: no violation in the bounded space; 1: violations; 2: bad input."))
    p.add_argument("--target", action="append", required=True, metavar="SPEC",
                   help="reference, reference@REVISION or any target `python -m fuzz targets` lists (repeatable)")
    p.add_argument("--space", choices=sorted(SPACES), default=None,
                   help="full (default for model targets) or small (default for targets called per configuration)")
    p.add_argument("--algorithm", default="all", metavar="NAME",
                   help="sweep one speculative algorithm (or none) instead of all")
    p.add_argument("--calls", action="store_true",
                   help="call the target's sizing functions per configuration even for a model target")
    p.add_argument("--heatmap", metavar="FILE.png",
                   help="write the min-slack heatmap over page_size x attn_dcp_size (and FILE.md, a markdown table)")
    p.add_argument("--cases", default=None, metavar="DIR", help="where case files of each group's worst go (default fuzz-cases)")
    p.add_argument("--json", metavar="FILE", help="write a JSON report")
    p.set_defaults(func=cmd_prove)


def _algorithm_arg(text: str) -> str | None:
    if text.strip().lower() == "all":
        return "all"
    return algo.normalize(text)


def cmd_prove(args) -> int:
    targets = resolve_targets(args.target)
    only = _algorithm_arg(args.algorithm)
    if args.heatmap and len(targets) > 1:
        raise BadInput("--heatmap takes one --target")
    if args.heatmap and not args.heatmap.lower().endswith(".png"):
        raise BadInput(f"--heatmap needs a .png file name, got {args.heatmap!r}")
    for t in targets:
        try:
            target_algorithms(t, only)
        except ValueError as e:
            raise BadInput(str(e)) from None
    out = sys.stdout
    results = []
    for t in targets:
        space = args.space or ("full" if t.is_model and not args.calls else "small")
        result = prove(t, space, algorithm=only, calls=True if args.calls else None)
        confirm(t, result)
        for grp in result.groups.values():
            if grp.confirmed and not grp.mismatch:
                scenario = grp.witness.decode_scenario()
                prop, _, group = grp.signature.partition("/")
                v = Violation(Property(prop), group, "", [])
                doc = casefile.document(Finding(CaseKind.DECODE, t.spec, v, scenario.config, scenario.to_dict()))
                doc["message"] = grp.confirmed
                grp.case_path = casefile.save_document(doc, args.cases or DEFAULT_CASES_DIR, origin="witness")
        results.append(result)
        print_result(t, result, out)
        if args.heatmap:
            from .heatmap import write_heatmap

            label = "every algorithm" if only == "all" else (only or "no speculation")
            md = write_heatmap(args.heatmap, result.heat, title=f"{label} on {t.spec}",
                               axes=(result.space.page_sizes, result.space.dcp_sizes))
            print(f"heatmap: {args.heatmap} (table: {md})", file=out)
    if args.json:
        write_report(args.json, Command.PROVE, [r.to_json() for r in results])
    return ExitCode.FOUND if any(r.groups for r in results) else ExitCode.CLEAN


def print_result(target: Target, r: ProveResult, out) -> None:
    print(f"== prove {target.spec}: {target.label}", file=out)
    print(f"space {r.space.describe()}", file=out)
    calls = sum(r.sizing_calls.values())
    print(f"method: {r.method}" + (f" ({calls:,} sizing calls: "
                                   + ", ".join(f"{k} {v:,}" for k, v in sorted(r.sizing_calls.items())) + ")"
                                   if r.sizing_calls else ""), file=out)
    print(f"checked {r.configurations:,} configurations in {r.seconds:.1f}s: {r.launch_configurations:,} launch "
          f"configurations, {r.decode_shapes:,} with their run-time shapes, x overlap on/off x every residue of "
          f"context_len mod the allocator page, each at its longest committed length", file=out)
    if r.first_error:
        print(f"first sizing error: {r.first_error}", file=out)
    if not r.groups:
        print(NO_VIOLATION, file=out)
        return
    print(f"{r.violations:,} violations (a configuration counts once per property it breaks), by bug group:", file=out)
    for grp in sorted(r.groups.values(), key=lambda g: g.signature):
        unit = "unrecorded page tail up to" if grp.signature.startswith(PAGE_ALIGNED_GROWTH) else "worst"
        worst = f"  {unit} {grp.worst}" if grp.worst is not None else ""
        print(f"  {grp.signature:<34} {grp.configurations:>16,}{worst}", file=out)
    writes = [g for g in r.groups.values() if g.signature.startswith(WRITE_WITHIN_ROW)]
    if writes:
        top = max(writes, key=lambda g: g.worst)
        print(f"worst overshoot: {top.worst} columns past the row end ({top.signature})", file=out)
    for grp in sorted(r.groups.values(), key=lambda g: (-(g.worst or 0), g.signature)):
        if grp.witness is None:
            continue
        s = grp.witness.decode_scenario()
        print(f"WITNESS {grp.signature}", file=out)
        print(f"  config: {s.config.short()}", file=out)
        print(f"  case:   {s.describe()}", file=out)
        for line in (grp.confirmed or "").splitlines()[:2]:
            print(f"  {line}", file=out)
        if grp.mismatch:
            print(f"  MISMATCH: {grp.mismatch}", file=out)
        if grp.case_path:
            print(f"  repro: {repro_line(grp.case_path)}", file=out)
