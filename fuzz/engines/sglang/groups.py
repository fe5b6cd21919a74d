"""SGLang's bug groups: which regime a violation is named by, and when ``dcp>1`` is its cause.

A group is one distinct bug: a case that fails without DCP too does not
fail because of DCP, so it keeps the regime it has there; a sizing function
that raised is named by the page its configuration gives the sizing module.
"""

from __future__ import annotations

from dataclasses import replace

from allocator_model.config import ServingConfig
from allocator_model.regimes import REGIMES, Regime, moved_regime, regime
from allocator_model.scenario import DecodeScenario
from allocator_model.sizing import alloc_page_size
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding, Violation


def dcp_to_be_judged(v: Violation) -> bool:
    """Whether ``v`` is grouped ``dcp>1`` and so must be held to the same case without DCP before it keeps that
    name (``attributed_without_dcp``); a sizing function that raised is named by its configuration alone."""
    return v.group == Regime.DCP.value and v.prop != Property.SIZING_RAISED


def attributed_without_dcp(v: Violation, same: list[Violation], explain: bool = True) -> Violation:
    """``v`` named for its cause: ``dcp>1`` only when DCP is it.

    ``same``: the violations of ``v``'s property by the same case with
    attn_dcp_size 1 (a decode scenario, a lifecycle step script).  A case
    that fails without DCP too does not fail because of DCP: it is grouped
    by the regime it has there (``moved_regime``; page 1's gap, say), with a
    ``cause:`` line where ``explain``.  Anything else is ``v`` unchanged.
    """
    if not dcp_to_be_judged(v):
        return v
    code = REGIMES.index(Regime.DCP)
    moved = moved_regime(code, REGIMES.index(Regime(same[0].group)) if same else code, bool(same))
    if moved == code:
        return v
    why = [f"cause: fails without DCP too (attn_dcp_size=1: {same[0].headline})"] if explain else []
    return replace(v, group=REGIMES[moved].value, details=v.details + why)


def sizing_raised(cfg: ServingConfig, error: Exception) -> Violation:
    """A real sizing function raised for a valid configuration: the violation names the function and the config."""
    return Violation(
        Property.SIZING_RAISED,
        regime(cfg, alloc_page_size(cfg.page_size, cfg.attn_dcp_size)).value,  # the page the sizing module sees
        str(error),
        [f"config: {cfg.short()}"],
    )  # grouped without the kind of pool: the sizing module does not know it


def serving_config(f: Finding) -> ServingConfig:
    """The SGLang configuration of a finding this engine made (a finding carries its engine's configuration)."""
    if not isinstance(f.config, ServingConfig):
        raise TypeError(f"{f.signature} carries no SGLang configuration ({type(f.config).__name__})")
    return f.config


def scenario_of(f: Finding) -> DecodeScenario:
    """The decode scenario a decode finding's case describes."""
    return DecodeScenario.from_dict(serving_config(f), f.case)
