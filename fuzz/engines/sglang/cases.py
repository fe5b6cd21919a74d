"""SGLang's kinds of case: a decode scenario, a lifecycle step script, a fidelity case.

Declared when the engine is loaded (``fuzz.findings.kinds.CaseType``): a
case file of one of these kinds is validated, replayed and printed as it
says here.  A case file is data: a field its replayer would not read is
refused, never carried along unread.
"""

from __future__ import annotations

import json
from typing import Any

from allocator_model.requests import Op
from fuzz.findings.casefile import stray_field
from fuzz.findings.kinds import declare_case_type

from .specs import NAME

# Inside a case: a decode case's "prior" step, and each lifecycle step by its op (what ``DecodeScenario.from_dict``
# and ``RunningBatch.apply`` read; ``case.schema.json`` says the same).
PRIOR_FIELDS = frozenset({"accepted", "num_steps"})
STEP_FIELDS: dict[Op, frozenset[str]] = {
    Op.ADMIT: frozenset({"op", "input_len", "max_new_tokens"}),
    Op.PREFILL: frozenset({"op", "rid", "chunk"}),
    Op.DECODE: frozenset({"op", "accepted"}),
    Op.SET_NUM_STEPS: frozenset({"op", "num_steps"}),
    Op.RETRACT: frozenset({"op", "rid"}),
    Op.STOP: frozenset({"op", "rid"}),
}


def prior_problem(case: dict[str, Any]) -> str | None:
    """A decode case's ``prior`` with a field besides ``PRIOR_FIELDS``."""
    prior = case.get("prior")
    return stray_field(prior, PRIOR_FIELDS, '"prior"') if isinstance(prior, dict) else None


def steps_problem(case: dict[str, Any]) -> str | None:
    """A lifecycle step that is not an object, has no known op, or holds a field its op does not take."""
    steps = case.get("steps")
    for i, step in enumerate(steps if isinstance(steps, list) else [], 1):
        op = Op.of(step)
        if op is None:
            known = ", ".join(Op)
            return f"step {i} is not an object with a known op ({known}): {json.dumps(step)[:80]}"
        problem = stray_field(step, STEP_FIELDS[op], f"step {i} ({op.value})")
        if problem:
            return problem
    return None


def format_step(step: Any) -> str:
    """``op key=value ...``, values as JSON: how a lifecycle step prints."""
    if not isinstance(step, dict):
        return json.dumps(step)
    return " ".join([str(step.get("op"))] + [f"{k}={json.dumps(v)}" for k, v in step.items() if k != "op"])


def step_lines(case: dict[str, Any]) -> list[str]:
    """A step script, numbered."""
    return [f"{i:>3}. {format_step(step)}" for i, step in enumerate(case.get("steps", []), 1)]


def lifecycle_config_line(cfg: Any) -> str:
    """A lifecycle run also depends on its row count."""
    return f"{cfg.short()} max_running_requests={cfg.max_running_requests}"


def lifecycle_suffix(case: dict[str, Any], revision: Any) -> str:
    return f" (lifecycle, {len(case.get('steps', []))} steps)"


def fidelity_suffix(case: dict[str, Any], revision: Any) -> str:
    return f" (model {revision.name})" if revision is not None else ""


class SGLangCase:
    """SGLang's kinds of case, declared once."""

    DECODE = declare_case_type(  # one request's last decode steps (decode/)
        "decode-scenario",
        NAME,
        frozenset({"committed_len", "num_steps", "prior", "device_lag"}),
        "fuzz.engines.sglang.decode.replay:replay_decode",
        nested_problem=prior_problem,
        named_apart=False,
    )
    LIFECYCLE = declare_case_type(  # a step script over a running batch (lifecycle/)
        "lifecycle",
        NAME,
        frozenset({"steps"}),
        "fuzz.engines.sglang.lifecycle.replay:replay_lifecycle",
        nested_problem=steps_problem,
        lines=step_lines,
        config_line=lifecycle_config_line,
        suffix=lifecycle_suffix,
    )
    FIDELITY = declare_case_type(  # one configuration the model and a real module disagree on (.fidelity)
        "fidelity-case",
        NAME,
        frozenset({"lens"}),
        "fuzz.engines.sglang.fidelity.replay:replay_fidelity",
        suffix=fidelity_suffix,
        carries_revision=True,
    )
