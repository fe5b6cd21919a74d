"""Lifecycle step scripts replayed: the story of a case, the first violation of a run, shortening, case files.

A step script is what a lifecycle case file stores; replaying it from a
fresh batch prints every write, where a spill landed and whose columns it
overwrote, what each release freed and leaked, and each invariant's first
violation with its step.
"""

from __future__ import annotations

from typing import Any

from allocator_model.allocator import Unrunnable
from allocator_model.batch import RunningBatch, StepError
from allocator_model.config import ServingConfig
from allocator_model.requests import Op
from fuzz.engines.sglang.cases import SGLangCase, lifecycle_config_line
from fuzz.engines.sglang.decode.replay import ReplayableCase, replayable_case
from fuzz.findings.casefile import CaseFileError, Replay, verdict
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Violation
from fuzz.targets.base import Target
from fuzz.verdict import PIPELINE

from .invariants import INVARIANTS
from .script import CaseRun, LifecycleCase, run_steps


def run_case(target: Target, case: LifecycleCase, checks=INVARIANTS, *, story: bool = True) -> CaseRun:
    """``script.run_steps``, each violation named for its cause (the verdict pipeline's ``attribute``, on the
    script up to its step)."""
    run = run_steps(target, case, checks, story=story)
    run.violations = [(i, PIPELINE.attribute(target, case.upto(i), v)) for i, v in run.violations]
    return run


def first_violation(
    target: Target, cfg: ServingConfig, steps: list, checks=INVARIANTS, batch_class: type[RunningBatch] = RunningBatch
) -> tuple[int, Violation | None]:
    """The step and the violation a run of ``steps`` stops at, as the machine would (0, None: none, or invalid)."""
    try:
        found = run_case(target, LifecycleCase(cfg, steps, batch_class), checks, story=False).violations
    except StepError:
        return 0, None
    return found[0] if found else (0, None)


def _without(steps: list[dict], i: int) -> list[dict]:
    """``steps`` less step i; less an admit, also every step of that request, later rids renumbered."""
    if Op.of(steps[i]) is not Op.ADMIT:
        return steps[:i] + steps[i + 1 :]
    gone = sum(1 for s in steps[:i] if Op.of(s) is Op.ADMIT)  # rids are numbered in admission order

    def rid(r: int) -> int:
        return r - (r > gone)

    out = []
    for s in steps[:i] + steps[i + 1 :]:
        if "rid" in s:
            if s["rid"] == gone:
                continue
            s = {**s, "rid": rid(s["rid"])}
        elif Op.of(s) is Op.DECODE:
            s = {**s, "accepted": [[rid(r), k] for r, k in s["accepted"] if r != gone]}
        out.append(s)
    return out


def shorten(
    target: Target,
    cfg: ServingConfig,
    steps: list[dict],
    signature: Signature,
    checks=INVARIANTS,
    batch_class: type[RunningBatch] = RunningBatch,
) -> list[dict]:
    """Drop steps (and whole requests) Hypothesis' shrinker left in, while the run still stops at ``signature``.

    The shrinker works on the random choices, where deleting an admission
    shifts which request every later choice picks; here a request goes with
    all its steps, so short scripts come out shorter still.  Passes repeat
    until one removes nothing (a removal can make an earlier one possible).
    """
    at, v = first_violation(target, cfg, steps, checks, batch_class)
    if v is None or v.signature != signature:
        return steps
    best = steps[:at]
    while True:
        before = len(best)
        for span in (2, 1):  # pairs first: a retract and the prefill that follows only go together
            i = len(best) - span
            while i >= 0:
                candidate: list[dict] | None = best
                for _ in range(span):  # an admission takes its request's steps along: the list may run out
                    candidate = _without(candidate, i) if candidate is not None and i < len(candidate) else None
                at, v = first_violation(target, cfg, candidate, checks, batch_class) if candidate else (0, None)
                if candidate is not None and v is not None and v.signature == signature:
                    best = candidate[:at]
                i = min(i, len(best) - span + 1) - 1
        if len(best) == before:
            return best


def run_replayable(case: ReplayableCase, where: str, *, story: bool = True) -> CaseRun:
    """A validated lifecycle case's script run on its target (``run_case``), or CaseFileError (one line) where
    it cannot run there: a deployment the release's own allocator takes no such page of, an invalid step."""
    assert case.steps is not None  # a lifecycle case
    try:
        return run_case(case.target, LifecycleCase(case.config, case.steps), story=story)
    except Unrunnable as e:
        raise CaseFileError(f"{where}: not a deployment {case.target.spec} runs: {e}") from None
    except StepError as e:
        raise CaseFileError(f"{where}: not a valid step script for {case.target.spec}: {e}") from None


def replay_lifecycle(doc: dict[str, Any], where: str, named: str | None = None) -> Replay:
    case = replayable_case(SGLangCase.LIFECYCLE, doc, where, named)
    run = run_replayable(case, where)
    target, steps = case.target, case.steps or []
    prop = doc["property"]
    lines = [
        f"target: {target.spec}",
        f"config: {lifecycle_config_line(case.config)}",
        f"steps ({len(steps)}):",
    ] + run.lines
    same = [(i, v) for i, v in run.violations if v.prop == prop]
    also = [f"also fails {v.signature} at step {i}: {v.headline}" for i, v in run.violations if v.prop != prop]
    at, failed = same[0] if same else (0, None)
    return verdict(lines, prop, target.spec, failed, f" at step {at}", also)
