"""Deployments: every kind of KV pool SGLang builds, its row width and allocator page, its launch rules, its guards.

The kinds (``allocator_model.pools``) differ in two numbers only: the row
width (the unified builders upstream: C + 4 + D) and the allocator page (the
SWA-like allocators keep the bare page under DCP).  The reference sizes every
kind safely; each upstream revision keeps what its release builds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from allocator_model.allocator import allocator_page_size
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.decode import Guard
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool
from allocator_model.revisions import REFERENCE, REVISIONS
from allocator_model.scenario import DecodeScenario, scenario_problem
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.sweep import blocks, prove
from fuzz.engines.sglang.prove.witness import confirm
from fuzz.engines.sglang.real.builders import extract_row_extras
from fuzz.engines.sglang.real.private_imports import StandIns
from fuzz.engines.sglang.real.stubs import Published
from fuzz.findings.kinds import Outcome, Signature
from fuzz.targets.resolve import resolve_target

EAGLE_3_1_4 = dict(speculative_algorithm="EAGLE", speculative_num_steps=3, speculative_num_draft_tokens=4)
EAGLE_TREE = dict(
    speculative_algorithm="EAGLE", speculative_num_steps=5, speculative_eagle_topk=4, speculative_num_draft_tokens=8
)


def scenario(**cfg) -> DecodeScenario:
    """A decode at the scheduler's committed-length bound (C - 4 with overlap off)."""
    config = ServingConfig.resolve(enable_overlap=False, **cfg)
    return DecodeScenario(config, config.context_len - 4, None)


def groups(target: str, s: DecodeScenario) -> list[str]:
    problem = scenario_problem(s, resolve_target(target).revision)
    assert problem is None, problem
    return [str(v.signature) for v in check_scenario(resolve_target(target), s)[1]]


@pytest.mark.parametrize(
    "kind, page, width",
    [
        (KVPool.STANDARD, 64 * 8, 4093 + 519),  # the sizing module's R + P - 1 at P = 512: 8 + 511
        (KVPool.SWA, 64, 4093 + 519),  # sized for page * dcp too (the sizing module does not know the kind)
        (KVPool.HISPARSE, 64, 4093 + 519),
        (KVPool.UNIFIED_MAMBA, 64 * 8, 4093 + 8),  # the builder's 4 + D
    ],
)
def test_each_kind_has_its_allocator_page_and_row_width(kind, page, width):
    cfg = ServingConfig.resolve(context_len=4093, page_size=64, attn_dcp_size=8, kv_pool=kind, **EAGLE_3_1_4)
    assert allocator_page_size(cfg) == page
    assert ModelSizing(REVISIONS["sglang-0.5.23"]).req_to_token_row_width(cfg) == width
    assert ModelSizing(REFERENCE).req_to_token_row_width(cfg) == 4093 + ModelSizing(
        REFERENCE
    ).req_to_token_extra_context_len(cfg)


@pytest.mark.parametrize(
    "args, refusal",
    [
        (dict(kv_pool="unified-swa", attn_dcp_size=2), "refuses attn_dcp_size 2"),
        (dict(kv_pool="unified-mamba-swa", attn_dcp_size=4), "refuses attn_dcp_size 4"),
        (dict(kv_pool="unified-mamba", **EAGLE_TREE), "needs speculative_eagle_topk 1"),
        (dict(kv_pool="hisparse", **EAGLE_TREE), "needs speculative_eagle_topk 1"),
        (dict(kv_pool="unified-mamba", speculative_algorithm="NGRAM"), "refuses speculative_algorithm NGRAM"),
        (dict(kv_pool="paged-attention"), "unknown kv_pool 'paged-attention'"),
    ],
)
def test_launch_rules_of_the_kinds_are_one_line_config_errors(args, refusal):
    with pytest.raises(ConfigError, match=refusal):
        ServingConfig.resolve(context_len=4096, **args)


def test_releases_run_only_their_own_kinds_and_algorithms():
    cfg = ServingConfig.resolve(context_len=4096, page_size=64, kv_pool="unified-mamba", **EAGLE_3_1_4)
    assert REVISIONS["sglang-0.5.23"].refuses(cfg) is None
    assert "does not run speculative_algorithm EAGLE on kv_pool unified-mamba" in REVISIONS["sglang-0.5.21"].refuses(
        cfg
    )
    dspark = ServingConfig.resolve(
        context_len=4096, kv_pool="unified-mamba", speculative_algorithm="DSPARK", speculative_num_draft_tokens=6
    )
    assert REVISIONS["sglang-0.5.21"].refuses(dspark) is None
    assert "does not run speculative_algorithm DSPARK" in REVISIONS["sglang-0.5.16"].refuses(dspark)
    mamba_swa = cfg.replace(kv_pool=KVPool.UNIFIED_MAMBA_SWA)
    assert "has no kv_pool unified-mamba-swa" in REVISIONS["sglang-0.5.18"].refuses(mamba_swa)
    dcp = ServingConfig.resolve(context_len=4096, kv_pool="unified-mamba", attn_dcp_size=2)
    assert "refuses attn_dcp_size 2 with unified memory" in REVISIONS["sglang-0.5.19"].refuses(dcp)
    assert REVISIONS["sglang-0.5.20"].refuses(dcp) is None


