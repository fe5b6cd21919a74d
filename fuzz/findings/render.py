"""The one renderer: a finding's COUNTEREXAMPLE block, its repro line, the ROOT CAUSES section and the campaign
summary table.

    COUNTEREXAMPLE write-within-row/dcp>1 on reference@sglang-0.5.18
      config: context_len=8 page_size=1 attn_dcp_size=2 ...
      case:   {"committed_len": 4, ...}
      write-within-row: request 1 (row 1) wrote columns [4, 22) of a row 21 wide: ...
    repro: python -m fuzz repro fuzz-cases/reference-sglang-0.5.18--write-within-row-dcp-1.json

The case lines depend on the case kind (a decode case as JSON, a lifecycle
case as its numbered step script); everything else is the same for every
command.  A command's text shows one section per root cause
(``causes_block``), each led by one group's block (``lead``) at the detail
asked for (``Detail``: ``--quiet``, the default, ``--verbose``), every line
at most ``columns.WIDTH`` wide but a path; the same block without a width is
what SARIF and the reports carry, each field on one line.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from enum import IntEnum
from typing import Any, Protocol

from fuzz.common.columns import WIDTH, collapse_chains, fold, shell_lines
from fuzz.tables.declared import TABLE_CASE, table

from .cause import Cause
from .kinds import Property, Scope, Signature, case_type
from .model import Finding


def table_of(f: Finding) -> str | None:
    """The table a finding is about: its case's (a table's case names it), or for a model mismatch the surface
    that disagrees (a table's name where a table's builders and the model's twin differ); None: the engine's first."""
    table = f.case.get("table") if isinstance(f.case, dict) else None
    if table is None and f.violation.prop is Property.MODEL_MISMATCH:
        return str(f.violation.group)
    return table if isinstance(table, str) else None


def counterexample_block(
    f: Finding, word: str = "COUNTEREXAMPLE", *, width: int | None = None, chains: bool = True
) -> str:
    """The block every command prints for a finding; ``word`` is WITNESS for prove's worst configurations.

    Where the group's representative case was searched for (``Finding.search``), the block leads with it (its
    deployment, then its case in full and its repro line) and the minimal case follows (its configuration, case
    and headline); a search that missed says so, and the minimal case is the block.

    Without ``width``, one field a line, each whole: what SARIF and the reports carry.  With it, the block as a
    terminal shows it: every line at most ``width`` columns where its words allow (``fold``), the launch line
    broken into shell continuations that still paste (``shell_lines``), and unless ``chains`` a call chain shown
    by its entry point and its writer (``collapse_chains``; ``--verbose`` keeps it whole)."""
    from fuzz.engines import load

    how = case_type(f.kind)
    search = f.search
    shown = search.found if search is not None and search.found is not None else f
    lines = [f"{word} {f.signature} on {f.target}{how.suffix(f.case, f.revision)}"]
    lines += [f"  {search.line()}"] if search is not None else []
    lines.append(f"  config: {how.config_line(shown.config)}")
    launch = load(shown.engine).launch_line(shown.config, table_of(shown))
    shell: list[str] = []
    if launch is not None:
        lines.append(f"  launch: {launch}")
        shell = shell_lines("  launch:", launch, width) if width else []
    lines += [f"  {line}" for line in how.lines(shown.case)]
    if shown.reached_by:
        lines.append(f"  reached: {shown.reached_by}")
    lines += [f"  {line}" for line in shown.violation.describe().splitlines()]
    if sampled_only(f):
        lines.append(f"  scope: sampled only: {f.signature.prop.value} lies outside the bounded proof")
    if shown.confirmation:
        lines.append(f"  {f.engine}: {shown.confirmation if chains else collapse_chains(shown.confirmation)}")
    whole: dict[str, list[str]] = {}  # the repro lines: broken only where a shell pastes them back whole
    if shown is not f:
        if shown.case_path:
            lines.append(f"  repro: {shown.repro}")
            whole[lines[-1]] = _pasted("  repro:", shown.repro, width)
        lines.append(f"  minimal case: {how.config_line(f.config)}")
        lines += [f"    {line}" for line in how.lines(f.case)]
        lines.append(f"    {f.violation.describe().splitlines()[0]}")
    repro = _pasted("repro:", f.repro, width) if f.case_path else []
    if not width:
        return "\n".join(lines + repro)
    folded = lines[:1]  # the headline whole too: what a reader (or a job summary's grep) finds the block by
    for line in lines[1:]:
        if line in whole:
            folded += whole[line]
        else:
            folded += shell if shell and line == f"  launch: {launch}" else [fold(line, width)]
    return "\n".join(folded + repro)


def _pasted(label: str, command: str, width: int | None) -> list[str]:
    """``label command`` on one line, or where that passes ``width``, broken into shell continuation lines that
    paste back as the one command (``shell_lines``): a repro line stays a line a reader copies and runs."""
    line = f"{label} {command}" if label.strip() else f"{label}{command}"
    return [line] if not width or len(line) <= width else shell_lines(label, command, width)


def leading_repro(f: Finding) -> str:
    """The repro line a finding is listed by where its block is not shown: its representative case's where one was
    found and saved, else its own."""
    found = f.search.found if f.search is not None else None
    return found.repro if found is not None and found.case_path else f.repro


class Detail(IntEnum):
    """How much of a campaign's findings its text shows; the JSON report, case files and SARIF hold all of it.

    Every detail names every group: a cause's section stands in for the blocks it does not show, and each of
    those blocks is one repro line (or ``--verbose``) away."""

    CAUSES = 0  # --quiet: the summary and the causes, each cause's groups by name and its lead's repro line
    LEADS = 1  # the default: and each cause's lead group in its full block, the others with their repro lines
    EVERY = 2  # --verbose: every group's full block as the search finishes it, call chains whole

    @classmethod
    def of(cls, args: argparse.Namespace) -> Detail:
        """``--verbose`` (every block, whatever else is given), else ``--quiet``, else the default."""
        if getattr(args, "verbose", False):
            return cls.EVERY
        return cls.CAUSES if getattr(args, "quiet", False) else cls.LEADS


BODY = "     "  # a cause's lines under its numbered heading


def causes_block(
    target: str,
    causes: list[Cause],
    findings: Iterable[Finding] = (),
    *,
    detail: Detail = Detail.CAUSES,
    width: int | None = None,
    word: str = "COUNTEREXAMPLE",
) -> str:
    """The ROOT CAUSES section: its summary line, then each cause, worst first: its heading, the code it is in,
    the term missing, the fix, an example value, its lead group (``lead``) and every other group it explains,
    one a line.

    With ``findings`` at hand the lead is shown at ``detail``: ``LEADS`` its full block (``word``) and each other
    group's repro line, else the lead's repro line only.  ``width`` folds every line as ``counterexample_block``
    does (None: each line whole)."""
    at_hand = {f.signature: f for f in findings}
    groups = {s for c in causes for s in c.groups}
    lines = [f"ROOT CAUSES on {target}: {len(causes)} cause(s) for {len(groups)} bug group(s), worst first"]
    for n, c in enumerate(sorted(causes, key=lambda c: c.rank), 1):
        said = [f"  {n}. {c.heading()}"]
        said += [f"{BODY}in: {w}" for w in _where(c.where)]
        said += [f"{BODY}missing: {c.missing}"] if c.missing else []
        said += [f"{BODY}fix: {c.fix}"] if c.fix else []
        said += [f"{BODY}{v}" for v in c.values[:3]]
        lines += [_folded(line, width, hang=3 if i == 0 else 2) for i, line in enumerate(said)]
        first = lead(c, at_hand)
        block = first if detail is Detail.LEADS else None
        if block is not None:
            shown = counterexample_block(block, word, width=width and width - len(BODY), chains=False)
            lines += [BODY + line for line in shown.splitlines()]
        listed = {"variants": sorted(c.variants)}
        listed.update({f"needs both (with {other})": sorted(sigs) for other, sigs in sorted(c.needs_both.items())})
        for label, sigs in listed.items():
            rest = [s for s in sigs if block is None or s != block.signature]
            label += f" ({len(rest)}{' more' if len(rest) < len(sigs) else ''})" if label == "variants" else ""
            replay = {
                s: leading_repro(at_hand[s]) for s in rest if block is not None and s in at_hand and at_hand[s].repro
            }
            lines += _groups(label, rest, replay, width)
        if block is None and first is not None and first.repro:
            lines += _pasted(f"{BODY}repro:", leading_repro(first), width)
    return "\n".join(lines)


def lead(c: Cause, findings: Mapping[Signature, Finding]) -> Finding | None:
    """The group a cause is shown by, in the text and in SARIF alike: among all it explains, one at hand whose
    representative case was found where any was (the block leads with it), then the plainest (silent before stale
    reads and guards, then by name)."""
    return min(
        (findings[s] for s in c.groups if s in findings),
        key=lambda f: (f.search is not None and f.search.found is None, f.signature.sort_key),
        default=None,
    )


def _groups(label: str, sigs: list[Signature], replay: Mapping[Signature, str], width: int | None) -> list[str]:
    """``label: GROUP, GROUP...`` (within ``width``, the other lines under the first name; without one, a group a
    line); a group with a repro line on a line of its own, the repro after it (on the next line where the two pass
    ``width``)."""
    if not sigs:
        return []
    if not replay:
        if width:  # as many a line as fit, the continuations under the first name
            return fold(f"{BODY}{label}: " + ", ".join(map(str, sigs)), width, hang=len(label) + 2).splitlines()
        pad = BODY + " " * (len(label) + 2)
        return [f"{BODY}{label}: {sigs[0]}", *(f"{pad}{s}" for s in sigs[1:])]
    lines = [f"{BODY}{label}:"]
    for s in sigs:
        line = f"{BODY}  {s}: {replay[s]}" if s in replay else f"{BODY}  {s}"
        if s in replay and width and len(line) > width:
            line = "\n".join([f"{BODY}  {s}:", *_pasted(f"{BODY}   ", replay[s], width)])
        lines.append(line)
    return lines


def _where(where: list[str]) -> list[str]:
    """A cause's code, one line per file: ``FILE:LINE FUNCTION`` entries of one file after the first as
    ``:LINE FUNCTION``, in their order."""
    out: list[str] = []
    last = None
    for w in where:
        path, colon, rest = w.partition(" ")[0].rpartition(":")
        if colon and path == last:
            out[-1] += f", :{rest} {w.partition(' ')[2]}".rstrip()
        else:
            out.append(w)
        last = path if colon else None
    return out


def _folded(line: str, width: int | None, hang: int = 2) -> str:
    return fold(line, width, hang) if width else line


def sampled_only(f: Finding) -> bool:
    """Whether no bounded proof decides ``f``'s property: its scope, or on a table checked on its own, the table's
    closed form (``Table.proved``)."""
    if f.kind is TABLE_CASE:
        return table(f.case["table"]).sampled_only(f.signature.prop)
    return f.signature.prop.scope is Scope.SAMPLED


class Summarized(Protocol):
    target: str
    examples: int
    seconds: float
    findings: list[Finding]
    interrupted: bool
    causes: list[Cause]

    @property
    def status(self) -> Any: ...


def summary_table(results: Iterable[Summarized], width: int = WIDTH) -> str:
    """One line per target: status, examples, seconds and what was found: its root causes (each group is
    listed under its cause above), else the groups; a row past ``width`` folds under its found column."""
    head = f"{'target':<32} {'status':<28} {'examples':>9} {'seconds':>8}  "
    lines = ["", head + "found"]
    for r in results:
        groups = ", ".join(str(f.signature) for f in r.findings) or "-"
        if r.causes:
            groups = causes_cell(r.causes, len(r.findings))
        status = str(r.status) + (" (interrupted)" if r.interrupted else "")
        lines.append(fold(f"{r.target:<32} {status:<28} {r.examples:>9} {r.seconds:>8.1f}  {groups}", width, len(head)))
    return "\n".join(lines)


def causes_cell(causes: list[Cause], groups: int) -> str:
    """``2 root causes (13 groups): #33579, new``: what a summary line says of a target's findings."""
    return f"{len(causes)} root cause(s) ({groups} groups): " + ", ".join(c.label for c in causes)


def row_width_text(context_len: int, extra: int, width: int) -> str:
    """How a story states a row's width: ``context_len C + extra E = W``, saying so when W is page-aligned past it."""
    text = f"context_len {context_len} + extra {extra}"
    return f"{text} = {width}" if width == context_len + extra else f"{text}, page-aligned = {width}"
