"""Witnesses: a concrete configuration and decode case per group that reaches its worst value, and ``confirm``.

The sweep knows a group's worst row of a block in closed form; these
functions turn it into a decode scenario the step-by-step model can run
(a context length near ``WITNESS_CONTEXT_LEN`` with the worst residue, the
longest committed length, the worst device lag) and wrap it as a decode
``Finding`` whose violation states the closed form's claim.  ``confirm``
replays each witness on the step-by-step model (``fuzz.engines.sglang.decode.engine``, grouped
by regime as the sweep is, without ``run``'s DCP cause attribution): the same
group must come back with the same number, and the model's account then
becomes the finding's violation.  ``witness_block`` prints a witness
the way every command prints a finding.
"""

from __future__ import annotations

from typing import Any

from allocator_model import closed_form as cf
from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.decode.check import DecodeCase
from fuzz.engines.sglang.groups import scenario_of
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.model import Finding, Violation
from fuzz.findings.render import counterexample_block
from fuzz.targets.base import Target
from fuzz.verdict import PIPELINE

from .result import Group, ProveResult

WITNESS_CONTEXT_LEN = 4096  # witnesses use a context length near this
UNCHECKED = (Property.SIZING_RAISED, Property.UNPROVEN)  # groups the step-by-step model cannot confirm

Witness = tuple[dict[str, Any], dict[str, Any]]  # (config in SGLang names, DecodeScenario.to_dict())


def witness_config(g: cf.LaunchGrid, i: int, page: int, residue: int, overlap: bool) -> dict[str, Any]:
    """Launch configuration ``i`` of ``g`` with a context length of ``residue`` mod the allocator page."""
    pages = max(2, -(-WITNESS_CONTEXT_LEN // page))
    return {"context_len": pages * page + residue, "enable_overlap": overlap, **g.config_kwargs(i)}


def _runtime_steps(g: cf.LaunchGrid, rows: cf.DecodeRows, r: int) -> int | None:
    return int(rows.num_steps[r]) if bool(g.adaptive[rows.config[r]]) else None


def _case(committed: int, steps: int | None, lag: int) -> dict[str, Any]:
    return {"committed_len": committed, "num_steps": steps, "prior": None, "device_lag": lag}


def write_witness(g: cf.LaunchGrid, rows: cf.DecodeRows, r: int, gap: int, overlap: bool) -> Witness:
    """Row ``r`` at its worst residue of C, at the longest committed length.

    An unaligned row (W = C + extra) is worst where rounding adds P - 1
    (c + R = 1 mod P); a page-aligned one (W = ceil_P(C + extra), SGLang
    main) where it has no slack (C + extra = 0 mod P); see
    ``closed_form.worst_write_overshoot``.
    """
    page, reserve, align = int(rows.alloc_page[r]), int(rows.reserve[r]), int(rows.row_align[r])
    if align > 1:  # no slack: C + extra = 0 mod A
        config = witness_config(g, int(rows.config[r]), align, -int(rows.extra[r]) % align, overlap)
    else:
        config = witness_config(g, int(rows.config[r]), page, (1 - reserve + gap) % page, overlap)
    return config, _case(config["context_len"] - gap, _runtime_steps(g, rows, r), 0)


def draft_witness(
    g: cf.LaunchGrid, rows: cf.DecodeRows, r: int, gap: int, overlap: bool, committed: int, lag: int
) -> Witness:
    """Row ``r`` at the longest committed length with the worst page offset (``committed`` mod P), lag ``lag``."""
    page = int(rows.alloc_page[r])
    config = witness_config(g, int(rows.config[r]), page, 0, overlap)
    bound = config["context_len"] - gap
    c = bound - (bound - committed) % page
    return config, _case(c, _runtime_steps(g, rows, r), lag)


def config_witness(g: cf.LaunchGrid, i: int, page: int) -> Witness:
    """A whole configuration (sizing raised, or an unreadable growth rule): any short case of it."""
    return witness_config(g, i, page, 0, False), _case(1, None, 0)


def _claim(sig: Signature, value: int, error: str | None) -> str:
    """What the closed form says about the witness (replaced by the model's account once confirmed)."""
    if sig.prop is Property.WRITE_WITHIN_ROW:
        return f"closed form: the worst write ends {value} columns past the row end"
    if sig.prop is SGLangProperty.DRAFTS_WITHIN_ALLOCATION:
        return f"closed form: the worst draft footprint ends {value} columns past kv_allocated_len"
    if sig.prop is SGLangProperty.PAGE_ALIGNED_GROWTH:
        return f"closed form: growth is not page-aligned, up to {value} columns of a page tail unrecorded"
    if sig.prop is Property.SIZING_RAISED:
        return f"a sizing function raised: {error}" if error else "a sizing function raised"
    return "the growth rule is neither page-rounded (ceil_P(c + R)) nor exact (c + R)"


def witness_finding(
    target: str, sig: Signature, witness: Witness, value: int, found_at: int = 0, error: str | None = None
) -> Finding:
    """The witness as a decode finding of group ``sig`` on ``target``."""
    config, case = witness
    cfg = ServingConfig.from_dict(config)
    scenario = DecodeScenario.from_dict(cfg, case)
    # The group's whole identity, outcome included: two groups that differ only in how SGLang reacts
    # (a silent spill, the same spill stopped by a guard) are two witnesses and two case files.
    violation = Violation(sig.prop, sig.group, _claim(sig, value, error), [], value, outcome=sig.outcome)
    assert violation.signature == sig, (violation.signature, sig)
    return Finding(
        SGLangCase.DECODE, target, violation, cfg, scenario.to_dict(), found_at, reached_by=scenario.reached_by()
    )


def decode_scenario(f: Finding) -> DecodeScenario:
    return scenario_of(f)


def confirm(target: Target, result: ProveResult) -> None:
    """Replay each group's witness on the step-by-step model: same group, same worst value."""
    for grp in result.groups.values():
        prop = grp.signature.prop
        if prop in UNCHECKED:
            continue
        # Judged like ``run``'s cases: the sweep regroups a DCP case that fails without DCP too (``attributed``);
        # and on SGLang's own write path, what it did with the worst case.
        found = PIPELINE.case(target, DecodeCase(decode_scenario(grp.witness)), (prop,)).findings
        same = [f for f in found if f.signature == grp.signature]
        if not same:
            got = ", ".join(str(f.signature) for f in found) or "no violation"
            grp.mismatch = f"the step-by-step model reports {got} for the witness"
            continue
        v = same[0].violation
        grp.witness.violation, grp.witness.confirmed, grp.witness.confirmation = (
            v,
            same[0].confirmed,
            same[0].confirmation,
        )
        grp.confirmed = True
        if prop is not SGLangProperty.PAGE_ALIGNED_GROWTH and v.overshoot != grp.worst:
            grp.mismatch = f"closed form says {grp.worst} columns, the step-by-step model {v.overshoot}"


def witness_block(grp: Group, width: int | None = None) -> str:
    """The WITNESS block: the shared counterexample block (at ``width``, as ``counterexample_block`` folds it), and
    the disagreement if the model disagreed."""
    block = counterexample_block(grp.witness, word="WITNESS", width=width)
    return block + (f"\n  MISMATCH: {grp.mismatch}" if grp.mismatch else "")
