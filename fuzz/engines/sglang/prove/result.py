"""What a sweep found: ``Group`` (one bug group and its witness ``Finding``) and ``ProveResult`` (a target's sweep).

A group is keyed on its ``Signature`` (property / regime, the same ones a
fuzz campaign reports; ``sizing-raised``/``unproven`` for what could not be
checked).  Its witness is the group's worst configuration as an ordinary
decode ``Finding``: the renderer prints it, the case file stores it, and
each target's report entry has the shared shape
(``fuzz.findings.report``), every finding with prove's counts beside it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from allocator_model.pools import KVPool
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Finding
from fuzz.findings.report import Status

from .space import Space

NO_VIOLATION = "no violation in the bounded space"


@dataclass
class Group:
    """Configurations of one bug group that break their property, and the worst of them."""

    signature: Signature
    witness: Finding  # the worst configuration, as a decode case (case = DecodeScenario.to_dict())
    configurations: int = 0
    worst: int | None = None  # columns past the end (write-within-row, drafts) / unrecorded tail (growth)
    first_at: int | None = None  # configurations swept before the first one of this group
    confirmed: bool = False  # the step-by-step model put the witness in this group (its account is the violation)
    mismatch: str | None = None  # ... or disagreed with the closed form

    def to_json(self) -> dict[str, Any]:
        """``Finding.to_json`` with prove's counts beside it."""
        return {
            **self.witness.to_json(),
            "configurations": self.configurations,
            "worst": self.worst,
            "first_at": self.first_at,
            "mismatch": self.mismatch,
        }


@dataclass
class TraceStats:
    """What tracing did over a sweep (``traced_rows``; ``prove`` prints it)."""

    blocks: int = 0
    configs_traced: int = 0
    configs_called: int = 0  # called one by one: raised, untraceable, or the block diverged
    paths: int = 0
    diverged: list[str] = field(default_factory=list)  # blocks whose sample disagreed (then called one by one)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ProveResult:
    """One target's sweep: what was checked, the groups found, the min-slack heat."""

    target: str
    space: Space
    method: str
    launch_configurations: int = 0
    decode_shapes: int = 0  # launch configurations x run-time shapes
    configurations: int = 0  # x overlap on/off x residues of C mod the allocator page
    groups: dict[Signature, Group] = field(default_factory=dict)
    sizing_calls: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped_early: bool = False
    first_error: str | None = None
    # min slack (row width - worst write end) per (page_size, attn_dcp_size), write-within-row
    heat: dict[tuple[int, int], int] = field(default_factory=dict)
    pool_heat: dict[KVPool, dict[tuple[int, int], int]] = field(default_factory=dict)  # the same, per kind of pool
    trace: TraceStats | None = None  # a traced sweep of a real target (``traced_rows``)

    @property
    def violations(self) -> int:
        return sum(g.configurations for g in self.groups.values())

    @property
    def status(self) -> Status:
        return Status.COUNTEREXAMPLE if self.groups else Status.CLEAN

    def sorted_groups(self) -> list[Group]:
        return [self.groups[s] for s in sorted(self.groups)]

    def to_json(self) -> dict[str, Any]:
        """The target's entry of the shared report: target, status, seconds, findings, and prove's counts."""
        return {
            "target": self.target,
            "status": self.status.value,
            "seconds": round(self.seconds, 3),
            "space": self.space.name,
            "method": self.method,
            "launch_configurations": self.launch_configurations,
            "decode_shapes": self.decode_shapes,
            "configurations": self.configurations,
            "violations": self.violations,
            "sizing_calls": self.sizing_calls,
            **({"trace": self.trace.to_json()} if self.trace else {}),
            "findings": [g.to_json() for g in self.sorted_groups()],
        }


def merge_results(parts: list[ProveResult]) -> ProveResult:
    """One sweep from sweeps of disjoint parts of a space (shards): counts summed, each group's worst kept.

    A group's count is the sum and its worst the greatest; its witness is a
    configuration reaching that worst (the first part's on a tie, so it may
    be another configuration than one process would pick, with the same
    worst); ``first_at`` is unknown (None: each part counted only its own
    configurations).  The heat is the least slack per cell; call counts and
    tracing figures add up (a block traced in two parts counts twice).
    """
    first = parts[0]
    out = ProveResult(first.target, first.space, first.method)
    if any(p.trace is not None for p in parts):
        out.trace = TraceStats()
    for p in parts:
        out.launch_configurations += p.launch_configurations
        out.decode_shapes += p.decode_shapes
        out.configurations += p.configurations
        out.stopped_early |= p.stopped_early
        out.first_error = out.first_error or p.first_error
        for name, n in p.sizing_calls.items():
            out.sizing_calls[name] = out.sizing_calls.get(name, 0) + n
        for cell, slack in p.heat.items():
            out.heat[cell] = min(slack, out.heat.get(cell, slack))
        for kind, heat in p.pool_heat.items():
            mine = out.pool_heat.setdefault(kind, {})
            for cell, slack in heat.items():
                mine[cell] = min(slack, mine.get(cell, slack))
        if p.trace is not None and out.trace is not None:
            out.trace.blocks += p.trace.blocks
            out.trace.configs_traced += p.trace.configs_traced
            out.trace.configs_called += p.trace.configs_called
            out.trace.paths += p.trace.paths
            out.trace.diverged += p.trace.diverged
        for sig, grp in p.groups.items():
            have = out.groups.get(sig)
            if have is None:
                first_at = grp.first_at if len(parts) == 1 else None
                out.groups[sig] = Group(sig, grp.witness, grp.configurations, grp.worst, first_at)
                continue
            have.configurations += grp.configurations
            if grp.worst is not None and (have.worst is None or grp.worst > have.worst):
                have.worst, have.witness = grp.worst, grp.witness
    return out
