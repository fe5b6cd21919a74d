"""Replaying a decode case file: the same scenario on the same target, the same story."""

from __future__ import annotations

from typing import Any

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.scenario import DecodeScenario, scenario_problem
from fuzz.findings.casefile import CaseFileError, Replay, verdict
from fuzz.targets.base import TargetError
from fuzz.targets.resolve import resolve_case_target

from .engine import check_scenario


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
    _, found = check_scenario(target, scenario)
    lines = [
        f"target: {target.spec}",
        f"config: {scenario.config.short()}",
        f"case:   {scenario.describe()}",
        f"reached: {scenario.reached_by()}",
    ]
    same = [v for v in found if v.prop == doc["property"]]
    also = [f"also fails {v.signature}: {v.headline}" for v in found if v.prop != doc["property"]]
    return verdict(lines, doc["property"], target.spec, same[0] if same else None, also=also)
