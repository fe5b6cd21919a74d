"""``python -m fuzz prove``: its options and the command.

Per target: its engine's bounded proof (``Engine.prover``: the sweep, each
group's witness judged by the verdict pipeline), each confirmed witness
saved as a case file (named apart from ``run``'s:
``TARGET--witness--SIGNATURE.json``), its lines printed; then the proofs of
the tables checked on their own (``tables``), the root causes, the
baseline's verdict, the heatmap, the shared JSON report and SARIF.
Exit 0: no violation in the bounded space; 1: violations; 2: bad input
(one line, for every target before any work starts).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fuzz.common import interrupts
from fuzz.common.defaults import ALL_ALGORITHMS
from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.options import (
    TARGETS_HELP,
    add_baseline_options,
    add_command,
    add_detail_options,
    add_output_options,
    add_shard_option,
    read_baseline,
)
from fuzz.common.shards import WHOLE, Shard, parse_jobs
from fuzz.engines import BUILTIN_PROVE

if TYPE_CHECKING:
    from fuzz.findings.cause import Cause
    from fuzz.findings.model import Finding

# The builtin engines' spaces and heatmap panels, for the parser (light: ``--help`` imports no engine).
SPACE_NAMES = tuple(sorted({name for e in BUILTIN_PROVE.values() for name in e["spaces"]}))
POOL_KINDS = tuple(dict.fromkeys(name for e in BUILTIN_PROVE.values() for name in e["panels"]))
PANEL = " or ".join(dict.fromkeys(name for e in BUILTIN_PROVE.values() for name in e["panel"]))

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
    add_detail_options(p, "no progress lines (otherwise on stderr, with the time left)")


def pool_arg(text: str) -> str:
    """A heatmap panel by its name (SGLang's: a kind of KV pool, ``unified-mamba``; the engine's prover takes it);
    argparse says which exist otherwise."""
    name = text.strip().lower()
    if name not in POOL_KINDS:
        raise argparse.ArgumentTypeError(f"unknown {PANEL} {text!r} (known: {', '.join(POOL_KINDS)})")
    return name


def cmd_prove(args: argparse.Namespace) -> ExitCode:
    from fuzz.common.columns import WIDTH, fold
    from fuzz.engines import engine_of
    from fuzz.findings import baseline
    from fuzz.findings.output import Output
    from fuzz.findings.render import Detail, causes_block, counterexample_block
    from fuzz.findings.report import Command
    from fuzz.tables.judged import judged_field, judged_lines, judgements
    from fuzz.targets.resolve import resolve_targets
    from fuzz.verdict import PIPELINE

    from .proof import ProveOptions
    from .tables import prove_tables

    targets = resolve_targets(args.target)
    if args.heatmap:
        if len(targets) > 1:
            raise BadInput("--heatmap takes one --target")
        if not args.heatmap.lower().endswith(".png"):
            raise BadInput(f"--heatmap needs a .png file name, got {args.heatmap!r}")
    shard = args.shard or WHOLE
    options = ProveOptions(
        space=args.space,
        algorithm=args.algorithm,
        calls=args.calls,
        one_by_one=args.one_by_one,
        device=args.device,
        jobs=args.jobs,
        shard=shard,
        heatmap_pool=args.heatmap_pool,
    )
    provers = {}  # each target's, its options checked before any target is swept
    for t in targets:
        try:
            provers[t.spec] = engine_of(t).prover(t, options)
        except ValueError as e:
            raise BadInput(str(e)) from None
    if args.heatmap:
        provers[targets[0].spec].check_heatmap()
    output = Output(args, Command.PROVE, "--heatmap")
    known = read_baseline(args, targets)
    out = sys.stdout
    if args.shard:
        print(
            f"shard {shard} of the space (merge the shards' --json reports with: kvrow-fuzz merge)",
            file=out,
        )
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    detail = Detail.of(args)
    entries: list[dict[str, Any]] = []  # each swept target's report entry, in order
    found = False
    sarif_witnesses: list[Finding] = []
    causes: dict[str, list[Cause]] = {}
    errors: dict[str, str] = {}  # target spec -> why its verdict is an error
    judged: dict[str, baseline.Judged] = {}
    interrupted = False
    try:
        for t in targets:
            prover = provers[t.spec]
            proof = prover.sweep(on_progress=progress)
            for w in proof.saved:
                output.save(w, origin=WITNESS_ORIGIN)
            entries.append(report_entry(proof.entry(), args.shard))
            found, sarif_witnesses = found or bool(proof.witnesses), sarif_witnesses + proof.witnesses
            print(fold("\n".join(proof.lines())), file=out)
            # A witness the engine's model disagrees with (no case file: its block says how) always shows its
            # block; every witness's under --verbose, else each cause's lead in the ROOT CAUSES section.
            unconfirmed = {w.signature for w in proof.witnesses} - {w.signature for w in proof.saved}
            shown = None if detail is Detail.EVERY else unconfirmed
            for block in proof.blocks(shown, WIDTH):
                print(block, file=out)
            proofs = prove_tables(t, prover)
            refused = {p.table: f"not proved: {p.refused}" for p in proofs if p.refused}
            tables_judged = judgements(t, Command.PROVE, {}, refused)
            # A closed form claiming a group its own table's accesses do not show is a defect of the declaration:
            # neither a finding nor clean.
            unshown = [f"{p.table}: {g.signature}" for p in proofs for g in p.groups.values() if g.witness is None]
            if unshown:
                errors[t.spec] = f"a closed form claims groups its table does not show: {', '.join(unshown)}"
                print(f"ERROR {t.spec}: {errors[t.spec]}", file=out)
            on_tables = [w for p in proofs for w in p.witnesses]
            for w in on_tables:
                output.save(w, origin=WITNESS_ORIGIN)
            for p in proofs:
                print(fold("\n".join(p.lines())), file=out)
            for w in on_tables if detail is Detail.EVERY else []:
                print(counterexample_block(w, "WITNESS", width=WIDTH), file=out)
            print(fold("\n".join(judged_lines(tables_judged))), file=out)
            witnesses = proof.witnesses + on_tables
            found, sarif_witnesses = found or bool(on_tables), sarif_witnesses + on_tables
            if witnesses:
                causes[t.spec] = PIPELINE.causes(t, witnesses)
                section = causes_block(t.spec, causes[t.spec], witnesses, detail=detail, width=WIDTH, word="WITNESS")
                print(section, file=out)
            if known is not None:
                judged[t.spec] = PIPELINE.judge(causes.get(t.spec, []), known[t.spec])
                print(fold("\n".join(baseline.judged_lines(judged[t.spec]))), file=out)
            entries[-1] = report_entry(proof.entry(), args.shard, causes.get(t.spec, []), on_tables)
            entries[-1]["tables"] = judged_field(tables_judged)
            if args.heatmap:
                md = output.attempt(args.heatmap, "the heatmap", lambda: prover.write_heatmap(proof, args.heatmap))  # noqa: B023
                if md is not None:
                    print(f"heatmap: {args.heatmap} (table: {md})", file=out)
    except KeyboardInterrupt:  # what was proved and saved stands: reported below, never lost to a second signal
        interrupted = True
        print("interrupted: reporting what was proved so far", file=out)
    for entry in entries:
        if entry["target"] in errors:
            entry.update(status="error", error=errors[entry["target"]])
        if entry["target"] in judged:
            entry["baseline"] = judged[entry["target"]].to_json()
    with interrupts.shielded():  # what was found is written, however many signals come now
        output.report(entries)
        output.sarif_log(sarif_witnesses, targets, causes)
    if known is not None:  # against a baseline: only a new root cause (or, strict, a fixed entry) fails
        strict = args.baseline_strict
        new = any(j.new or (strict and j.fixed) for j in judged.values())
        return output.status(found=new, interrupted=interrupted, error=bool(errors))
    return output.status(found=found, interrupted=interrupted, error=bool(errors))


def report_entry(
    entry: dict[str, Any],
    shard: Shard | None = None,
    causes: list[Cause] | None = None,
    on_tables: Sequence[Finding] = (),
) -> dict[str, Any]:
    """A target's report entry (``entry``: its sizing proof's, ``SizingProof.entry``) with the witnesses on its tables
    checked on their own after the sizing's, its root causes, and, for a shard, the shard (``merge`` combines the
    shards by both)."""
    entry = {
        **entry,
        "findings": [*entry["findings"], *({**w.to_json(), "group": str(w.signature)} for w in on_tables)],
    }
    if on_tables and entry.get("status") == "clean":
        entry["status"] = "counterexample"
    if causes:
        entry["causes"] = [c.to_json() for c in causes]
    return {**entry, "shard": str(shard)} if shard else entry
