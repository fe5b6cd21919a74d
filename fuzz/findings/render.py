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

import json
from collections.abc import Iterable
from typing import Any, Protocol

from allocator_model.config import ServingConfig
from fuzz.engines.sglang.groups import serving_config

from .cause import Cause
from .kinds import CaseKind, Scope
from .launch import launch_line
from .model import Finding


def config_line(cfg: ServingConfig, kind: CaseKind = CaseKind.DECODE) -> str:
    """The configuration in SGLang argument names; a lifecycle run also depends on its row count."""
    if kind is CaseKind.LIFECYCLE:
        return f"{cfg.short()} max_running_requests={cfg.max_running_requests}"
    return cfg.short()


def format_step(step: Any) -> str:
    """``op key=value ...``, values as JSON: how a lifecycle step prints."""
    if not isinstance(step, dict):
        return json.dumps(step)
    return " ".join([str(step.get("op"))] + [f"{k}={json.dumps(v)}" for k, v in step.items() if k != "op"])


def case_lines(kind: CaseKind, case: dict[str, Any]) -> list[str]:
    """The case as the block shows it: a decode or fidelity case as one JSON line, a step script numbered."""
    if kind is CaseKind.LIFECYCLE:
        return [f"{i:>3}. {format_step(step)}" for i, step in enumerate(case.get("steps", []), 1)]
    return [f"case:   {json.dumps(case, sort_keys=True)}"]


def _suffix(f: Finding) -> str:
    if f.kind is CaseKind.LIFECYCLE:
        return f" (lifecycle, {len(f.case.get('steps', []))} steps)"
    if f.kind is CaseKind.FIDELITY and f.revision is not None:
        return f" (model {f.revision.name})"
    return ""


def counterexample_block(f: Finding, word: str = "COUNTEREXAMPLE") -> str:
    """The block every command prints for a finding; ``word`` is WITNESS for prove's worst configurations."""
    lines = [f"{word} {f.signature} on {f.target}{_suffix(f)}", f"  config: {config_line(serving_config(f), f.kind)}"]
    lines.append(f"  launch: {launch_line(serving_config(f))}")
    lines += [f"  {line}" for line in case_lines(f.kind, f.case)]
    if f.reached_by:
        lines.append(f"  reached: {f.reached_by}")
    lines += [f"  {line}" for line in f.violation.describe().splitlines()]
    if f.signature.prop.scope is Scope.SAMPLED:
        lines.append(f"  scope: sampled only: {f.signature.prop.value} lies outside the bounded proof")
    if f.sglang:
        lines.append(f"  sglang: {f.sglang}")
    if f.case_path:
        lines.append(f"repro: {f.repro}")
    return "\n".join(lines)


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
