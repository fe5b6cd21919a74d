"""matrix: --expect (a missing required group and a new group both fail), --releases, and the per-release writes."""

import json
from types import SimpleNamespace

import pytest

from fuzz.campaign.driver import CampaignResult
from fuzz.cli import main
from fuzz.fidelity import cli as fidelity_cli
from fuzz.fidelity.matrix import Row, compare_with_expectations, parse_releases
from fuzz.findings.kinds import Signature
from fuzz.findings.schemas import validate
from fuzz.targets.sglang.versions import VersionError


def row(release, *signatures, mismatches=()):
    findings = [SimpleNamespace(signature=Signature.parse(s)) for s in signatures]
    fidelity = SimpleNamespace(findings=[SimpleNamespace(signature=Signature.parse(s)) for s in mismatches])
    return Row(release, campaign=SimpleNamespace(findings=findings, error=None), fidelity=fidelity)


EXPECTED = {"0.5.18": {"required": {"write-within-row/dcp>1"}, "allowed": {"page-aligned-growth/dflash"}}}


def test_expected_groups_are_met():
    assert compare_with_expectations([row("0.5.18", "write-within-row/dcp>1")], EXPECTED) == []
    both = row("0.5.18", "write-within-row/dcp>1", "page-aligned-growth/dflash")
    assert compare_with_expectations([both], EXPECTED) == []


def test_missing_and_new_groups_and_mismatches_are_reported():
    lines = compare_with_expectations([row("0.5.18", "write-within-row/tree")], EXPECTED)
    assert lines == [
        "MISSING 0.5.18: write-within-row/dcp>1 was not found (expected upstream bug)",
        "NEW 0.5.18: write-within-row/tree (not in the expectations: a new finding)",
    ]
    lines = compare_with_expectations(
        [row("0.5.18", "write-within-row/dcp>1", mismatches=["model-mismatch/alloc_len_per_decode"])], EXPECTED
    )
    assert lines == ["MISMATCH 0.5.18: model-mismatch/alloc_len_per_decode (the model disagrees with the release)"]


@pytest.mark.parametrize("text", ["", ",", " , "])
def test_an_empty_release_list_is_bad_input(text, capsys):
    with pytest.raises(VersionError, match="names no release"):
        parse_releases(text)
    assert main(["matrix", "--releases", text, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--releases:" in err and "names no release" in err and len(err.strip().splitlines()) == 1, err


def test_a_negative_fidelity_configs_is_bad_input(capsys):
    assert main(["matrix", "--releases", "0.5.18", "--fidelity-configs", "-1"]) == 2
    assert "expected an integer >= 0" in capsys.readouterr().err


def test_matrix_files_are_written_after_each_release(tmp_path, monkeypatch, capsys):
    """An interrupted matrix keeps its finished rows: matrix.md and matrix.json are rewritten per release."""
    out = tmp_path / "m"
    seen = []

    def fake_run_matrix(releases, settings, *, jobs, cases_dir, on_release, progress):
        rows = [Row(r, campaign=CampaignResult(f"sglang=={r}", examples=7, seconds=0.5)) for r in releases]
        for i, r in enumerate(rows):
            on_release(r, rows[: i + 1])
            seen.append((json.loads((out / "matrix.json").read_text()), (out / "matrix.md").read_text()))
        return rows

    monkeypatch.setattr(fidelity_cli, "run_matrix", fake_run_matrix)
    assert main(["matrix", "--releases", "0.5.18,0.5.19", "--out", str(out), "--fidelity-configs", "0"]) == 0
    (first, first_md), (second, _) = seen
    assert first["command"] == "matrix" and first["complete"] is False and first["requested"] == ["0.5.18", "0.5.19"]
    assert [t["release"] for t in first["targets"]] == ["0.5.18"] and "1 of 2 releases done" in first_md
    assert [t["release"] for t in second["targets"]] == ["0.5.18", "0.5.19"]
    final = json.loads((out / "matrix.json").read_text())
    validate("report", final)
    assert final["complete"] is True and final["profile"] == "ci" and final["seed"] == 0
    (t, _) = final["targets"]
    assert {"target", "status", "seconds", "findings"} <= set(t) and t["status"] == "clean" and t["findings"] == []
    assert t["target"] == "sglang==0.5.18" and t["examples"] == 7 and t["fidelity"] is None
    err = capsys.readouterr().err
    assert "[0.5.18] clean: 0 group(s), 0.5s (1 of 2 releases done" in err and "(2 of 2 releases done" in err
