"""matrix: --expect BASELINE (causes by the baseline's key, per release: a new cause and a missing required entry
both fail), --releases, and the per-release writes."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fuzz.campaign.driver import CampaignResult
from fuzz.cli import main
from fuzz.common.errors import BadInput
from fuzz.engines.sglang.fidelity import matrix
from fuzz.engines.sglang.fidelity.matrix import Row, compare_with_expectations, load_expectations, parse_releases
from fuzz.engines.sglang.real.versions import VersionError, known_releases
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.kinds import Signature
from fuzz.findings.schemas import validate

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "fuzz" / "findings" / "baseline.schema.json"


SIZING = "python/sglang/srt/mem_cache/allocation_sizing.py"
DIGEST = "0123456789abcdef"
DCP = Cause(
    "dcp",
    CauseKind.KNOWN,
    "#35424",
    "the DCP reserve",
    variants=[Signature.parse("write-within-row/dcp>1")],
    table="req_to_token",
)
DCP.code = [(SIZING, "get_alloc_len_per_decode")]
PAGE1 = Cause("page-1", CauseKind.KNOWN, "#33579", "the page-1 headroom", table="req_to_token")
PAGE1.variants, PAGE1.code = [Signature.parse("write-within-row/alloc-page-1")], [(SIZING, "get_extra_len")]
PIECE = Cause("alloc_len_per_decode", CauseKind.PIECE, "new", "a new alloc length", table="req_to_token")
PIECE.variants, PIECE.code = [Signature.parse("write-within-row/tree")], [(SIZING, "get_alloc_len_per_decode")]
PIECE.digests = {PIECE.code[0]: DIGEST}


def row(release, *causes, mismatches=()):
    """A finished release whose campaign found ``causes`` (the matrix compares causes, not group labels)."""
    findings = [SimpleNamespace(signature=s) for c in causes for s in c.variants]
    fidelity = SimpleNamespace(findings=[SimpleNamespace(signature=Signature.parse(s)) for s in mismatches])
    campaign = SimpleNamespace(findings=findings, causes=list(causes), error=None)
    return Row(release, campaign=campaign, fidelity=fidelity)


def entry(prop, known, **extra):
    """A known cause's entry (by its fix's key)."""
    return {"property": prop, "table": "req_to_token", "known": known, **extra}


DOC = {
    "schema": "kvrow-fuzz/baseline",
    "schema_version": 2,
    "target": "sglang",
    "releases": ["0.5.18", "0.5.19"],
    "entries": [
        entry("write-within-row", "dcp", releases=["0.5.18"], required=True),
        entry("write-within-row", "page-1"),  # every release the document covers, allowed
    ],
}


@pytest.fixture
def expect_file(tmp_path):
    path = tmp_path / "expect.json"
    path.write_text(json.dumps(DOC))
    return str(path)


def test_known_causes_are_met_whatever_their_groups(expect_file):
    expected = load_expectations(expect_file, ["0.5.18", "0.5.19"])
    assert compare_with_expectations([row("0.5.18", DCP)], expected) == []
    assert compare_with_expectations([row("0.5.18", DCP, PAGE1), row("0.5.19", PAGE1)], expected) == []
    variant = Cause("dcp", CauseKind.KNOWN, "#35424", "the DCP reserve", code=DCP.code, table="req_to_token")
    variant.variants = [Signature.parse("write-within-row/dcp>1@swa")]  # a new group of a known cause: known
    assert compare_with_expectations([row("0.5.18", variant)], expected) == []


def test_missing_and_new_causes_and_mismatches_are_reported(expect_file):
    expected = load_expectations(expect_file, ["0.5.18", "0.5.19"])
    lines = compare_with_expectations([row("0.5.18", PAGE1), row("0.5.19", DCP)], expected)
    assert lines == [
        "MISSING 0.5.18: write-within-row of known bug dcp was not found "
        "(a required known finding: the tool regressed)",
        "NEW 0.5.19: #35424 (write-within-row/dcp>1): write-within-row of known bug dcp not in the baseline "
        "(a new finding)",
    ]
    # a new cause in a known function is new; one in a known group label is new too
    growth = Cause(
        "growth",
        CauseKind.PIECE,
        "new",
        "growth",
        variants=[Signature.parse("page-aligned-growth/dcp>1")],
        table="req_to_token",
    )
    growth.code, growth.digests = DCP.code, {DCP.code[0]: DIGEST}
    lines = compare_with_expectations(
        [row("0.5.18", DCP, growth, mismatches=["model-mismatch/alloc_len_per_decode"])], expected
    )
    assert [line.split(":")[0] for line in lines] == ["NEW 0.5.18", "MISMATCH 0.5.18"]
    assert (
        "page-aligned-growth in get_alloc_len_per_decode" in lines[0]
        and "model-mismatch/alloc_len_per_decode" in lines[1]
    )
    in_known_function = Cause(
        "dcp-2", CauseKind.KNOWN, "new", "another bug in get_alloc_len_per_decode", table="req_to_token"
    )
    in_known_function.variants, in_known_function.code = DCP.variants, DCP.code
    assert compare_with_expectations([row("0.5.18", DCP, in_known_function)], expected)[0].startswith("NEW 0.5.18")
    assert compare_with_expectations([row("0.5.19", PIECE)], expected)[0].startswith("NEW 0.5.19: new: alloc_len")


def test_a_one_release_baseline_covers_its_targets_release_only(tmp_path):
    """A file without releases or required: every entry expected on its target's release, none required."""
    path = tmp_path / "one.json"
    doc = {k: v for k, v in DOC.items() if k != "releases"}
    doc["target"], doc["entries"] = "sglang==0.5.18", [entry("write-within-row", "dcp")]
    path.write_text(json.dumps(doc))
    expected = load_expectations(str(path), ["0.5.18"])
    assert compare_with_expectations([row("0.5.18", DCP)], expected) == []
    assert compare_with_expectations([row("0.5.18")], expected) == []  # nothing required
    with pytest.raises(BadInput, match=r"no entry for release 0\.5\.19 \(the baseline covers: 0\.5\.18\)"):
        load_expectations(str(path), ["0.5.18", "0.5.19"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"0.5.18": {"required": [], "allowed": []}}, "not a kvrow-fuzz baseline"),  # the old format
        ({"releases": ["0.5.x"]}, "'0.5.x' is not a release (PEP 440"),
        ({**DOC, "schema_version": 1}, "a version 1 baseline keys known findings by place"),
        ({"releases": []}, "must be a list of 1 to 256 releases"),
        ({"entries": [entry("write-within-row", "f", releases=["0.5.20"])]}, "0.5.20 is not one of the document's"),
        ({"entries": [entry("write-within-row", "f", required="yes")]}, "required must be true or false"),
        ({"entries": [entry("write-within-row", "f", line=12)]}, "must have property, table and either known or"),
    ],
)
def test_a_bad_expect_file_is_one_line_and_exit_2_before_any_fuzzing(change, message, tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(change if "0.5.18" in change else {**DOC, **change}))
    assert main(["matrix", "--releases", "0.5.18", "--expect", str(path), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m" / "matrix.json").exists()  # nothing fuzzed


def test_the_shipped_matrix_baseline_covers_every_release_and_follows_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    path = ROOT / ".github" / "matrix-expected.json"
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    expected = load_expectations(str(path), known_releases())
    for release in known_releases():
        assert expected[release].required, release  # each release shows some known upstream bug
        assert expected[release].required <= expected[release].entries


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

    monkeypatch.setattr(matrix, "run_matrix", fake_run_matrix)  # the command imports it when it runs
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
