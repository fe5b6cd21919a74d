"""A group names its cause: ``dcp>1`` only when the same case without DCP passes.

On 0.5.18 the minimal ``write-within-row/dcp>1`` case used to be a page-1
case that fails with ``attn_dcp_size=1`` as well (the open page-1 gap,
#33579), so the seed bug (#35424) was reported under the wrong cause.
"""

from __future__ import annotations

from hypothesis import Phase, settings
from hypothesis import strategies as st

from allocator_model.config import ServingConfig
from allocator_model.regimes import Regime
from allocator_model.scenario import DecodeScenario
from fuzz.common.profiles import get_profile
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.decode.engine import campaign
from fuzz.engines.sglang.lifecycle.machine import lifecycle_campaign
from fuzz.engines.sglang.lifecycle.replay import run_case
from fuzz.engines.sglang.lifecycle.script import LifecycleCase
from fuzz.findings.kinds import Property
from fuzz.targets.resolve import resolve_target

V0518 = resolve_target("reference@sglang-0.5.18")


def test_the_0518_dcp_group_passes_with_dcp_1():
    result = campaign(V0518, get_profile("ci"))
    (dcp,) = [f for f in result.findings if str(f.signature) == "write-within-row/dcp>1"]
    scenario = DecodeScenario.from_dict(dcp.config, dcp.case)
    assert scenario.config.attn_dcp_size > 1
    _, found = check_scenario(V0518, scenario, (Property.WRITE_WITHIN_ROW,))
    assert [str(v.signature) for v in found] == ["write-within-row/dcp>1"]
    single = scenario.without_dcp()
    assert single is not None and single.config.attn_dcp_size == 1
    assert check_scenario(V0518, single, (Property.WRITE_WITHIN_ROW,))[1] == []


def test_a_case_that_fails_without_dcp_too_is_grouped_by_its_own_regime():
    # DFLASH block 16 at page 1 under DCP 2: 0.5.18 sizes for page 1 (the page-1 gap) and fails with DCP 1 too.
    cfg = ServingConfig.resolve(context_len=256, attn_dcp_size=2, speculative_algorithm="DFLASH", enable_overlap=False)
    scenario = DecodeScenario(cfg, 252)
    _, raw = check_scenario(V0518, scenario, (Property.WRITE_WITHIN_ROW,), attributed=False)
    assert [v.group for v in raw] == [Regime.DCP]
    _, found = check_scenario(V0518, scenario, (Property.WRITE_WITHIN_ROW,))
    assert [str(v.signature) for v in found] == ["write-within-row/alloc-page-1"]
    assert any(d.startswith("cause: fails without DCP too") for d in found[0].details)


def test_the_seed_bug_stays_a_dcp_bug():
    cfg = ServingConfig.resolve(
        context_len=4096,
        page_size=64,
        attn_dcp_size=8,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
        enable_overlap=False,
    )
    _, found = check_scenario(V0518, DecodeScenario(cfg, 4092), (Property.WRITE_WITHIN_ROW,))
    assert [str(v.signature) for v in found] == ["write-within-row/dcp>1"]
    assert found[0].overshoot == 441  # the seed bug: 441 columns past the row at C = 4096


def test_a_lifecycle_script_that_fails_without_dcp_too_is_grouped_by_its_cause_and_replays_so():
    """0.5.15 sizes page 1 x DCP 2 from the page alone (C + 4 + D), and the page-1 gap spills the same script
    without DCP: the lifecycle names the page-1 gap, as prove and run do, not dcp>1.  (The seed bug's lifecycle
    case stays dcp>1: ``tests/test_lifecycle.py``'s neighbour case.)"""
    cfg = ServingConfig.resolve(
        context_len=8,
        attn_dcp_size=2,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=12,
        enable_overlap=False,
        max_running_requests=2,
    )
    target = resolve_target("reference@sglang-0.5.15")
    checks = (Property.WRITE_WITHIN_ROW,)
    first = settings(get_profile("ci"), max_examples=200, phases=[Phase.explicit, Phase.generate])
    result = lifecycle_campaign(target, first, steps=20, checks=checks, configs=st.just(cfg), max_rounds=1)
    (f,) = result.findings
    assert f.signature.group == Regime.ALLOC_PAGE_1.value, f.signature
    assert f.violation.details[-1].startswith("cause: fails without DCP too (attn_dcp_size=1: request "), f.violation
    ((_, replayed),) = run_case(target, LifecycleCase(cfg, f.case["steps"]), checks, story=False).violations
    assert replayed.signature == f.signature
