"""``python -m fuzz advisory CASE-or-REPORT...``: an upstream-ready issue in Markdown per root cause.

Input: case files, directories of them (``fuzz-cases/``, a matrix's
``cases/``) or JSON reports (``run``, ``prove``, ``matrix``); ``--target SPEC``
replays every case on SPEC (a release, the installed SGLang, a checkout)
instead of the target it names. Everything in the advisory is rebuilt from
values, never pasted from the input: every case document is first validated
by the one function ``repro`` validates with (``fuzz.engines.sglang.decode.replay.replayable_case``:
the replay budget, the release's launch rules, the scheduler's), all of them
before any is replayed, so a bad one is one line and exit 2 in a blink; a
case of this tool's own model (``reference``, ``reference@REVISION``) is not
SGLang's: one line naming the release to replay it on, exit 2. Each case is
then replayed on its target (one that no longer fails is left out, and said
so), its root cause decided again by counterfactual (``PIPELINE.causes``), and
the text written from those results, every value of it made printable and
every code block fenced so nothing inside can close it. The affected
releases are the inputs' targets on which the cause has variants (a
matrix's cases: every release it found the cause on).

One file per cause, ``DIR/<cause>.md``: title; upstream number or "new";
affected releases; the deployment as ``launch_server`` flags and the model
family (a group's representative case where the inputs hold one); what the
write does (row width, rounded end, the columns written, the victim); what
SGLang's own write path did with the case; the group's minimal case after
it; where the code is, per release; the fix as the reference states it; the
variants; the regression test ``repro --emit-test`` writes for the example
case; and, for a cause a unified pool builder's row carries, the same check
as a test in SGLang's own layout that imports nothing of this tool
(``fuzz.engines.sglang.standalone``). The embedded regression test replays
with ``repro``'s own validation, so it fails (an assertion with the story)
on the affected release and never errors on a case ``repro`` refuses. Exit
0: advisories written; 1: none of the cases reproduces; 2: bad input. Its
parser: ``fuzz.engines.sglang.cli``; its executor: ``commands``.

A table checked on its own (an attention backend's page table) has its cases
validated and its advisory written by ``table_advisory``; the fixes given with
``--fix`` are judged by ``fixjudge`` and their verdicts are a section of the
advisory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from allocator_model.revisions import RELEASE_REVISIONS
from fuzz.common.errors import BadInput, one_line
from fuzz.common.text import printable
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.decode.check import DecodeCase
from fuzz.engines.sglang.decode.replay import ReplayableCase, replayable_case
from fuzz.engines.sglang.groups import serving_config
from fuzz.engines.sglang.launch import MODELS, launch_line
from fuzz.engines.sglang.lifecycle.replay import run_replayable
from fuzz.engines.sglang.lifecycle.script import lifecycle_finding
from fuzz.engines.sglang.representative import deployment_rank, minimal_of
from fuzz.engines.sglang.standalone import standalone_test
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings import casefile
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.kinds import SILENT
from fuzz.findings.model import Finding
from fuzz.tables.declared import TABLE_CASE
from fuzz.targets.base import TargetError
from fuzz.verdict import PIPELINE, Unjudgeable

from .advisory_parts import Advisory, code, fenced, regression_section
from .table_advisory import render_table, table_replayable


def replayed_case(case: ReplayableCase, where: str) -> tuple[SGLangTarget, Finding] | None:
    """A validated case replayed on its target as a finding, with the violation its replay shows (None: it passes
    now). The finding's case is rebuilt from the validated values (a decode state's own fields; a script)."""
    if case.table is not None:  # a table's case: what its builders did, judged (CaseFileError where they cannot run)
        try:
            found = PIPELINE.case(case.target, case.table, (case.prop,), confirm=False).findings
        except (TargetError, Unjudgeable, ValueError) as e:
            raise casefile.CaseFileError(f"{where}: {e}".splitlines()[0]) from None
    elif case.scenario is not None:
        found = PIPELINE.case(case.target, DecodeCase(case.scenario), (case.prop,), confirm=False).findings
    else:  # a script the target cannot run is CaseFileError here (``run_replayable``), not a pass
        run = run_replayable(case, where, story=False)
        found = [lifecycle_finding(case.target.spec, v, case.config, case.steps or []) for _, v in run.violations]
    same = [f for f in found if f.violation.prop == case.prop]
    return (case.target, same[0]) if same else None


def replayed(
    doc: dict[str, Any], where: str = "the case", named: str | None = None
) -> tuple[SGLangTarget, Finding] | None:
    """``replayed_case`` of a validated case document, checked as ``repro`` checks it (CaseFileError otherwise)."""
    return replayed_case(_replayable(doc, where, named), where)


def _replayable(doc: dict[str, Any], where: str, named: str | None) -> ReplayableCase:
    kind = casefile.case_kind(doc)
    if kind is None:  # validate_document refuses it first
        raise casefile.CaseFileError(f"{where} has no case kind")
    if kind is TABLE_CASE:
        return table_replayable(doc, where, named)
    return replayable_case(kind, doc, where, named)


def model_case(where: str, target: SGLangTarget) -> str:
    """The line for a case of this tool's model: not SGLang's code, so no advisory; the release to replay it on
    (the newest release the revision models, else the newest modeled release, as an example)."""
    assert target.is_model
    releases = sorted(RELEASE_REVISIONS, key=_release_key)
    own = [r for r in releases if RELEASE_REVISIONS[r] == target.revision.name]
    release = (own or releases)[-1]
    example = "" if own else "e.g. "
    return (
        f"{printable(where, 300)}: a case of this tool's model ({target.spec}, located in the model's own code), not "
        f"of SGLang: an advisory is written for a real target only; replay it on a release: {example}--target "
        f"sglang=={release}"
    )


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def validated(
    docs: list[tuple[str, dict[str, Any]]], named: str | None, say: Callable[[str], None]
) -> list[tuple[str, ReplayableCase]]:
    """Every input case validated as ``repro`` validates it, all before any is replayed; BadInput (one line) for
    the first that is not a real target's replayable case (``model_case``). A fidelity case (the model held to
    SGLang's code, no bug of SGLang's) is left out, and said so."""
    out = []
    for where, doc in docs:
        if casefile.case_kind(doc) is SGLangCase.FIDELITY:
            say(f"left out: {printable(where, 300)}: a fidelity case (the model against SGLang's code): no advisory")
            continue
        try:
            case = _replayable(doc, where, named)
        except casefile.CaseFileError as e:
            raise BadInput(one_line(str(e))) from None
        if case.target.is_model:
            raise BadInput(model_case(where, case.target))
        out.append((where, case))
    return out


def advisories(cases: list[tuple[str, ReplayableCase]], say: Callable[[str], None]) -> list[Advisory]:
    """The advisories of validated cases (``validated``), one per root cause across their targets."""
    by_target: dict[str, tuple[SGLangTarget, list[tuple[str, Finding]]]] = {}
    for where, case in cases:
        try:
            got = replayed_case(case, where)
        except casefile.CaseFileError as e:  # a script the release's own allocator cannot run
            raise BadInput(one_line(str(e))) from None
        if got is None:
            say(f"left out: {printable(where, 300)}: no longer fails on its target")
            continue
        target, f = got
        by_target.setdefault(target.spec, (target, []))[1].append((where, f))
    out: dict[str, Advisory] = {}
    for spec, (target, pairs) in by_target.items():
        findings = [f for _, f in pairs]
        for cause in PIPELINE.causes(target, findings):
            adv = out.setdefault(cause.key, Advisory(cause))
            adv.targets[spec] = target
            adv.where[spec] = cause.where
            groups = cause.groups
            adv.findings[spec] = [f for f in findings if f.signature in groups]
            adv.cases += [(w, f) for w, f in pairs if f.signature in groups]
            if adv.cause is not cause:  # the same cause on another target: its variants too
                adv.cause.variants += [s for s in cause.variants if s not in adv.cause.variants]
    return sorted(out.values(), key=lambda a: a.cause.rank)


def example(adv: Advisory) -> tuple[str, Finding]:
    """The case an advisory shows: a representative case where the inputs hold one (``deployment_rank``), then
    the plainest deployment that has it. Silent first, then a page above 1 (a page-1 case may hold #33579 too),
    without DCP, not adaptive, the first kind of pool, by name."""
    from allocator_model.pools import KVPool

    kinds = list(KVPool)
    pairs = [(spec, f) for spec, fs in adv.findings.items() for f in fs]
    return min(
        pairs,
        key=lambda p: (
            deployment_rank(serving_config(p[1])),
            p[1].signature.outcome.rank,
            serving_config(p[1]).page_size == 1,
            serving_config(p[1]).attn_dcp_size != 1,
            serving_config(p[1]).speculative_adaptive,
            kinds.index(serving_config(p[1]).kv_pool),
            str(p[1].signature),
        ),
    )


def render(adv: Advisory, fixes: list[str] | None = None) -> str:
    """The advisory's Markdown: every value that did not come from this tool's own tables (a spec, a place in a
    target's code, a line of a story) made ``printable``, each code block fenced longer than any backtick run it
    holds (``fenced``), each code span likewise (``code``). ``fixes``: the section of the fixes judged
    (``fixjudge.fix_section``). A table's cause is written by ``table_advisory``."""
    if any(f.kind is TABLE_CASE for fs in adv.findings.values() for f in fs):
        return render_table(adv, fixes or [])
    c = adv.cause
    spec, f = example(adv)
    affected = ", ".join(printable(s, 300) for s in sorted(adv.findings))
    upstream = (
        c.bug if c.kind is CauseKind.KNOWN and c.bug != "new" else "new: no upstream issue or pull request names it"
    )
    lines = [
        f"# req_to_token: {printable(c.title, 300)}",
        "",
        f"- **Upstream:** {printable(upstream, 300)}",
        f"- **Affected:** {affected}",
        f"- **Outcome:** {f.signature.outcome} (the write lands in another request's row; nothing stops it)"
        if f.signature.outcome == SILENT
        else f"- **Outcome:** {f.signature.outcome}",
        f"- **Found by:** kvrow-fuzz, root cause by counterfactual: {_how(c)}",
        "",
        "## Deployment",
        "",
        fenced([launch_line(serving_config(f))]),
    ]
    if serving_config(f).kv_pool in MODELS:
        lines += [f"Reached with {MODELS[serving_config(f).kv_pool]}.", ""]
    story = f.violation.describe().splitlines() + ([f"reached: {f.reached_by}"] if f.reached_by else [])
    lines += ["## What happens", "", f"On {printable(spec, 300)}:", "", fenced(story)]
    sglang = _on_sglang(adv.targets[spec], f)
    if sglang:
        lines += [f"SGLang's own write path: {printable(sglang)}.", ""]
    minimal = minimal_of(adv.findings[spec], f)
    if minimal is not None:
        lines += ["## The minimal case", "", "The same bug group at the smallest deployment the search shrank it to:"]
        lines += ["", fenced([launch_line(serving_config(minimal)), minimal.violation.describe().splitlines()[0]])]
    lines += ["## Where", ""]
    for target, where in sorted(adv.where.items()):
        lines += [f"- {printable(target, 300)}: " + ("; ".join(code(w) for w in where) if where else "(not located)")]
    lines += ["", "## Fix", "", printable(c.fix) if c.fix else "(no fix stated)", "", *(fixes or []), "## Variants", ""]
    lines += ["| bug group | kv pool | algorithm | outcome |", "|---|---|---|---|"]
    seen = set()
    for fs in adv.findings.values():
        for g in fs:
            if g.signature in seen:
                continue
            seen.add(g.signature)
            algorithm = serving_config(g).speculative_algorithm or "none"
            lines.append(
                f"| {code(g.signature)} | {serving_config(g).kv_pool.value} | {algorithm} | {g.signature.outcome} |"
            )
    for other, sigs in sorted(c.needs_both.items()):
        both = ", ".join(code(s) for s in sorted(sigs))
        lines += ["", f"Needs this fix and {printable(other, 200)} together: {both}."]
    lines += regression_section(
        f, "its sizing file, pool builders and write path are read from there; needs `pip install kvrow-fuzz`"
    )
    standalone = standalone_test(c, sorted(adv.findings), serving_config(f))
    if standalone is not None:
        lines += [
            f"The same check in SGLang's own test layout, {code(standalone.path)}: it calls SGLang's functions "
            "only and imports nothing of kvrow-fuzz, so it runs in an SGLang checkout as it is "
            f"({code(f'python -m pytest {standalone.path} -v')}); it fails on {affected} and "
            "passes once fixed:",
            "",
            fenced(standalone.text.rstrip().splitlines(), "python"),
        ]
    return "\n".join(lines)


def _how(c: Cause) -> str:
    if c.kind is CauseKind.KNOWN:
        return "the reference's fix of this bug alone makes every variant's case pass"
    if c.kind is CauseKind.PIECE:
        return "the reference's version of this function (and what it feeds) alone makes every case pass"
    return "no single fix makes the case pass"


def _on_sglang(target: SGLangTarget, f: Finding) -> str | None:
    """What SGLang's own write path did with the example case (None: the target has no such path)."""
    return PIPELINE.confirm(target, dataclasses.replace(f, confirmation=None)).confirmation
