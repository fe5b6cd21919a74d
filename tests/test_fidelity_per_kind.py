"""Per-kind fidelity: N configurations for each kind of KV pool a release builds, drawn with the kind pinned,
tallied per kind; the matrix's table and report state the tally per release and kind."""

from __future__ import annotations

import json

import pytest

from allocator_model import algorithms as algo
from allocator_model.pools import KVPool
from allocator_model.revisions import REVISIONS
from fuzz.cli import main
from fuzz.engines.sglang.fidelity import cases, differential
from fuzz.engines.sglang.fidelity.cases import dcp_allowed, sample_cases
from fuzz.engines.sglang.fidelity.differential import KindTally, fidelity
from fuzz.engines.sglang.fidelity.matrix import MatrixSettings, Row
from fuzz.engines.sglang.fidelity.matrix_report import markdown, target_entry
from fuzz.engines.sglang.targets import model_target


@pytest.mark.parametrize("name", ["sglang-0.5.23", "sglang-0.5.19", "sglang-0.5.14"])
def test_each_kind_pool_holds_only_that_kind_distinct_and_launchable(name):
    revision = REVISIONS[name]
    for kind in revision.pools:
        pool = sample_cases(revision, algo.ALL, 150, kind=kind)
        configs = [c.config for c in pool]
        assert len(configs) == 150 and len(set(configs)) == 150, kind
        assert all(c.kv_pool is kind and revision.refuses(c) is None for c in configs), kind
        drawn = {c.speculative_algorithm for c in configs}
        assert drawn <= {None} | revision.pool_algorithms(kind) and None in drawn, (kind, drawn)
        dcps = {c.attn_dcp_size for c in configs}
        assert dcps == {1} if not dcp_allowed(kind, revision) else len(dcps) > 1, (kind, dcps)


def test_unified_kinds_draw_dcp_only_where_the_release_takes_it():
    assert not dcp_allowed(KVPool.UNIFIED_MAMBA, REVISIONS["sglang-0.5.19"])  # unified_dcp off
    assert dcp_allowed(KVPool.UNIFIED_MAMBA, REVISIONS["sglang-0.5.20"])
    assert not dcp_allowed(KVPool.UNIFIED_SWA, REVISIONS["sglang-0.5.23"])  # hybrid SWA: refused at launch
    assert not dcp_allowed(KVPool.STANDARD, REVISIONS["sglang-0.5.14"])  # no --dcp-size


def test_the_same_kind_and_algorithms_give_the_same_configurations():
    """One stream per (seed, kind): two releases that run the same things are compared on the same pool."""
    a = sample_cases(REVISIONS["sglang-0.5.21"], algo.ALL, 80, kind=KVPool.SWA)
    b = sample_cases(REVISIONS["sglang-0.5.23"], algo.ALL, 80, kind=KVPool.SWA)
    assert [c.config for c in a] == [c.config for c in b]
    cases._STREAMS.clear()  # a fresh process draws the same again
    assert [c.config for c in sample_cases(REVISIONS["sglang-0.5.23"], algo.ALL, 80, kind=KVPool.SWA)] == [
        c.config for c in a
    ]


@pytest.mark.parametrize("kind", [None, KVPool.UNIFIED_MAMBA])
def test_the_sample_for_a_seed_is_the_same_whatever_was_sampled_before(kind):
    """Issue 22: 40 configurations then 3,000 are the 3,000 of a cold process (the memo only saves work)."""
    revision = REVISIONS["sglang-0.5.23"]
    cases._STREAMS.clear()
    cold = [c.config for c in sample_cases(revision, algo.ALL, 3000, kind=kind)]
    cases._STREAMS.clear()
    sample_cases(revision, {algo.EAGLE}, 40, kind=kind)
    sample_cases(REVISIONS["sglang-0.5.18"], algo.ALL, 40, kind=kind)
    assert [c.config for c in sample_cases(revision, algo.ALL, 3000, kind=kind)] == cold
    assert len(cold) == 3000 and cold != [c.config for c in sample_cases(revision, algo.ALL, 3000, kind=kind, seed=1)]


def test_a_gap_in_one_kind_is_tallied_on_that_kind_alone(monkeypatch):
    """0.5.23's rows against 0.5.20's model: only the unified SWA row differs (C + 4 + D up to 0.5.20)."""
    shrunk_in = []

    def no_shrink(real, model, signature, algorithms, first, kind=None):  # Hypothesis' shrink costs seconds
        shrunk_in.append(kind)
        return first

    monkeypatch.setattr(differential, "_minimal", no_shrink)
    target = model_target(REVISIONS["sglang-0.5.23"])
    r = fidelity(target, revision=REVISIONS["sglang-0.5.20"], per_kind=60)
    assert shrunk_in == [KVPool.UNIFIED_SWA]  # the search for a minimal case keeps the kind
    assert r.per_kind == 60 and r.configs == 60 * len(r.kinds) and list(r.kinds) == list(KVPool)
    swa = r.kinds[KVPool.UNIFIED_SWA]
    assert swa.configs == 60 and 0 < swa.agree < 60  # spec-off configs agree (4 + 0 = 4 = extra without spec)
    assert all(t.agree == t.configs == 60 for k, t in r.kinds.items() if k is not KVPool.UNIFIED_SWA)
    (f,) = r.findings
    assert str(f.signature) == "model-mismatch/req_to_token_row_width" and f.config.kv_pool is KVPool.UNIFIED_SWA
    assert f"unified-swa {swa.agree}/60" in r.summary() and "standard 60/60" in r.summary()
    entry = r.to_json()
    assert entry["per_kind"] == 60 and entry["kinds"]["unified-swa"] == {"configs": 60, "agree": swa.agree}


def test_the_matrix_states_the_tally_per_release_and_kind():
    target = model_target(REVISIONS["sglang-0.5.23"])
    fid = differential.FidelityResult(target.spec, REVISIONS["sglang-0.5.23"], configs=20, per_kind=10)
    fid.kinds = {KVPool.STANDARD: KindTally(10, 10), KVPool.SWA: KindTally(10, 9)}
    row = Row("0.5.23", target=target, fidelity=fid)
    entry = target_entry(row, {})
    assert entry["fidelity"]["per_kind"] == 10
    assert entry["fidelity"]["kinds"] == {"standard": {"configs": 10, "agree": 10}, "swa": {"configs": 10, "agree": 9}}
    md = markdown([row], {}, "# m")
    assert "standard 10/10, swa 9/10" in md
    assert MatrixSettings("ci", 1, 0, 10).fidelity_configs == 10


def test_per_kind_and_configs_together_are_bad_input(capsys):
    assert main(["fidelity", "--target", "reference", "--per-kind", "5", "--configs", "5"]) == 2
    err = capsys.readouterr().err
    assert "not allowed with argument" in err and len(err.strip().splitlines()) == 1, err


def test_fidelity_command_per_kind_json(tmp_path, capsys):
    out = tmp_path / "f.json"
    assert main(["fidelity", "--target", "reference", "--per-kind", "20", "--quiet", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    (entry,) = report["targets"]
    assert report["per_kind"] == 20 and report["configs"] is None
    assert entry["kinds"] == {k.value: {"configs": 20, "agree": 20} for k in KVPool}
    assert "per KV pool kind, agreeing/compared: standard 20/20" in capsys.readouterr().out
