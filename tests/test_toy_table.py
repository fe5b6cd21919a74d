"""Acceptance of issue 34: a test-only checked table flows through every command, added as one module and this test.

``tests/tables/toy_rows.py`` declares a table of its own (its width
function, a writer, a planted bug: the headroom counts the draft tokens but
not the allocator's page rounding) and nothing else in the project names
it.  Declared for one test at a time (``fuzz.tables.declared.declared``),
it is found by ``run``, proved by ``prove`` from its closed form, failed by
the pytest plugin, replayed by ``repro``, written to the JSON report and
SARIF (located at its width function) and suppressed by a baseline; its
corrected twin (``FIXED``) stays quiet everywhere.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import pytest

import fuzz.prove.tables  # noqa: F401  (imported before pytester's in-process runs, which drop what they import)
import fuzz.tables.case  # noqa: F401
from fuzz.cli import main
from fuzz.engines.sglang.page_tables import GRAPH_TABLES
from fuzz.findings.schemas import validate
from fuzz.tables.declared import declared

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
MODULE = ROOT / "tests" / "tables" / "toy_rows.py"
_spec = importlib.util.spec_from_file_location("toy_rows", MODULE)
assert _spec is not None and _spec.loader is not None
toy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toy)

RUN = ["run", "--target", "reference", "--profile", "ci", "--max-examples", "30", "--quiet"]
# No speculation: one token ahead, so the row (context + 1) breaks exactly where the allocator's page is above 1:
# dcp>1 where attn_dcp_size > 1, else paged (``allocator_model.regimes.regime``).
PROVE = ["prove", "--target", "reference", "--space", "tiny", "--algorithm", "none", "--quiet"]
PLANTED_WITHOUT_SPECULATION = {"write-within-row/dcp>1@toy_rows", "write-within-row/paged@toy_rows"}


GRAPH = len(GRAPH_TABLES)  # the backends' page tables, each judged beside the toy table
DSA = 3  # the DSA indexer's key cache, judged beside it too: its two properties and its bounded proof


def def_line(name: str) -> int:
    return next(n.lineno for n in ast.parse(MODULE.read_text()).body if getattr(n, "name", None) == name)


def on_toy(report: dict) -> list[dict]:
    return [f for entry in report["targets"] for f in entry["findings"] if f["kind"] == "table-case"]


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(ROOT)  # SARIF's locations are relative to the working directory
    with declared(toy.TABLE) as table:
        yield table


def test_run_finds_the_planted_bug_and_every_output_carries_it(planted, tmp_path: Path, capsys) -> None:
    """run: exit 1, each group a case file; the report and case files follow their schemas; SARIF points at the
    width function; repro replays each case; a hostile case is one line and exit 2."""
    report, sarif, cases = tmp_path / "r.json", tmp_path / "r.sarif", tmp_path / "cases"
    assert main([*RUN, "--json", str(report), "--sarif", str(sarif), "--cases", str(cases)]) == 1
    out = capsys.readouterr().out
    assert "new: toy_rows's parts are sized narrower than its accesses reach (toy_row_width())" in out
    doc = json.loads(report.read_text())
    validate("report", doc)
    assert doc["targets"][0]["tables"]["toy_rows"] == {"judged": True, "by": "its cases on its observer, sampled"}
    found = on_toy(doc)
    assert found and all(f["signature"].endswith("@toy_rows") for f in found)
    assert all(f["class"] == "write-within-row" for f in found)  # the neighbour's spill is the same write: once
    # SARIF: one result for the one root cause, at the width function's def, known by its code
    results = [
        r for r in json.loads(sarif.read_text())["runs"][0]["results"] if "@toy_rows" in r["properties"]["signature"]
    ]
    assert len(results) == 1
    where = results[0]["locations"][0]["physicalLocation"]
    assert where == {
        "artifactLocation": {"uri": "tests/tables/toy_rows.py"},
        "region": {"startLine": def_line("toy_row_width")},
    }
    assert "toy_rows.py:toy_row_width#" in results[0]["partialFingerprints"]["kvrowCause/v2"]
    # repro: every case file replays its own group
    for f in found:
        path = f["repro"].split()[-1]
        validate("case", json.loads(Path(path).read_text()))
        assert main(["repro", path]) == 1
        replayed = capsys.readouterr().out
        assert f"FAILS {f['signature']}" in replayed and "victim: row 1" in replayed
    # a case file is data: a row past the batch, or an unknown table, is one line and exit 2
    case = json.loads(Path(found[0]["repro"].split()[-1]).read_text())
    for bad in (
        {"case": {"table": "toy_rows", "data": {"row": 99, "seq_len": 1}}},
        {"case": {"table": "no_such", "data": {}}},
        {"property": "page-aligned-growth", "signature": "page-aligned-growth/paged"},  # not judged on the table
    ):
        hostile = tmp_path / "hostile.json"
        hostile.write_text(json.dumps({**case, **bad}))
        assert main(["repro", str(hostile)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
    # replayed for its own property alone: the neighbour's break is not hidden behind the write it comes from
    neighbour = tmp_path / "neighbour.json"
    signature = case["signature"].replace("write-within-row", "neighbour-rows-untouched")
    neighbour.write_text(json.dumps({**case, "property": "neighbour-rows-untouched", "signature": signature}))
    assert main(["repro", str(neighbour)]) == 1
    assert f"FAILS {signature}" in capsys.readouterr().out


def test_a_baseline_of_the_run_suppresses_the_tables_cause(planted, tmp_path: Path, capsys) -> None:
    known = tmp_path / "b.json"
    assert (
        main(
            ["baseline", "write", str(known), "--target", "reference", "--profile", "ci"]
            + ["--max-examples", "30", "--quiet"]
        )
        == 0
    )
    entries = json.loads(known.read_text())["entries"]
    assert [(e["table"], e["function"], e["path"], e["term"]) for e in entries] == [
        ("toy_rows", "toy_row_width", "tests/tables/toy_rows.py", "toy_rows-width")
    ]
    assert main([*RUN, "--baseline", str(known)]) == 0
    assert "baseline: 0 new root cause(s), 1 known" in capsys.readouterr().out


def test_prove_finds_every_planted_group_from_the_closed_form(planted, tmp_path: Path, capsys) -> None:
    report, cases = tmp_path / "p.json", tmp_path / "cases"
    assert main([*PROVE, "--verbose", "--json", str(report), "--cases", str(cases)]) == 1  # every WITNESS block
    out = capsys.readouterr().out
    assert "table toy_rows: checked" in out and "WITNESS write-within-row/paged@toy_rows" in out
    doc = json.loads(report.read_text())
    validate("report", doc)
    assert {f["group"] for f in on_toy(doc)} == PLANTED_WITHOUT_SPECULATION
    judged = {"judged": True, "by": "its closed form over the space: write-within-row"}  # what it decides
    assert doc["targets"][0]["tables"]["toy_rows"] == judged
    witnesses = sorted(cases.glob("*toy-rows.json"))
    assert len(witnesses) == len(PLANTED_WITHOUT_SPECULATION)
    for path in witnesses:
        assert main(["repro", str(path)]) == 1  # each witness replays as a case of the table
    capsys.readouterr()


def test_prove_names_a_table_it_did_not_sweep(planted, tmp_path: Path, monkeypatch, capsys) -> None:
    import fuzz.prove.tables as proof

    report = tmp_path / "p.json"
    monkeypatch.setattr(proof, "MAX_CONFIGURATIONS", 1)  # the space is too large for the closed form's sweep
    assert main([*PROVE, "--json", str(report)]) == 0
    assert "   NOT judged: toy_rows (not proved: the tiny space has" in capsys.readouterr().out
    assert json.loads(report.read_text())["targets"][0]["tables"]["toy_rows"]["judged"] is False


def test_prove_refuses_a_closed_form_its_table_contradicts(tmp_path: Path, capsys) -> None:
    from fuzz.tables.declared import Reach

    report = tmp_path / "p.json"
    wrong = replace(
        toy.TABLE, closed_form=lambda target, config: Reach(0, 1, {"row": 0, "seq_len": 1})
    )  # claims a spill
    with declared(wrong):
        assert main([*PROVE, "--json", str(report)]) == 2
    assert "ERROR reference: a closed form claims groups its table does not show" in capsys.readouterr().out
    assert json.loads(report.read_text())["targets"][0]["status"] == "error"


def test_the_corrected_table_stays_quiet_in_run_and_prove(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    with declared(toy.FIXED):
        assert main([*RUN, "--json", str(tmp_path / "r.json")]) == 0
        assert main([*PROVE, "--json", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out
    assert "table toy_rows: checked" in out and "no configuration of the space reaches past a part of toy_rows" in out
    for name in ("r.json", "p.json"):
        assert not on_toy(json.loads((tmp_path / name).read_text()))


def test_the_plugin_fails_each_property_of_the_planted_table(planted, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess(
        "--pyargs", "fuzz.properties.test_kvrow_tables", "--kvrow-target=reference", "--kvrow-max-examples=30",
        "-p", "no:cacheprovider", "-p", "no:xdist", f"--kvrow-cases={pytester.path / 'cases'}",  # not the cwd
    )  # fmt: skip
    result.assert_outcomes(failed=3, passed=5 * GRAPH + DSA)  # and the engine's other tables, clean on the reference
    text = result.stdout.str()
    for test in (
        "test_every_access_of_the_table_stays_within_its_part[toy_rows/write-within-row-reference]",
        "test_every_access_of_the_table_stays_within_its_part[toy_rows/neighbour-rows-untouched-reference]",
        "test_the_table_holds_over_the_bounded_space[toy_rows-reference]",
    ):
        assert any(line.startswith("FAILED ") and test in line for line in text.splitlines()), test
    assert "@toy_rows on reference" in text and "victim: row 1" in text


def test_the_plugin_passes_on_the_corrected_table(monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester) -> None:
    with declared(toy.FIXED):
        result = pytester.runpytest_inprocess(
            "--pyargs", "fuzz.properties.test_kvrow_tables", "--kvrow-target=reference", "--kvrow-max-examples=30",
            "-p", "no:cacheprovider", "-p", "no:xdist",
        )  # fmt: skip
    result.assert_outcomes(passed=3 + 5 * GRAPH + DSA)  # the engine's other tables' too
