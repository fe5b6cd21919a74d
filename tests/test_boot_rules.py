"""Boot rules: a deployment SGLang refuses at launch is never a case (``Revision.refuses``, ``launch_mask``).

The rule of 0.5.22-0.5.23 the minimal unified-Mamba case used to break: under ``--enable-unified-memory`` a
mamba-hybrid host boots EAGLE/EAGLE3/DFLASH only with the draft's KV fused into its pages, and
``--dcp-size > 1`` declines the fusion (``kv_cache_configurator.py``: ``_fused_draft_decision``,
``_fused_draft_for_mamba_factory``); DSPARK keeps a private draft pool and boots. Held to the pinned wheels.
"""

from __future__ import annotations

import zipfile

import pytest
from hermetic import require_wheel

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.revisions import RELEASE_REVISIONS, get_revision
from fuzz.engines.sglang.decode.coverage import covering_set
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.sweep import prove
from fuzz.targets.resolve import resolve_target

CONFIGURATOR = "sglang/srt/mem_cache/kv_cache_configurator.py"
REFUSAL = "on a mamba-hybrid"  # the ValueError _fused_draft_for_mamba_factory raises
DCP_DECLINE = "shards the host's"  # the reason _fused_draft_decision declines fusion under DCP


def unified(algorithm: str, dcp: int, **kw) -> ServingConfig:
    return ServingConfig.resolve(
        context_len=4096,
        page_size=64,
        attn_dcp_size=dcp,
        speculative_algorithm=algorithm,
        kv_pool="unified-mamba",
        **kw,
    )


@pytest.mark.parametrize("algorithm", ["EAGLE", "EAGLE3", "DFLASH"])
def test_a_fused_draft_under_dcp_on_unified_mamba_is_refused_with_the_wheels_reason(algorithm):
    refusal = get_revision("sglang-0.5.23").refuses(unified(algorithm, 8))
    assert refusal is not None and "mamba-hybrid" in refusal and "--dcp-size 8" in refusal
    assert get_revision("sglang-0.5.23").refuses(unified(algorithm, 1)) is None


def test_dspark_under_dcp_on_an_mla_mamba_model_boots():
    assert get_revision("sglang-0.5.23").refuses(unified("DSPARK", 8, speculative_num_draft_tokens=17)) is None


def test_the_tensor_twin_masks_the_same_launches():
    from allocator_model.pools import KVPool
    from fuzz.engines.sglang.prove.grid import launch_grid
    from fuzz.engines.sglang.prove.space import SPACES

    rev = get_revision("sglang-0.5.23")
    for algorithm in sorted(algo.FUSED_DRAFT | {algo.DSPARK}):
        g = launch_grid(SPACES["tiny"], algorithm, 64, kv_pool=KVPool.UNIFIED_MAMBA)
        mask = rev.launch_mask(g)
        for i in range(len(g.attn_dcp_size)):
            cfg = ServingConfig.resolve(context_len=4096, **g.config_kwargs(i))
            assert bool(mask[i]) == (rev.refuses(cfg) is None), (algorithm, g.config_kwargs(i))


@pytest.mark.parametrize("release", ["0.5.18", "0.5.19", "0.5.23"])
def test_the_rule_holds_where_the_wheel_has_it(release):
    wheel = require_wheel(release)
    text = zipfile.ZipFile(wheel).read(CONFIGURATOR).decode()
    has_rule = REFUSAL in text and DCP_DECLINE in text
    assert get_revision(RELEASE_REVISIONS[release]).unified_dcp_draft_fusion == has_rule


@pytest.mark.parametrize("revision", ["sglang-0.5.23", "sglang-0.5.18", "reference"])
def test_every_covering_case_and_every_witness_boots(revision):
    target = resolve_target("reference" if revision == "reference" else f"reference@{revision}")
    for scenario in covering_set(target):
        assert target.revision.refuses(scenario.config) is None, scenario.config.short()
    for grp in prove(target, request(target, "tiny")).groups.values():
        assert target.revision.refuses(grp.witness.config) is None, grp.witness.config.short()
