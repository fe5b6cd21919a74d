"""The boot-rule table held equal to SGLang's own launch validators, executed (``runtime.validators``).

``Revision.refuses`` says which deployments a release boots; here each release's validators run from its
wheel (``handle_unified_memory_pool`` / ``ServerArgs._handle_unified_memory_pool``, and from 0.5.22 the
configurator's ``_fused_draft_for_mamba_factory``) over a grid of configurations, and the two agree: a config
the table lets boot boots on some host its kind stands for under some launch, and one it refuses is refused
on every one.  ``tests/test_boot_rules.py`` holds the same rule to the wheels' text.
"""

from __future__ import annotations

import itertools
import zipfile

import pytest
from hermetic import require_wheel

from allocator_model import algorithms as algo
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.pools import KVPool
from allocator_model.revisions import RELEASE_REVISIONS, get_revision
from fuzz.engines.sglang.real.runtime.validators import (
    HOSTS,
    MAMBA_MHA,
    MAMBA_MLA,
    MLA,
    BootValidators,
    Host,
    Launch,
    boots,
)
from fuzz.targets.base import TargetError

CONFIGURATOR = "sglang/srt/mem_cache/kv_cache_configurator.py"
# The refusal _fused_draft_for_mamba_factory raises, and the decline _fused_draft_decision gives under DCP.
MAMBA_REFUSAL = "--enable-unified-memory + EAGLE/EAGLE3/DFLASH on a mamba-hybrid target needs the draft's KV fused"
RELEASES = ("0.5.18", "0.5.19", "0.5.22", "0.5.23")


def wheel(release: str) -> str:
    return str(require_wheel(release))


class validators:  # noqa: N801 - reads as the release's validators: ``validators(r).boots(cfg, host)``
    """``boots`` of one release's wheel (loaded once per process, by ``boots`` itself)."""

    def __init__(self, release: str) -> None:
        self.wheel = wheel(release)

    def boots(self, cfg: ServingConfig, host: Host, launch: Launch | None = None) -> str | None:
        return boots(self.wheel, cfg, host, launch)


def config(algorithm: str | None, dcp: int, kind: KVPool = KVPool.UNIFIED_MAMBA) -> ServingConfig:
    draft = {"speculative_num_draft_tokens": 17} if algorithm in ("DSPARK", "UNO") else {}
    return ServingConfig.resolve(
        context_len=4096,
        page_size=64,
        attn_dcp_size=dcp,
        speculative_algorithm=algorithm,
        kv_pool=kind.value,
        **draft,
    )


def grid() -> list[ServingConfig]:
    """Every algorithm (and none) x DCP 1/2/8 x unified memory off/on; the combinations that are configs."""
    out = []
    for algorithm, dcp, kind in itertools.product(
        [None, *sorted(algo.ALL)], (1, 2, 8), (KVPool.STANDARD, KVPool.UNIFIED_MAMBA)
    ):
        try:
            out.append(config(algorithm, dcp, kind))
        except ConfigError:  # unified memory with an algorithm no release accepts there: not a config
            continue
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_the_rule_table_is_the_executed_validators(release):
    v, rev = validators(release), get_revision(RELEASE_REVISIONS[release])
    configs = grid()
    assert len(configs) >= 36
    for cfg in configs:
        executed = {host.name: v.boots(cfg, host) for host in HOSTS[cfg.kv_pool]}
        table = rev.refuses(cfg)
        assert any(r is None for r in executed.values()) == (table is None), (release, cfg.short(), table, executed)


def test_eagle_under_dcp_with_unified_memory_on_a_mamba_model_is_refused_in_the_wheels_words():
    source = zipfile.ZipFile(wheel("0.5.23")).read(CONFIGURATOR).decode()
    refusal = validators("0.5.23").boots(config("EAGLE", 8), MAMBA_MLA)
    assert refusal is not None and refusal.startswith(MAMBA_REFUSAL), refusal
    assert "(--dcp-size 8 shards the host's rows, but the replicated draft reads every token)" in refusal
    for fragment in ("on a mamba-hybrid ", "shards the host's ", "A private draft pool would "):
        assert fragment in source  # the text is the wheel's own
    assert "--dcp-size 2 shards" in validators("0.5.23").boots(config("EAGLE", 2), MAMBA_MLA)  # formatted, not quoted
    assert validators("0.5.23").boots(config("EAGLE", 1), MAMBA_MLA) is None
    assert get_revision("sglang-0.5.23").refuses(config("EAGLE", 8)) is not None


@pytest.mark.parametrize("release", ["0.5.22", "0.5.23"])
def test_dspark_under_dcp_on_an_mla_mamba_model_boots(release):
    assert validators(release).boots(config("DSPARK", 8), MAMBA_MLA) is None
    assert get_revision(RELEASE_REVISIONS[release]).refuses(config("DSPARK", 8)) is None


def test_what_a_kind_of_pool_leaves_to_its_host_and_launch():
    """The facts behind the table's existential answers, on 0.5.23."""
    v = validators("0.5.23")
    mha = v.boots(config("DSPARK", 8), MAMBA_MHA)  # unified memory under DCP: MLA models only
    assert mha is not None and "supports MLA models only" in mha
    for host in HOSTS[KVPool.UNIFIED_MAMBA]:  # DFLASH under DCP: no backend both its verify and DCP accept
        assert "DFLASH requires spec-verify-audited attention backends" in v.boots(config("DFLASH", 8), host)
    # The draft inherits an MLA target's backend unless one is named, and a fused draft runs MHA rails.
    inherits = v.boots(config("EAGLE", 1), MAMBA_MLA, Launch("trtllm_mla"))
    assert inherits is not None and "runs the draft on ['trtllm_mla']" in inherits
    assert v.boots(config("EAGLE", 1), MAMBA_MLA, Launch("trtllm_mla", "triton")) is None


def test_what_cannot_run_is_a_one_line_target_error():
    with pytest.raises(TargetError, match="no unified-memory launch validator"):
        BootValidators.load(wheel("0.5.14"))
    with pytest.raises(TargetError, match="no boot validators for kv_pool unified-mamba on a dense MLA host"):
        validators("0.5.23").boots(config("DSPARK", 1), MLA)
