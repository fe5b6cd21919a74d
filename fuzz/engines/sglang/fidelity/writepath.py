"""The model's decode write path against SGLang's own, step by step, per kind of pool (``fidelity``, ``matrix``).

For each kind of KV pool the release builds, decode scenarios are drawn as
the covering set draws its cells (every algorithm the kind runs and no
speculation, in turn, overlap off and on in turn, lengths near the
scheduler's bound; ``strategies.space.decode_scenario``, walked by a
``random.Random`` seeded by the kind: the same scenarios on every run),
and each runs on both paths (``fuzz.engines.sglang.own_path.compared``) until ``steps``
decode steps have run on SGLang's code.  A step on which the runs differ
is a ``model-mismatch/decode_step`` finding (the first of the kind kept,
with its case); a deployment SGLang's kernels cannot run (a page size that
is not a power of two) is counted apart, never as agreement.
"""

from __future__ import annotations

import itertools
import random
import time
from dataclasses import dataclass, field
from typing import Any

from allocator_model.pools import KVPool
from fuzz.common.defaults import WRITE_PATH_STEPS
from fuzz.engines.sglang.decode.check import check_scenario, decode_finding
from fuzz.engines.sglang.own_path import compared
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.model import Finding
from strategies import space

from .cases import PreferringChooser

DEFAULT_STEPS = WRITE_PATH_STEPS  # decode steps per kind of pool on SGLang's code
DRAWS_PER_STEP = 20  # draws per wanted step before a kind's space counts as exhausted


@dataclass
class PathTally:
    """One kind of pool: decode steps run on SGLang's code, how many agreed with the model, per algorithm."""

    steps: int = 0
    agree: int = 0
    scenarios: int = 0
    unrunnable: int = 0  # scenarios SGLang's kernels cannot run (their page): not compared
    per_algorithm: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "agree": self.agree,
            "scenarios": self.scenarios,
            "unrunnable": self.unrunnable,
            "per_algorithm": self.per_algorithm,
            "seconds": round(self.seconds, 3),
        }

    def text(self) -> str:
        algorithms = ", ".join(f"{a} {n}" for a, n in self.per_algorithm.items())
        return f"{self.agree}/{self.steps} steps agree ({algorithms})"


def write_path_fidelity(
    target: SGLangTarget, steps: int = DEFAULT_STEPS, seed: int = 0
) -> tuple[dict[KVPool, PathTally], list[Finding]]:
    """Per kind, ``steps`` decode steps on SGLang's code held to the model's (see the module docstring)."""
    tallies: dict[KVPool, PathTally] = {}
    findings: list[Finding] = []
    revision = target.revision
    for kind, runs in revision.pool_algorithm_map().items():
        tally = tallies.setdefault(kind, PathTally())
        chooser = PreferringChooser(random.Random(f"kvrow-fuzz write path|{seed}|{kind.value}"))
        cells = itertools.cycle([(a, ov) for a in (None, *sorted(runs, key=str)) for ov in (False, True)])
        started, draws, mismatched = time.monotonic(), 0, False
        while tally.steps < steps and draws < DRAWS_PER_STEP * steps:
            draws += 1
            a, overlap = next(cells)
            pins = {"kv_pool": kind, "speculative_algorithm": a, "enable_overlap": overlap}
            scenario = space.decode_scenario(chooser, revision, pins=pins)
            if scenario is None:
                continue
            model, _ = check_scenario(target, scenario)
            check = compared(target, scenario, model)
            if check.run.skipped and "cannot run allocator page" in check.run.skipped:
                tally.unrunnable += 1
                continue
            n = len(check.run.writes)
            tally.scenarios += 1
            tally.steps += n
            name = "none" if a is None else str(a)
            tally.per_algorithm[name] = tally.per_algorithm.get(name, 0) + n
            if check.mismatch is None:
                tally.agree += n
            elif not mismatched:
                mismatched = True
                findings.append(decode_finding(target.spec, check.mismatch, scenario, tally.scenarios))
        tally.seconds = time.monotonic() - started
    return tallies, findings


__all__ = ["DEFAULT_STEPS", "PathTally", "write_path_fidelity"]
