"""Replaying a fidelity case file (``kvrow-fuzz repro``): its configuration through the target's sizing and the
model revision the case records, whole (named by its case type in ``fuzz.engines.sglang.cases``)."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.revisions import REVISIONS, Revision
from fuzz.common.text import printable
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.findings import casefile
from fuzz.findings.kinds import Signature

from .cases import FidelityCase
from .differential import disagreements


def case_revision(doc: dict[str, Any], where: str) -> Revision:
    """The model revision a fidelity case was compared with: the whole revision as data (``Revision.to_dict``),
    or, in a case file of an earlier version of this tool, the name of a known one."""
    value = doc.get("revision")
    if isinstance(value, str) and value in REVISIONS:
        return REVISIONS[value]
    if isinstance(value, dict):
        try:
            return shown_safely(Revision.from_dict(value))
        except ValueError as e:
            raise casefile.CaseFileError(f"{where}: {e}") from None
    raise casefile.CaseFileError(
        f'{where}: "revision" must be a revision\'s fields or a known name ({", ".join(REVISIONS)}), got {value!r:.80}'
    )


def shown_safely(revision: Revision) -> Revision:
    """``revision`` with each text field made ``printable``: a revision read from a case file travels, and its
    name reaches the terminal in every line of a replay (``target: ... against model NAME``, a refusal), so a
    name holding escapes (a cleared screen, colours, a forged ``passes:`` line) prints as the characters it
    holds.  The identity on every revision this tool writes (their names and summaries are plain text)."""
    values = {f.name: getattr(revision, f.name) for f in fields(revision)}
    texts: dict[str, Any] = {name: printable(v) for name, v in values.items() if isinstance(v, str)}
    return replace(revision, **texts)


def replay_fidelity(doc: dict[str, Any], where: str, named: str | None = None) -> casefile.Replay:
    """Replay a fidelity case file: the same configuration through the target's sizing and the model revision."""
    from fuzz.targets.base import TargetError
    from fuzz.targets.resolve import resolve_case_target

    try:
        case = FidelityCase.from_dict(ServingConfig.from_dict(doc["config"]), doc["case"])
    except (ConfigError, TypeError) as e:
        raise casefile.CaseFileError(f"{where}: {e}") from None
    revision = case_revision(doc, where)
    try:
        target = resolve_case_target(doc["target"], named, SGLangCase.FIDELITY)
    except TargetError as e:
        raise casefile.CaseFileError(f"{where}: {e}") from None
    found = disagreements(target.sizing, ModelSizing(revision), case)
    lines = [
        f"target: {target.spec} against model {revision.name}",
        f"config: {case.config.short()}",
        f"case:   {json.dumps(case.to_dict(), sort_keys=True)}",
    ]
    wanted = Signature.parse(doc["signature"]) if doc.get("signature") else None
    same = [v for v in found if (v.signature == wanted if wanted else v.prop == doc["property"])]
    return casefile.verdict(lines, doc["property"], target.spec, same[0] if same else None)


__all__ = ["case_revision", "replay_fidelity", "shown_safely"]
