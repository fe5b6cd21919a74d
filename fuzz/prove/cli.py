"""``python -m fuzz prove``: its options, the command, and how a sweep's result prints.

Per target: sweep (``sweep.prove``), replay each group's witness on the
step-by-step model (``witness.confirm``), save each confirmed witness as a
case file (named apart from ``run``'s: ``TARGET--witness--SIGNATURE.json``),
print the counts and the WITNESS blocks; then the heatmap and the shared
JSON report.  Exit 0: no violation in the bounded space; 1: violations;
2: bad input (one line, before any work starts).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from fuzz.common import interrupts
from fuzz.common.defaults import ALL_ALGORITHMS
from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.options import (
    TARGETS_HELP,
    add_baseline_options,
    add_command,
    add_output_options,
    add_shard_option,
    read_baseline,
)
from fuzz.common.shards import WHOLE, Shard, parse_jobs

if TYPE_CHECKING:
    from fuzz.findings.cause import Cause
    from fuzz.findings.model import Finding
    from fuzz.tables.judged import Judgement
    from fuzz.targets.base import Target

    from .result import ProveResult

# Light copies for the parser (``--help`` imports no torch or Hypothesis; ``tests/test_cli.py`` holds each equal
# to its home): the names of ``space.SPACES``, the values of ``allocator_model.pools.KVPool``.
SPACE_NAMES = ("full", "small", "tiny")
POOL_KINDS = ("standard", "swa", "hisparse", "unified-mamba", "unified-mamba-swa", "unified-swa")

WITNESS_ORIGIN = "witness"  # case files of witnesses are named apart from run's


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "prove",
        "check every configuration of a bounded space (closed form)",
        (
            "Check the sizing for every valid configuration of a bounded space, in closed form. "
            "Exit 0: no violation in the bounded space; 1: violations; 2: bad input."
        ),
        cmd_prove,
    )
    p.add_argument("--target", action="append", required=True, metavar="SPEC", help=TARGETS_HELP)
    p.add_argument(
        "--space",
        choices=SPACE_NAMES,
        default=None,
        help="full (default; small with --one-by-one on a real target) or small, tiny",
    )
    p.add_argument(
        "--algorithm",
        default=ALL_ALGORITHMS,
        metavar="NAME",
        help="sweep one speculative algorithm (or none) instead of all",
    )
    p.add_argument(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help="where the sweep's tensors live: cpu (default) or cuda[:N] when torch sees a GPU (same verdict)",
    )
    p.add_argument(
        "--jobs",
        type=parse_jobs,
        default=1,
        metavar="N",
        help="worker processes, each sweeping its share of the blocks (0 or auto: every core); one merged result",
    )
    p.add_argument(
        "--one-by-one",
        action="store_true",
        help="call a real target's sizing functions once per configuration instead of once per path "
        "(slower; the traced sweep is held equal to it)",
    )
    p.add_argument(
        "--calls",
        action="store_true",
        help="call the target's sizing functions per configuration even for a model target",
    )
    p.add_argument(
        "--heatmap",
        metavar="FILE.png",
        help="write the min-slack heatmap over page_size x attn_dcp_size (and FILE.md, a markdown table); "
        "needs matplotlib (the plot extra)",
    )
    p.add_argument(
        "--heatmap-pool",
        type=pool_arg,
        default=None,
        metavar="KIND",
        help="with --heatmap: only this kind of KV pool's panel (default: one panel per kind with a violation)",
    )
    add_output_options(p, cases="case files of each group's worst")
    add_baseline_options(p)
    add_shard_option(p, "a deterministic slice of the space's launch configurations (merge checks the shards cover it)")
    p.add_argument("--quiet", action="store_true", help="no progress lines (otherwise on stderr, with the time left)")


def pool_arg(text: str) -> str:
    """A kind of KV pool by its name (``unified-mamba``; ``KVPool`` in the handler); argparse says which exist
    otherwise."""
    name = text.strip().lower()
    if name not in POOL_KINDS:
        raise argparse.ArgumentTypeError(f"unknown kind of KV pool {text!r} (known: {', '.join(POOL_KINDS)})")
    return name


def algorithm_arg(text: str) -> str | None:
    """``all``, ``none`` (speculation off) or an algorithm name, upper-cased."""
    from allocator_model import algorithms as algo

    if text.strip().lower() == ALL_ALGORITHMS:
        return ALL_ALGORITHMS
    return algo.normalize(text)


def cmd_prove(args: argparse.Namespace) -> ExitCode:
    from fuzz.findings import baseline
    from fuzz.findings.cause import causes_block
    from fuzz.findings.output import Output
    from fuzz.findings.render import counterexample_block
    from fuzz.findings.report import Command
    from fuzz.tables.judged import judged_field, judged_lines, judgements
    from fuzz.targets.resolve import resolve_targets
    from fuzz.verdict import PIPELINE

    from .grid import target_algorithms
    from .parallel import prove_in_parallel
    from .request import request
    from .sweep import prove, require_device
    from .tables import prove_tables
    from .witness import confirm

    targets = resolve_targets(args.target)
    only = algorithm_arg(args.algorithm)
    if args.heatmap:
        from .heatmap import require_matplotlib

        if len(targets) > 1:
            raise BadInput("--heatmap takes one --target")
        if not args.heatmap.lower().endswith(".png"):
            raise BadInput(f"--heatmap needs a .png file name, got {args.heatmap!r}")
        require_matplotlib()
    output = Output(args, Command.PROVE, "--heatmap")
    known = read_baseline(args, targets)
    for t in targets:
        try:
            target_algorithms(t, only)
        except ValueError as e:
            raise BadInput(str(e)) from None
    try:
        device = require_device(args.device)
    except ValueError as e:
        raise BadInput(str(e)) from None
    shard = args.shard or WHOLE
    out = sys.stdout
    if args.shard:
        print(
            f"shard {shard} of the space (merge the shards' --json reports with: python -m fuzz merge)",
            file=out,
        )
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    results = []
    causes: dict[str, list[Cause]] = {}
    on_tables: dict[str, list[Finding]] = {}  # each target's witnesses on its tables checked on their own
    tables_judged: dict[str, list[Judgement]] = {}  # each target's tables, as prove judged them
    errors: dict[str, str] = {}  # target spec -> why its verdict is an error
    judged: dict[str, baseline.Judged] = {}
    interrupted = False
    try:
        for t in targets:
            # The full space by default: a real target's functions run once per path (traced), not per configuration.
            space = args.space or ("small" if args.one_by_one and not t.is_model else "full")
            asked = request(
                t,
                space,
                algorithm=only,
                calls=True if args.calls else None,
                traced=not args.one_by_one,
                shard=shard,
                device=device,
            )
            if args.jobs > 1:
                if progress:
                    progress(f"[{t.spec}] prove: {args.jobs} worker processes, dealt the blocks round-robin")
                result = prove_in_parallel(t.spec, asked, args.jobs, on_progress=progress)
            else:
                result = prove(t, asked, on_progress=progress)
            confirm(t, result)
            for grp in result.groups.values():
                if grp.confirmed and not grp.mismatch:
                    output.save(grp.witness, origin=WITNESS_ORIGIN)
            results.append(result)
            print_result(t, result, out)
            proofs = prove_tables(t, space, only, shard)
            refused = {p.table: f"not proved: {p.refused}" for p in proofs if p.refused}
            tables_judged[t.spec] = judgements(t, Command.PROVE, {}, refused)
            # A closed form claiming a group its own table's accesses do not show is a defect of the declaration:
            # neither a finding nor clean.
            unshown = [f"{p.table}: {g.signature}" for p in proofs for g in p.groups.values() if g.witness is None]
            if unshown:
                errors[t.spec] = f"a closed form claims groups its table does not show: {', '.join(unshown)}"
                print(f"ERROR {t.spec}: {errors[t.spec]}", file=out)
            on_tables[t.spec] = [w for p in proofs for w in p.witnesses]
            for w in on_tables[t.spec]:
                output.save(w, origin=WITNESS_ORIGIN)
            for p in proofs:
                print("\n".join(p.lines()), file=out)
            for w in on_tables[t.spec]:
                print(counterexample_block(w, "WITNESS"), file=out)
            print("\n".join(judged_lines(tables_judged[t.spec])), file=out)
            witnesses = [g.witness for g in result.sorted_groups()] + on_tables[t.spec]
            if witnesses:
                causes[t.spec] = PIPELINE.causes(t, witnesses)
                print(causes_block(t.spec, causes[t.spec]), file=out)
            if known is not None:
                judged[t.spec] = PIPELINE.judge(causes.get(t.spec, []), known[t.spec])
                print("\n".join(baseline.judged_lines(judged[t.spec])), file=out)
            if args.heatmap:
                from allocator_model.pools import KVPool

                from .heatmap import pool_panels, write_heatmap

                label = "every algorithm" if only == ALL_ALGORITHMS else (only or "no speculation")
                panels = pool_panels(
                    result.pool_heat, f"{label} on {t.spec}", KVPool(args.heatmap_pool) if args.heatmap_pool else None
                )
                axes = (result.space.page_sizes, result.space.dcp_sizes)
                md = output.attempt(args.heatmap, "the heatmap", lambda: write_heatmap(args.heatmap, panels, axes=axes))  # noqa: B023
                if md is not None:
                    print(f"heatmap: {args.heatmap} (table: {md})", file=out)
    except KeyboardInterrupt:  # what was proved and saved stands: reported below, never lost to a second signal
        interrupted = True
        print("interrupted: reporting what was proved so far", file=out)
    entries = [report_entry(r, args.shard, causes.get(r.target, []), on_tables.get(r.target, [])) for r in results]
    for entry in entries:
        if entry["target"] in tables_judged:
            entry["tables"] = judged_field(tables_judged[entry["target"]])
        if entry["target"] in errors:
            entry.update(status="error", error=errors[entry["target"]])
        if entry["target"] in judged:
            entry["baseline"] = judged[entry["target"]].to_json()
    with interrupts.shielded():  # what was found is written, however many signals come now
        output.report(entries)
        witnesses = [g.witness for r in results for g in r.sorted_groups()]
        output.sarif_log(witnesses + [w for r in results for w in on_tables.get(r.target, [])], targets, causes)
    if known is not None:  # against a baseline: only a new root cause (or, strict, a fixed entry) fails
        strict = args.baseline_strict
        found = any(j.new or (strict and j.fixed) for j in judged.values())
        return output.status(found=found, interrupted=interrupted, error=bool(errors))
    found = any(r.groups for r in results) or any(on_tables.values())
    return output.status(found=found, interrupted=interrupted, error=bool(errors))


def report_entry(
    r: ProveResult, shard: Shard | None = None, causes: list[Cause] | None = None, on_tables: Sequence[Finding] = ()
) -> dict[str, Any]:
    """The target's report entry, each finding with its ``group`` (the group's full signature: a witness's own
    may lack the group's outcome), its root causes, and, for a shard, the shard (``merge`` combines the shards
    by both); ``on_tables``: the witnesses on its tables checked on their own, after the sizing's."""
    entry = r.to_json()
    for finding, grp in zip(entry["findings"], r.sorted_groups(), strict=True):
        finding["group"] = str(grp.signature)
    entry["findings"] += [{**w.to_json(), "group": str(w.signature)} for w in on_tables]
    if on_tables and entry.get("status") == "clean":
        entry["status"] = "counterexample"
    if causes:
        entry["causes"] = [c.to_json() for c in causes]
    return {**entry, "shard": str(shard)} if shard else entry


