"""SGLang's stages of the verdict pipeline: ``dcp>1`` earned only without DCP, confirmation on SGLang's own write
path, root causes by counterfactual."""

from __future__ import annotations

from typing import Any

from fuzz.engines.base import Attribution
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding
from fuzz.targets.base import Target

from .cases import SGLangCase
from .groups import attributed_without_dcp, dcp_to_be_judged, scenario_of


def _without_dcp(case: Any, target: Target) -> Any:
    """The case with attn_dcp_size 1; None for a case that has no such twin (a table checked on its own: it keeps
    the group its configuration gives it)."""
    without = getattr(case, "without_dcp", None)
    return without(target) if without is not None else None


ATTRIBUTIONS = (Attribution(applies=dcp_to_be_judged, drop=_without_dcp, regroup=attributed_without_dcp),)


def confirm(target: Target, f: Finding, mode: str = "auto", check: Any = None) -> Finding:
    """A decode finding replayed on the target's own write path (where ``mode`` runs one): it says there what that
    path did.  A finding that already says it, a model mismatch or another kind is as is.  ``check``: the case's
    traced run on that path where the caller has made it already."""
    from .own_path import WritePathMode, confirmation, has_sglang_path, on_sglang

    if f.kind is not SGLangCase.DECODE or f.confirmation is not None or f.violation.prop is Property.MODEL_MISMATCH:
        return f
    if check is None and not has_sglang_path(target, WritePathMode(mode)):
        return f
    if check is None:
        check = on_sglang(target, scenario_of(f), trace=True)
    f.confirmed, f.confirmation = confirmation(check, f.violation)
    return f


def root_causes(target: Target, findings: list[Finding]) -> list[Any]:
    from .causes.counterfactual import root_causes

    return root_causes(target, findings)
