"""Replaying a decode case file: the same scenario on the same target, the same story."""

from __future__ import annotations

from typing import Any

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.scenario import DecodeScenario, scenario_problem
from fuzz.findings.casefile import CaseFileError, Replay, verdict
from fuzz.findings.kinds import Property
from fuzz.targets.base import TargetError
from fuzz.targets.resolve import resolve_case_target

from .engine import check_scenario
from .sglang import confirmation, has_sglang_path, mismatch, on_sglang


def decode_scenario_of(doc: dict[str, Any], where: str) -> DecodeScenario:
    try:
        cfg = ServingConfig.from_dict(doc["config"])
        return DecodeScenario.from_dict(cfg, doc["case"])
    except (ConfigError, TypeError) as e:
        raise CaseFileError(f"{where}: {e}") from None


def replay_decode(doc: dict[str, Any], where: str, named: str | None = None) -> Replay:
    scenario = decode_scenario_of(doc, where)
    try:
        target = resolve_case_target(doc["target"], named)
    except TargetError as e:
        raise CaseFileError(f"{where}: {e}") from None
    problem = scenario_problem(scenario, target.revision)
    if problem:
        raise CaseFileError(f"{where}: not a valid case for {target.spec}: {problem}")
    model, found = check_scenario(target, scenario)
    lines = [
        f"target: {target.spec}",
        f"config: {scenario.config.short()}",
        f"case:   {scenario.describe()}",
        f"reached: {scenario.reached_by()}",
    ]
    prop = Property(doc["property"])
    same = [v for v in found if v.prop == prop]
    if has_sglang_path(target):  # the case on SGLang's own write path too: a failure there is the failure
        check = on_sglang(target, scenario, trace=True)
        if model is not None:
            check.mismatch = mismatch(model, check.run, f"sglang {check.version} ({check.run.sglang.origin})")
        there = [v for v in check.violations if v.prop == prop]
        if check.mismatch is not None and prop is Property.MODEL_MISMATCH:
            there = [check.mismatch]
        if same:
            lines.append(f"sglang: {confirmation(check, same[0])[1]}")
        elif there:
            lines.append(
                f"sglang: found on sglang {check.version}'s own write path ({check.chain()}); the model's run passes"
            )
            same = there
        found = found + [v for v in check.violations if v.prop != prop]
    also = [f"also fails {v.signature}: {v.headline}" for v in found if v.prop != prop]
    return verdict(lines, doc["property"], target.spec, same[0] if same else None, also=also)
