"""``python -m fuzz advisory CASE-or-REPORT...``: an upstream-ready issue in Markdown per root cause.

Input: case files, directories of them (``fuzz-cases/``, a matrix's
``cases/``) or JSON reports (``run``, ``prove``, ``matrix``). Everything in
the advisory is rebuilt from values, never pasted from the input: each case
document is validated as ``repro`` validates it, its target resolved from
its spec, its case replayed there (a case that no longer fails is left out,
and said so), its root cause decided again by counterfactual
(``fuzz.causes``), and the text written from those results. The affected
releases are the inputs' targets on which the cause has variants (a
matrix's cases: every release it found the cause on).

One file per cause, ``DIR/<cause>.md``: title; upstream number or "new";
affected releases; the deployment as ``launch_server`` flags and the model
family; what the write does (row width, rounded end, the columns written,
the victim); where the code is, per release; what SGLang's own write path
did with the case, where the target has it; the fix as the reference
states it; the variants; the regression test ``repro --emit-test`` writes
for the example case; and, for a cause a unified pool builder's row
carries, the same check as a test in SGLang's own layout that imports
nothing of this tool (``fuzz.causes.standalone``). Exit 0: advisories
written; 1: none of the cases reproduces; 2: bad input. Its parser:
``fuzz.report_commands``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from typing import Any

from allocator_model.config import ConfigError
from allocator_model.scenario import DecodeScenario
from fuzz.common.errors import BadInput, ExitCode, one_line
from fuzz.common.files import check_output_dir, write_atomically
from fuzz.common.jsonfile import JsonFileError, read_json
from fuzz.common.text import printable
from fuzz.findings import casefile
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.launch import MODELS, launch_line
from fuzz.findings.model import Finding
from fuzz.findings.regression import emit_test
from fuzz.targets.base import Target, TargetError
from fuzz.targets.resolve import resolve_case_target

from .counterfactual import root_causes
from .standalone import standalone_test

MAX_INPUT_BYTES = 64 << 20
MAX_CASES = 2000


def _documents(path: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, validated case document) of one input: a case file, a directory of them, or a report."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".json"))[:MAX_CASES]
        return [doc for n in names for doc in _documents(os.path.join(path, n))]
    try:
        data = read_json(path, MAX_INPUT_BYTES, "input")
    except JsonFileError as e:
        raise BadInput(str(e)) from None
    if isinstance(data, dict) and "targets" in data:  # a report: each finding as the case document it stores
        out = []
        for entry in data["targets"] if isinstance(data["targets"], list) else []:
            for i, f in enumerate(entry.get("findings", []) if isinstance(entry, dict) else []):
                doc = _from_report(entry, f)
                if doc is not None:
                    out.append((f"{path}: {entry.get('target')!r} finding {i + 1}", doc))
        return out
    try:
        return [(path, casefile.validate_document(data, path))]
    except casefile.CaseFileError as e:
        raise BadInput(str(e)) from None


def _from_report(entry: dict[str, Any], f: Any) -> dict[str, Any] | None:
    """A report finding as a case document (None: not a replayable kind); validated like a case file."""
    if not isinstance(f, dict) or f.get("kind") not in (CaseKind.DECODE.value, CaseKind.LIFECYCLE.value):
        return None
    doc = {
        "schema": casefile.SCHEMA,
        "schema_version": casefile.SCHEMA_VERSION,
        "kind": f.get("kind"),
        "target": entry.get("target"),
        "property": f.get("class"),
        "signature": f.get("group") or f.get("signature"),
        "config": f.get("config"),
        "case": f.get("case"),
    }
    try:
        return casefile.validate_document(doc, "a report finding")
    except casefile.CaseFileError as e:
        raise BadInput(str(e)) from None


def replayed(doc: dict[str, Any]) -> tuple[Target, Finding] | None:
    """The case rebuilt on its target as a finding, with the violation its replay shows (None: it passes now)."""
    from allocator_model.config import ServingConfig
    from fuzz.lifecycle.replay import run_case
    from fuzz.run.engine import check_scenario

    target = resolve_case_target(doc["target"], None)
    cfg = ServingConfig.from_dict(doc["config"])
    prop = Property(doc["property"])
    kind = CaseKind(doc["kind"])
    if kind is CaseKind.DECODE:
        scenario = DecodeScenario.from_dict(cfg, doc["case"])
        _, found = check_scenario(target, scenario, (prop,))
        reached = scenario.reached_by()
    else:
        found = [v for _, v in run_case(target, cfg, list(doc["case"].get("steps", [])), story=False).violations]
        reached = None
    same = [v for v in found if v.prop == prop]
    if not same:
        return None
    return target, Finding(kind, target.spec, same[0], cfg, doc["case"], reached_by=reached)


def causes_of_cases(docs: list[dict[str, Any]]) -> list[Cause]:
    """The root causes of validated case documents of one target, each replayed there (``merge``)."""
    rebuilt = [r for r in (replayed(d) for d in docs) if r is not None]
    return root_causes(rebuilt[0][0], [f for _, f in rebuilt]) if rebuilt else []


@dataclass
class Advisory:
    """One root cause across the inputs' targets."""

    cause: Cause
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # target spec -> its variants' findings
    where: dict[str, list[str]] = field(default_factory=dict)  # target spec -> the code the cause lives in
    targets: dict[str, Target] = field(default_factory=dict)