def test_unified_mamba_on_0_5_23_writes_59_columns_past_its_row_silently():
    """EAGLE (3,1,4) at page 64: W = C + 8, the allocation ends at ceil_64(C - 4 + 8) (the issue's case)."""
    s = scenario(context_len=4093, page_size=64, kv_pool="unified-mamba-swa", **EAGLE_3_1_4)
    run, found = check_scenario(resolve_target("reference@sglang-0.5.23"), s)
    assert [str(v.signature) for v in found] == ["write-within-row/paged@unified-mamba-swa"]
    assert found[0].overshoot == 59 and found[0].outcome == Outcome()
    assert "row 4101 wide: 59 columns past its end" in found[0].headline
    assert groups("reference@sglang-0.5.23", scenario(context_len=4093, page_size=64, **EAGLE_3_1_4)) == []
    assert groups("reference", s) == []  # the reference sizes unified rows with the headroom


def test_bare_page_allocators_under_dcp_are_not_the_seed_bug():
    """0.5.18's #35424 needs the allocator at page * dcp; an SWA allocator keeps page_size: no dcp>1 there."""
    args = dict(context_len=4096 + 60, page_size=64, attn_dcp_size=8, **EAGLE_3_1_4)
    assert groups("reference@sglang-0.5.18", scenario(**args)) == ["write-within-row/dcp>1"]
    assert groups("reference@sglang-0.5.18", scenario(kv_pool="swa", **args)) == []
    assert groups("reference@sglang-0.5.18", scenario(kv_pool="hisparse", **args)) == []


def test_a_tree_spill_eagle_asserts_on_is_a_crash_not_a_silent_corruption():
    """0.5.18, DCP 8 at page 64: the same spill with topk 4 is stopped by eagle_prepare_for_decode's assert."""
    args = dict(context_len=4096 + 60, page_size=64, attn_dcp_size=8)
    silent = groups("reference@sglang-0.5.18", scenario(**args, **EAGLE_3_1_4))
    crash = groups("reference@sglang-0.5.18", scenario(**args, **EAGLE_TREE))
    assert silent == ["write-within-row/dcp>1"]
    assert crash == [f"write-within-row/dcp>1[guard:{Guard.EAGLE_TREE_ROW.value}]"]
    sig = Signature.parse(crash[0])
    assert sig.outcome.guard == "eagle_utils.eagle_prepare_for_decode"
    assert Signature.parse(silent[0]) < sig  # reports list silent groups first


def test_the_reference_is_clean_under_prove_for_every_kind_of_pool():
    target = resolve_target("reference")
    kinds = {
        kind
        for kind, _, _ in blocks(
            target, __import__("fuzz.engines.sglang.prove.space", fromlist=["SPACES"]).SPACES["tiny"], [None, "EAGLE"]
        )
    }
    assert kinds == set(KVPool)
    result = prove(target, request(target, "tiny"))
    assert result.configurations > 0 and not result.groups


def test_prove_finds_the_unified_rows_of_0_5_23_and_the_step_model_confirms_each_witness():
    target = resolve_target("reference@sglang-0.5.23")
    result = prove(target, request(target, "tiny"))
    confirm(target, result)
    unified = {str(s) for s in result.groups if "@unified-mamba" in str(s)}
    assert {"write-within-row/paged@unified-mamba", "write-within-row/paged@unified-mamba-swa"} <= unified
    for grp in result.groups.values():
        assert grp.confirmed and grp.mismatch is None, (grp.signature, grp.mismatch)


# A configurator in 0.5.23's shape, written for the tests (tests/sglang_shapes/configurator.py).
BUILDERS_SOURCE = (Path(__file__).parent / "sglang_shapes" / "configurator.py").read_text()


def test_pool_builders_are_sliced_to_their_row_extra_without_running_anything_else():
    """A configurator in 0.5.23's shape (written here): only the extra_max_context_len statements run."""
    published = Published()
    stand_ins = StandIns(published)
    extras = extract_row_extras(
        BUILDERS_SOURCE, "configurator.py", {"get_req_to_token_extra_context_len": lambda: 71}, published, stand_ins
    )
    assert set(extras) == {KVPool.STANDARD, KVPool.UNIFIED_MAMBA}  # unified SWA delegates to the standard builder
    cfg = ServingConfig.resolve(context_len=4096, page_size=64, kv_pool="unified-mamba", **EAGLE_3_1_4)
    with published.bound(cfg, cfg.launch_runtime):
        assert extras[KVPool.UNIFIED_MAMBA]() == 8 and extras[KVPool.STANDARD]() == 71
    no_spec = ServingConfig.resolve(context_len=4096, kv_pool="unified-mamba")
    with published.bound(no_spec, None):
        assert extras[KVPool.UNIFIED_MAMBA]() == 4


def test_a_release_reads_its_builders_and_agrees_with_the_model_on_every_kind(monkeypatch):
    """The real 0.5.23 and 0.5.20 wheels of the user's cache (skipped when absent): builders read, rows as modeled."""
    from hermetic import missing_wheel, real_wheel_dir

    from fuzz.engines.sglang.real import wheels

    monkeypatch.setenv("KVROW_FUZZ_CACHE", str(real_wheel_dir()))
    for version in ("0.5.20", "0.5.23"):
        if not wheels.cached_wheel(version):
            pytest.skip(missing_wheel(version) + " (tests never download)")
        target = resolve_target(f"sglang=={version}")
        assert target.sizing.module.row_extras is not None
        model = ModelSizing(target.revision)
        for kind in KVPool:
            for d in (2, 6, 17):
                try:
                    cfg = ServingConfig.resolve(
                        context_len=4093,
                        page_size=64,
                        speculative_algorithm="DSPARK",
                        speculative_num_draft_tokens=d,
                        kv_pool=kind,
                    )
                except ConfigError:
                    continue
                assert target.sizing.req_to_token_row_width(cfg) == model.req_to_token_row_width(cfg), (
                    version,
                    kind,
                    d,
                )
