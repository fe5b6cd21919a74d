"""Replaying a case file: the one validation every replay of a decode or lifecycle case shares, and the decode replay.

``replayable_case`` is what a case document must be before anything of it
runs, for ``repro``, the emitted regression tests, ``advisory`` and
``merge``'s causes alike (one function, so no command replays a case another
refuses): within the replay budget (``fuzz.common.bounds``, judged from the
document before any target is resolved), a configuration the model accepts,
a target resolved without running code the case names, a deployment the
release launches (``Revision.refuses``: what its ``server_args`` refuse at
boot) and, for a decode case, a state the scheduler can reach
(``scenario_problem``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.scenario import DecodeScenario, scenario_problem
from fuzz.common.bounds import lifecycle_cost_problem
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.casefile import CaseFileError, Replay, verdict
from fuzz.findings.kinds import CaseKind, Property
from fuzz.targets.base import TargetError
from fuzz.targets.resolve import resolve_case_target
from fuzz.verdict import PIPELINE

from ..own_path import has_sglang_path, mismatch, on_sglang
from .check import DecodeCase

REPLAYABLE = (SGLangCase.DECODE, SGLangCase.LIFECYCLE)  # the kinds ``replayable_case`` takes (fidelity has its own)


@dataclass(frozen=True)
class ReplayableCase:
    """A decode, lifecycle or table case as every replay takes it: each value checked (``replayable_case``)."""

    kind: CaseKind
    prop: Property
    target: SGLangTarget
    config: ServingConfig
    scenario: DecodeScenario | None  # a decode case's state (None for a lifecycle case)
    steps: list[Any] | None  # a lifecycle case's step script (None for a decode case)
    table: Any = None  # a table case's ``fuzz.tables.case.TableCase`` (its own validation: ``advisory``'s)


def replayable_case(kind: CaseKind, doc: dict[str, Any], where: str, named: str | None = None) -> ReplayableCase:
    """``doc``, a document ``validate_document`` accepted (``load_document`` and ``replay_document`` check it),
    as a case of ``kind`` (its replayer's: a document's own ``kind`` chose the replayer) to replay on ``named``
    (else on the target it names), or CaseFileError (one line).

    Checked in this order, the cheap before the costly, so a hostile case is
    refused before a wheel is fetched or a step runs: the replay budget of a lifecycle script
    (``lifecycle_cost_problem``: the bound the lifecycle machine writes cases
    within); the configuration (``ServingConfig``, whose limits bound a
    decode case's cost); the target (``resolve_case_target``); the release's
    launch rules (``Revision.refuses``), then, for a decode case, the
    scheduler's (``scenario_problem``).  A case that passes all of them is one
    the release could be in; what it does there is the replay's to say.
    """
    if kind not in REPLAYABLE:
        raise CaseFileError(f"{where}: a {kind.value} case is replayed by its own command, not here")
    steps = doc["case"].get("steps") if kind is SGLangCase.LIFECYCLE and isinstance(doc["case"], dict) else None
    if kind is SGLangCase.LIFECYCLE and not isinstance(steps, list):
        raise CaseFileError(f'{where}: a lifecycle case needs "case": {{"steps": [...]}}')
    too_costly = lifecycle_cost_problem(doc["config"], doc["case"]) if kind is SGLangCase.LIFECYCLE else None
    if too_costly:
        raise CaseFileError(f"{where}: {too_costly}")
    try:
        cfg = ServingConfig.from_dict(doc["config"])
        scenario = DecodeScenario.from_dict(cfg, doc["case"]) if kind is SGLangCase.DECODE else None
    except (ConfigError, TypeError) as e:
        raise CaseFileError(f"{where}: {e}") from None
    try:
        target = resolve_case_target(doc["target"], named, kind)
    except TargetError as e:
        raise CaseFileError(f"{where}: {e}") from None
    refusal = target.revision.refuses(cfg)  # an algorithm, a kind of KV pool or a DCP size the release lacks
    if refusal is not None:
        raise CaseFileError(f"{where}: {target.spec} does not launch this configuration: {refusal}")
    problem = scenario_problem(scenario, target.revision) if scenario is not None else None
    if problem:
        raise CaseFileError(f"{where}: not a valid case for {target.spec}: {problem}")
    return ReplayableCase(kind, Property(doc["property"]), target, cfg, scenario, steps)


def replay_decode(doc: dict[str, Any], where: str, named: str | None = None) -> Replay:
    case = replayable_case(SGLangCase.DECODE, doc, where, named)
    target, scenario = case.target, case.scenario
    assert scenario is not None  # a decode case
    judged = PIPELINE.case(target, DecodeCase(scenario), confirm=False)
    model, found = judged.run, [f.violation for f in judged.findings]
    lines = [
        f"target: {target.spec}",
        f"config: {scenario.config.short()}",
        f"case:   {scenario.describe()}",
        f"reached: {scenario.reached_by()}",
    ]
    prop = case.prop
    same = [v for v in found if v.prop == prop]
    if has_sglang_path(target):  # the case on SGLang's own write path too: a failure there is the failure
        check = on_sglang(target, scenario, trace=True)
        if model is not None:
            check.mismatch = mismatch(model, check.run, f"sglang {check.version} ({check.run.sglang.origin})")
        there = [v for v in check.violations if v.prop == prop]
        if prop is Property.MODEL_MISMATCH:  # the write path's, then each checked table's builders' against the twin
            from ..fidelity.page_tables import mismatches

            there = ([check.mismatch] if check.mismatch is not None else []) + mismatches(target, scenario)
            wanted = doc.get("signature")
            there.sort(key=lambda v: str(v.signature) != wanted)  # the case's own group first
        if same:
            first = next(f for f in judged.findings if f.violation is same[0])
            lines.append(f"sglang: {PIPELINE.confirm(target, first, check=check).confirmation}")
        elif there and there[0] is not check.mismatch and prop is Property.MODEL_MISMATCH:
            lines.append(f"sglang: sglang {check.version}'s own {there[0].group} builders, executed, differ from the "
                         "model's twin")  # fmt: skip
            same = there
        elif there:
            lines.append(
                f"sglang: found on sglang {check.version}'s own write path ({check.chain()}); the model's run passes"
            )
            same = there
        found = found + [v for v in check.violations if v.prop != prop]
    also = [f"also fails {v.signature}: {v.headline}" for v in found if v.prop != prop]
    return verdict(lines, doc["property"], target.spec, same[0] if same else None, also=also)