def advisories(docs: list[tuple[str, dict[str, Any]]], say: Any) -> list[Advisory]:
    by_target: dict[str, tuple[Target, list[Finding]]] = {}
    for where, doc in docs:
        try:
            got = replayed(doc)
        except (TargetError, ConfigError, ValueError, TypeError, KeyError) as e:  # a case no replay accepts
            raise BadInput(f"{where}: not a case this tool replays: {one_line(str(e))}") from None
        if got is None:
            say(f"left out: {printable(where, 300)}: no longer fails on its target")
            continue
        target, f = got
        by_target.setdefault(target.spec, (target, []))[1].append(f)
    out: dict[str, Advisory] = {}
    for spec, (target, findings) in by_target.items():
        for cause in root_causes(target, findings):
            adv = out.setdefault(cause.key, Advisory(cause))
            adv.targets[spec] = target
            adv.where[spec] = cause.where
            groups = cause.groups
            adv.findings[spec] = [f for f in findings if f.signature in groups]
            if adv.cause is not cause:  # the same cause on another target: its variants too
                adv.cause.variants += [s for s in cause.variants if s not in adv.cause.variants]
    return sorted(out.values(), key=lambda a: a.cause.rank)


def example(adv: Advisory) -> tuple[str, Finding]:
    """The case an advisory shows: the plainest deployment that has it. Silent first, then a page above 1 (a
    page-1 case may hold #33579 too), without DCP, not adaptive, the first kind of pool, by name."""
    from allocator_model.pools import KVPool

    kinds = list(KVPool)
    pairs = [(spec, f) for spec, fs in adv.findings.items() for f in fs]
    return min(
        pairs,
        key=lambda p: (
            p[1].signature.outcome.rank,
            p[1].config.page_size == 1,
            p[1].config.attn_dcp_size != 1,
            p[1].config.speculative_adaptive,
            kinds.index(p[1].config.kv_pool),
            str(p[1].signature),
        ),
    )


