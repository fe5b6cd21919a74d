"""The one renderer: a finding's COUNTEREXAMPLE block, its repro line, and the campaign summary table.

    COUNTEREXAMPLE write-within-row/dcp>1 on reference@sglang-0.5.18
      config: context_len=8 page_size=1 attn_dcp_size=2 ...
      case:   {"committed_len": 4, ...}
      write-within-row: request 1 (row 1) wrote columns [4, 22) of a row 21 wide: ...
    repro: python -m fuzz repro fuzz-cases/reference-sglang-0.5.18--write-within-row-dcp-1.json

The case lines depend on the case kind (a decode case as JSON, a lifecycle
case as its numbered step script); everything else is the same for every
command.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from fuzz.tables.declared import TABLE_CASE, table

from .cause import Cause
from .kinds import Scope, case_type
from .model import Finding


def counterexample_block(f: Finding, word: str = "COUNTEREXAMPLE") -> str:
    """The block every command prints for a finding; ``word`` is WITNESS for prove's worst configurations."""
    from fuzz.engines import load

    how = case_type(f.kind)
    lines = [
        f"{word} {f.signature} on {f.target}{how.suffix(f.case, f.revision)}",
        f"  config: {how.config_line(f.config)}",
    ]
    launch = load(f.engine).launch_line(f.config)
    if launch is not None:
        lines.append(f"  launch: {launch}")
    lines += [f"  {line}" for line in how.lines(f.case)]
    if f.reached_by:
        lines.append(f"  reached: {f.reached_by}")
    lines += [f"  {line}" for line in f.violation.describe().splitlines()]
    if sampled_only(f):
        lines.append(f"  scope: sampled only: {f.signature.prop.value} lies outside the bounded proof")
    if f.confirmation:
        lines.append(f"  {f.engine}: {f.confirmation}")
    if f.case_path:
        lines.append(f"repro: {f.repro}")
    return "\n".join(lines)


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


def summary_table(results: Iterable[Summarized]) -> str:
    """One line per target: status, examples, seconds and what was found: its root causes (each group is
    listed under its cause above), else the groups."""
    lines = ["", f"{'target':<32} {'status':<28} {'examples':>9} {'seconds':>8}  found"]
    for r in results:
        groups = ", ".join(str(f.signature) for f in r.findings) or "-"
        if r.causes:
            groups = causes_cell(r.causes, len(r.findings))
        status = str(r.status) + (" (interrupted)" if r.interrupted else "")
        lines.append(f"{r.target:<32} {status:<28} {r.examples:>9} {r.seconds:>8.1f}  {groups}")
    return "\n".join(lines)


def causes_cell(causes: list[Cause], groups: int) -> str:
    """``2 root causes (13 groups): #33579, new``: what a summary line says of a target's findings."""
    return f"{len(causes)} root cause(s) ({groups} groups): " + ", ".join(c.label for c in causes)


def row_width_text(context_len: int, extra: int, width: int) -> str:
    """How a story states a row's width: ``context_len C + extra E = W``, saying so when W is page-aligned past it."""
    text = f"context_len {context_len} + extra {extra}"
    return f"{text} = {width}" if width == context_len + extra else f"{text}, page-aligned = {width}"