def print_result(target: Target, r: ProveResult, out: TextIO) -> None:
    """What was checked, the groups with their counts and worst values, and each group's WITNESS block."""
    from fuzz.engines import engine_of
    from fuzz.engines.sglang.names import SGLangProperty
    from fuzz.findings.kinds import Property

    from .result import NO_VIOLATION
    from .witness import witness_block

    print(f"== prove {target.spec}: {target.label}", file=out)
    modeled = engine_of(target).modeled_line(target)
    if modeled:  # a real target: what it still takes from the model
        print(modeled, file=out)
    print(f"space {r.space.describe()}", file=out)
    calls = sum(r.sizing_calls.values())
    print(
        f"method: {r.method}"
        + (
            f" ({calls:,} sizing calls: " + ", ".join(f"{k} {v:,}" for k, v in sorted(r.sizing_calls.items())) + ")"
            if r.sizing_calls
            else ""
        ),
        file=out,
    )
    print(
        f"checked {r.configurations:,} configurations in {r.seconds:.1f}s: {r.launch_configurations:,} launch "
        f"configurations, {r.decode_shapes:,} with their run-time shapes, x overlap on/off x every residue of "
        f"context_len mod the allocator page, each at its longest committed length",
        file=out,
    )
    if r.trace:
        t = r.trace
        print(
            f"traced: {t.configs_traced:,} launch configurations over {t.paths:,} paths of the sizing functions, "
            f"{t.configs_called:,} called one by one (raised, or not traceable)"
            + (
                f"; the sample of plain calls disagreed in {len(t.diverged)} block(s): {', '.join(t.diverged)}"
                if t.diverged
                else ""
            ),
            file=out,
        )
    if r.first_error:
        print(f"first sizing error: {r.first_error}", file=out)
    if not r.groups:
        print(NO_VIOLATION, file=out)
        return
    print(f"{r.violations:,} violations (a configuration counts once per property it breaks), by bug group:", file=out)
    for grp in r.sorted_groups():
        unit = "unrecorded page tail up to" if grp.signature.prop is SGLangProperty.PAGE_ALIGNED_GROWTH else "worst"
        worst = f"  {unit} {grp.worst}" if grp.worst is not None else ""
        print(f"  {grp.signature!s:<34} {grp.configurations:>16,}{worst}", file=out)
    writes = [g for g in r.groups.values() if g.signature.prop is Property.WRITE_WITHIN_ROW and g.worst is not None]
    if writes:
        top = max(writes, key=lambda g: g.worst or 0)
        print(f"worst overshoot: {top.worst} columns past the row end ({top.signature})", file=out)
    for grp in sorted(r.groups.values(), key=lambda g: (-(g.worst or 0), g.signature)):
        print(witness_block(grp), file=out)