def render(adv: Advisory) -> str:
    c = adv.cause
    spec, f = example(adv)
    upstream = (
        c.bug if c.kind is CauseKind.KNOWN and c.bug != "new" else "new: no upstream issue or pull request names it"
    )
    lines = [
        f"# req_to_token: {c.title}",
        "",
        f"- **Upstream:** {upstream}",
        f"- **Affected:** {', '.join(sorted(adv.findings))}",
        f"- **Outcome:** {f.signature.outcome} (the write lands in another request's row; nothing stops it)"
        if str(f.signature.outcome) == "silent"
        else f"- **Outcome:** {f.signature.outcome}",
        f"- **Found by:** kvrow-fuzz, root cause by counterfactual: {_how(c)}",
        "",
        "## Deployment",
        "",
        "```",
        launch_line(f.config),
        "```",
        "",
    ]
    if f.config.kv_pool in MODELS:
        lines += [f"Reached with {MODELS[f.config.kv_pool]}.", ""]
    lines += ["## What happens", "", f"On {spec}:", "", "```", f.violation.describe()]
    if f.reached_by:
        lines.append(f"reached: {f.reached_by}")
    lines += ["```", ""]
    sglang = _on_sglang(adv.targets[spec], f)
    if sglang:
        lines += [f"SGLang's own write path: {sglang}.", ""]
    lines += ["## Where", ""]
    for target, where in sorted(adv.where.items()):
        lines += [f"- {target}: " + ("; ".join(f"`{w}`" for w in where) if where else "(not located)")]
    lines += ["", "## Fix", "", c.fix or "(no fix stated)", "", "## Variants", ""]
    lines += ["| bug group | kv pool | algorithm | outcome |", "|---|---|---|---|"]
    seen = set()
    for fs in adv.findings.values():
        for g in fs:
            if g.signature in seen:
                continue
            seen.add(g.signature)
            algorithm = g.config.speculative_algorithm or "none"
            lines.append(f"| `{g.signature}` | {g.config.kv_pool.value} | {algorithm} | {g.signature.outcome} |")
    for other, sigs in sorted(c.needs_both.items()):
        lines += ["", f"Needs this fix and {other} together: " + ", ".join(f"`{s}`" for s in sorted(sigs)) + "."]
    test = emit_test(casefile.document(f))
    lines += [
        "",
        "## Regression test",
        "",
        "Fails on the affected release, passes once fixed: `pytest test_kv_row_regression.py "
        "--kvrow-target=CHECKOUT` (the root of an SGLang checkout: its sizing file, pool builders and write "
        "path are read from there; needs `pip install kvrow-fuzz`):",
        "",
        "```python",
        test.rstrip(),
        "```",
        "",
    ]
    standalone = standalone_test(c, sorted(adv.findings), f.config)
    if standalone is not None:
        lines += [
            f"The same check in SGLang's own test layout, `{standalone.path}`: it calls SGLang's functions "
            "only and imports nothing of kvrow-fuzz, so it runs in an SGLang checkout as it is "
            f"(`python -m pytest {standalone.path} -v`); it fails on {', '.join(sorted(adv.findings))} and "
            "passes once fixed:",
            "",
            "```python",
            standalone.text.rstrip(),
            "```",
            "",
        ]
    return "\n".join(lines)


def _how(c: Cause) -> str:
    if c.kind is CauseKind.KNOWN:
        return "the reference's fix of this bug alone makes every variant's case pass"
    if c.kind is CauseKind.PIECE:
        return "the reference's version of this function (and what it feeds) alone makes every case pass"
    return "no single fix makes the case pass"


def _on_sglang(target: Target, f: Finding) -> str | None:
    """What SGLang's own write path did with the example case (None: the target has no such path)."""
    from fuzz.run.sglang import confirmation, has_sglang_path, on_sglang

    if f.kind is not CaseKind.DECODE or not has_sglang_path(target):
        return None
    check = on_sglang(target, DecodeScenario.from_dict(f.config, f.case), trace=True)
    return confirmation(check, f.violation)[1]


def cmd_advisory(args: argparse.Namespace) -> ExitCode:
    check_output_dir(args.out, "--out")
    docs = [doc for path in args.inputs for doc in _documents(path)]
    if not docs:
        raise BadInput("no case in the inputs (case files, directories of them, or JSON reports)")
    found = advisories(docs, lambda line: print(line))
    if not found:
        print("no case reproduces on its target: nothing to write")
        return ExitCode.FOUND
    os.makedirs(args.out, exist_ok=True)
    for adv in found:
        path = os.path.join(args.out, f"{casefile.slug(adv.cause.key)}.md")
        write_atomically(path, render(adv))
        print(f"{adv.cause.label}: {path} ({sum(len(v) for v in adv.findings.values())} case(s))")
    return ExitCode.CLEAN
