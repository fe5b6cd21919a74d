"""SGLang's own write path in the campaigns (issue 23): findings confirmed there, write-path plants caught there.

The write-path tier: the pinned real wheels (``./kvrow test`` fetches them at set-up) and triton; each test
skips, saying which, where one is missing.  The fixture trees are 0.5.23's wheel laid out as a checkout with
its two known row-sizing bugs fixed (``tests/checkout_trees.py``): clean on both paths, and each one-line plant
in its write path is found on SGLang's path while the model's run of the same case passes.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
from checkout_trees import KNOWN_BUGS, PLANTS, build_tree, sizing_file
from hermetic import require_wheel
from test_pysource import unchanged_since_parsed

from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario
from fuzz.campaign.driver import Progress, Tracker
from fuzz.cli import main
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.decode.engine import CONFIRMING, DecodeHunt
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.own_path import WritePathMode, has_sglang_path, on_sglang
from fuzz.findings.kinds import Property
from fuzz.findings.regression import regression_files
from fuzz.targets.resolve import resolve_target

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="the write path needs triton")

# Where each plant shows, as run's --pin options (the covering cells of that deployment).
PLANT_PINS: dict[str, dict[str, object]] = {
    "eagle-schedule-page": {"speculative_algorithm": "EAGLE", "page_size": 64, "attn_dcp_size": 8},
    "eagle-extra-page-reserve": {"speculative_algorithm": "EAGLE", "page_size": 64, "attn_dcp_size": 1},
    "dflash-reserve-d": {"speculative_algorithm": "DFLASH", "page_size": 64, "attn_dcp_size": 1},
    "writer-mask-le": {"speculative_algorithm": "EAGLE", "page_size": 1, "attn_dcp_size": 1},
    "last-loc-wrong-lens": {"speculative_algorithm": "EAGLE", "page_size": 64, "attn_dcp_size": 1},
    "alloc-kernel-pages-off-by-one": {"speculative_algorithm": "EAGLE", "page_size": 64, "attn_dcp_size": 1},
    "spec-decode-keeps-old-allocated": {"speculative_algorithm": "EAGLE", "page_size": 1, "attn_dcp_size": 1},
}


@pytest.fixture
def tree(tmp_path):
    require_wheel("0.5.23")
    return lambda *plants: build_tree(tmp_path / "-".join(plants or ("fixed",)), fixed=KNOWN_BUGS, plants=plants)


def covering_findings(target, pins):
    hunt = DecodeHunt(target, pins={**pins, "kv_pool": "standard"})
    assert hunt.sglang, target.sizing.modeled()
    assert hunt.finishing == CONFIRMING  # a round's new groups replayed here: run's progress names the phase
    found = list(hunt.cover(Tracker(), Progress(target.spec, 0.0, None)))
    return hunt, found


def test_the_fixed_tree_reads_clean_on_both_paths(tree):
    target = resolve_target(str(sizing_file(tree())))
    for pins in PLANT_PINS.values():
        hunt, found = covering_findings(target, pins)
        assert not found, [str(f.signature) for f in found]
        assert hunt.counts["sglang_scenarios"] > 0


def test_every_plant_list_has_its_pins():
    assert set(PLANT_PINS) == set(PLANTS) and len({e.member for p in PLANTS.values() for e in p.edits}) >= 4


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_each_write_path_plant_is_found_on_sglang_and_missed_by_the_model(tree, plant):
    target = resolve_target(str(sizing_file(tree(plant))))
    _, found = covering_findings(target, PLANT_PINS[plant])
    assert found, f"{plant}: nothing found on SGLang's path"
    for f in found:
        scenario = DecodeScenario.from_dict(f.config, f.case)
        _, model = check_scenario(target, scenario)
        assert f.violation.prop is Property.MODEL_MISMATCH or f.signature not in {v.signature for v in model}
    assert any(f.confirmation and f.confirmation.startswith("found on sglang 0.5.23") for f in found) or any(
        f.violation.prop is Property.MODEL_MISMATCH for f in found
    )


def test_a_model_only_plant_is_reported_as_not_reproduced_on_sglang(pinned_wheels):
    """0.5.23 with the model of 0.5.18's DFLASH (reserve unrounded): the model says the growth is off the page;
    SGLang's own DFLASH path rounds it, so the finding is the model's, and says so."""
    real = resolve_target("sglang==0.5.23")
    planted = dataclasses.replace(real, revision=real.revision.but("planted", "model-only", dflash_page_rounded=False))
    hunt = DecodeHunt(planted, pins={"speculative_algorithm": "DFLASH", "page_size": 64, "kv_pool": "standard"})
    found = [
        f
        for f in hunt.cover(Tracker(), Progress(planted.spec, 0.0, None))
        if f.violation.prop is SGLangProperty.PAGE_ALIGNED_GROWTH
    ]
    assert found
    assert all(f.confirmed is False and f.confirmation.startswith("NOT reproduced on sglang 0.5.23") for f in found)


def test_the_seed_bug_overwrites_the_neighbour_row_on_0_5_18s_own_path(pinned_wheels, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (case,) = [p for p in regression_files() if "0.5.18--write-within-row-dcp" in p]
    doc = json.loads(Path(case).read_text())
    doc["target"] = "sglang==0.5.18"
    (tmp_path / "seed.json").write_text(json.dumps(doc))
    assert main(["repro", "seed.json"]) == 1
    out = capsys.readouterr().out
    assert (
        "sglang: confirmed on sglang 0.5.18's own write path: spec_prepare_for_decode -> eagle_prepare_for_decode"
        in out
    )
    assert "-> assign_req_to_token_pool; row 2 columns [0, " in out and "overwritten" in out


def test_asking_for_sglangs_path_where_there_is_none_is_exit_2(capsys):
    assert main(["run", "--target", "reference", "--write-path", "sglang", "--quiet"]) == 2
    assert "has no SGLang write path to run (a model target)" in capsys.readouterr().err
    assert not has_sglang_path(resolve_target("reference"), WritePathMode.AUTO)


def test_on_sglang_names_the_functions_it_entered(pinned_wheels):
    target = resolve_target("sglang==0.5.23")
    cfg = ServingConfig.resolve(context_len=256, page_size=64, speculative_algorithm="EAGLE")
    check = on_sglang(target, DecodeScenario(cfg, 200), trace=True)
    assert "eagle_prepare_for_decode" in check.chain() and "assign_req_to_token_pool" in check.chain()
    assert not check.violations


def test_a_neighbour_overwritten_by_a_write_past_the_row_is_confirmed_on_sglangs_path(pinned_wheels):
    """The write past the row is named once there (write-within-row), and it is what overwrote the neighbour: a
    neighbour-rows-untouched finding of the same case is reproduced, not called a model defect."""
    from fuzz.engines.sglang.own_path import confirmation

    target = resolve_target("sglang==0.5.23")
    cfg = ServingConfig.resolve(
        context_len=8,
        speculative_algorithm="NGRAM",
        speculative_num_steps=1,
        speculative_eagle_topk=10,
        speculative_num_draft_tokens=12,
        enable_overlap=False,
    )
    scenario = DecodeScenario(cfg, 4)
    (neighbour,) = check_scenario(target, scenario, (Property.NEIGHBOUR_ROWS_UNTOUCHED,))[1]
    check = on_sglang(target, scenario)
    assert [v.prop for v in check.violations] == [Property.WRITE_WITHIN_ROW]  # the spill, named once
    confirmed, line = confirmation(check, neighbour)
    assert confirmed and line.startswith("confirmed on sglang 0.5.23's own write path"), line


@pytest.mark.slow
@pytest.mark.parametrize("plant", [None, *sorted(PLANTS)])
def test_run_ci_on_the_fixed_tree_is_clean_and_finds_each_plant(tree, plant, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    root = tree(plant) if plant else tree()
    argv = ["run", "--target", str(sizing_file(root)), "--profile", "ci", "--quiet", "--json", "r.json"]
    code = main(argv)
    capsys.readouterr()
    (entry,) = json.loads(Path("r.json").read_text())["targets"]
    assert entry["write_path"] == "sglang"
    assert code == (1 if plant else 0), [f["signature"] for f in entry["findings"]]


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.parametrize("release", ["0.5.18", "0.5.23"])
def test_every_group_of_a_release_is_confirmed_on_its_own_write_path(pinned_wheels, release, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--target", f"sglang=={release}", "--profile", "ci", "--quiet", "--json", "r.json"]) == 1
    (entry,) = json.loads(Path("r.json").read_text())["targets"]
    decode = [f for f in entry["findings"] if f["class"] != "model-mismatch"]
    assert decode and all(f["confirmed"] is True for f in decode), [(f["signature"], f.get("sglang")) for f in decode]
    assert unchanged_since_parsed() == []  # the files read for the run, its write path and its causes: shared parses
