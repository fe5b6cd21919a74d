"""The bounded proof of the tables checked on their own: each one's closed form over every configuration swept.

A table with a closed form (``Table.closed_form``: its width and the
furthest end its accesses reach, per configuration) is proved over the
same configurations as the sizing (``Prover.configurations``), each at every
residue of its context length mod the allocator page, near the witnesses'
context length: a configuration breaks the reach's property (a write's
``write-within-row``, a published length's ``read-within-row``) where the
reach passes the width.  Each group's worst configuration is a witness,
replayed as a table case through the verdict pipeline, so a closed form
that claims more than the table's own accesses show is said, never
reported as found.  The sweep calls Python per configuration: a space
with more than ``MAX_CONFIGURATIONS`` is refused for a table, named in
the output, never skipped in silence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fuzz.findings.kinds import Outcome, Property, Signature, group_name
from fuzz.findings.model import Finding
from fuzz.tables import Table, tables
from fuzz.tables.case import TableCase
from fuzz.tables.checks import outcome_of
from fuzz.tables.declared import Reach
from fuzz.targets.base import Target
from fuzz.verdict import PIPELINE

from .proof import Prover

MAX_CONFIGURATIONS = 5_000_000  # per table and run: about a minute of closed-form calls


@dataclass
class TableGroup:
    """One group of a table's proof: how many configurations break it, the worst overshoot, its witness."""

    signature: Signature
    configurations: int = 0
    worst: int = 0
    worst_case: tuple[Any, Reach] | None = None
    witness: Finding | None = None  # the worst case replayed (None: the table's own accesses do not show it)


@dataclass
class TableProof:
    table: str
    configurations: int = 0
    seconds: float = 0.0
    groups: dict[Signature, TableGroup] = field(default_factory=dict)
    refused: str | None = None  # why it was not proved (the space is too large for its closed form)
    over: str = "every residue of context_len mod the allocator page"  # what the configurations cover

    def lines(self) -> list[str]:
        """What ``prove`` prints of it."""
        if self.refused:
            return [f"table {self.table}: not proved: {self.refused}"]
        head = (
            f"table {self.table}: checked {self.configurations:,} configurations in {self.seconds:.1f}s "
            f"(its closed form, {self.over})"
        )
        if not self.groups:
            return [head, f"  no configuration of the space reaches past a part of {self.table}"]
        out = [head + ", by bug group:"]
        for g in sorted(self.groups.values(), key=lambda g: g.signature):
            shown = "" if g.witness is not None else "  (its witness passes: the closed form disagrees with the table)"
            out.append(f"  {g.signature!s:<40} {g.configurations:>12,}  worst {g.worst}{shown}")
        return out

    @property
    def witnesses(self) -> list[Finding]:
        return [g.witness for g in sorted(self.groups.values(), key=lambda g: g.signature) if g.witness is not None]


def prove_table(target: Target, t: Table, prover: Prover) -> TableProof:
    """``t``'s closed form over the space of ``prover`` (``target``'s, see the module docstring)."""
    proof = TableProof(t.name)
    if t.sweep is not None:
        return _swept(target, t, prover, proof)
    size = prover.count()
    if size > MAX_CONFIGURATIONS:
        proof.refused = (
            f"the {prover.space} space has {size:,} configurations, past {MAX_CONFIGURATIONS:,} (try --space small)"
        )
        return proof
    assert t.closed_form is not None and t.group is not None
    started = time.monotonic()
    by_group: dict[tuple[Property, str, Outcome], TableGroup] = {}
    for config in prover.configurations():
        reach = t.closed_form(target, config)
        if reach is None:  # a configuration the table is not judged on: neither checked nor counted
            continue
        proof.configurations += 1
        if reach.end <= reach.width:
            continue
        if reach.prop not in t.proved:  # a closed form answering for a property the table says it does not decide
            raise ValueError(f"table {t.name}'s closed form answers for {reach.prop}, not one of its proved")
        key = (reach.prop, t.group(config), outcome_of(reach.prop, reach.stopped_by))  # the group run names
        if key not in by_group:
            sig = Signature(reach.prop, group_name(key[1], t.name), key[2])
            by_group[key] = proof.groups.setdefault(sig, TableGroup(sig))
        g = by_group[key]
        g.configurations += 1
        if reach.end - reach.width > g.worst:
            g.worst, g.worst_case = reach.end - reach.width, (config, reach)
    if not proof.configurations:
        proof.refused = f"no configuration of the {prover.space} space is one it judges"
        return proof
    _witnesses(target, t, proof)
    proof.seconds = time.monotonic() - started
    return proof


def _swept(target: Target, t: Table, prover: Prover, proof: TableProof) -> TableProof:
    """``prove_table`` by the table's own sweep of the space (``Table.sweep``): the same groups, witnesses and lines."""
    assert t.sweep is not None
    started = time.monotonic()
    swept = t.sweep(target, prover)
    if swept.refused is not None:
        proof.refused = swept.refused
        return proof
    proof.configurations, proof.over = swept.configurations, swept.over
    for s in swept.groups:
        if s.reach.prop not in t.proved:
            raise ValueError(f"table {t.name}'s sweep answers for {s.reach.prop}, not one of its proved")
        sig = Signature(s.prop, group_name(s.group, t.name), outcome_of(s.prop, s.reach.stopped_by))
        g = proof.groups.setdefault(sig, TableGroup(sig))
        g.configurations += s.configurations
        if s.worst > g.worst or g.worst_case is None:
            g.worst, g.worst_case = s.worst, (s.config, s.reach)
    _witnesses(target, t, proof)
    proof.seconds = time.monotonic() - started
    return proof


def _witnesses(target: Target, t: Table, proof: TableProof) -> None:
    """Each group's worst case replayed as a table case: its witness (None where the table's accesses disagree)."""
    for g in proof.groups.values():
        assert g.worst_case is not None
        config, reach = g.worst_case
        judged = PIPELINE.case(target, TableCase(t, config, reach.data), (reach.prop,), confirm=False)
        g.witness = next((f for f in judged.findings if f.signature == g.signature), None)


def prove_tables(target: Target, prover: Prover) -> list[TableProof]:
    """The proof of each table of ``target``'s engine that is checked on its own and has a closed form, over the
    space of ``prover`` (``target``'s)."""
    return [
        prove_table(target, t, prover)
        for t in tables()
        if t.engine == target.engine and t.hunted and t.closed_form is not None and t.refused_on(target) is None
    ]
