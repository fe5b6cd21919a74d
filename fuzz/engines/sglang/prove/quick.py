"""The bounded proof as the first stage of every quick verdict (``run``, the pytest plugin, the action's steps).

Sampling finds bugs; the proof says there are none in its space.  A quick
verdict that only sampled passed sizing bugs ``prove`` finds in seconds (a
tree footprint rounded down at page 2 x DCP 2, EAGLE (4,16,64): no covering
cell sits at that corner).  So each quick verdict first proves the target's
sizing arithmetic over ``QUICK_SPACE`` (traced on a real target: its functions
run once per path; vectorized on the model) and hands each group's worst
witness to the decode checks as one more covering case; Hypothesis then
searches what the bounded space cannot hold (longer rows, other lengths,
the write path's steps).  Invariant: whatever ``prove --space small`` reports
for the sizing arithmetic, the quick verdict reports too.

``--pin`` narrows a campaign to part of the space, the proof does not: a
pinned campaign skips the stage and says so (``Proved.skipped``), never
judging a pinned run by configurations it excluded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fuzz.common.shards import WHOLE, Shard
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Finding
from fuzz.targets.base import Target

from .request import request
from .result import Group
from .space import SPACES
from .sweep import prove

QUICK_SPACE = "small"  # prove --space small: seconds on a real release, every regime


@dataclass(frozen=True)
class Proved:
    """What a quick verdict proved before it sampled (this worker's share of the blocks)."""

    space: str
    configurations: int
    seconds: float
    groups: tuple[Signature, ...]
    skipped: str | None = None  # why the stage did not run (``--pin``)

    def stats(self) -> dict[str, Any]:
        """The campaign report's fields (summed over ``--jobs`` workers, each proving its share)."""
        return {
            "proof_space": self.space,
            "proved_configurations": self.configurations,
            "proof_seconds": round(self.seconds, 3),
            "proof_groups": len(self.groups),
            "proof_skipped": self.skipped,
        }


def proved_line(stats: dict[str, Any]) -> str | None:
    """The line a verdict prints of its proof stage (None: the campaign had none)."""
    if "proof_space" not in stats:
        return None
    if stats.get("proof_skipped"):
        return f"   proved: nothing ({stats['proof_skipped']}); sampled: everything below"
    return (
        f"   proved: the sizing arithmetic of every configuration of the {stats['proof_space']} space "
        f"({stats['proved_configurations']:,} configurations, {stats['proof_seconds']:.1f}s, "
        f"{stats['proof_groups']} group(s)); sampled by Hypothesis: the rest (other lengths and shapes, "
        "each step's writes on the row)"
    )


def quick_proof(target: Target, part: Shard = WHOLE, pins: dict[str, Any] | None = None) -> tuple[Proved, list[Group]]:
    """Prove ``target``'s sizing over ``QUICK_SPACE`` (``part``: this worker's share of the blocks)."""
    if pins:
        return Proved(QUICK_SPACE, 0, 0.0, (), skipped=f"--pin {', '.join(sorted(pins))} narrows the space"), []
    started = time.monotonic()
    result = prove(target, request(target, SPACES[QUICK_SPACE], blocks_part=part))
    groups = result.sorted_groups()
    proved = Proved(QUICK_SPACE, result.configurations, time.monotonic() - started, tuple(g.signature for g in groups))
    return proved, groups


def proof_stage(
    target: Target, cover_part: tuple[int, int], pins: dict[str, Any]
) -> tuple[dict[str, Any], list[Finding]]:
    """``ProofStage`` (``fuzz.engines.sglang.decode.engine``): worker k of K proves the k-th K-th of the blocks;
    each group's witness."""
    k, parts = cover_part
    proved, groups = quick_proof(target, Shard(k + 1, parts), pins)
    return proved.stats(), [g.witness for g in groups]
