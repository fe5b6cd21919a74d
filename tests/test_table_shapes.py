"""The table declaration serves the shapes the next tables bring (issue 34), each a test-only table with a plant.

``tests/tables/``: rows whose writes are clamped while the published length
runs past (``clamped_rows``: a read past the row, a stale read), one flat
buffer of per-request ranges (``flat_ranges``), a cache indexed by the
allocator's location (``by_location``: a location freed under an in-flight
write), a per-slot scratch with a commit (``slot_scratch``).  Each is found
by ``run``, replayed by ``repro`` and located by SARIF at the code it
indicts; a closed form is proved by ``prove``; each corrected twin
(``FIXED``) stays quiet.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from fuzz.cli import main
from fuzz.findings.schemas import validate
from fuzz.tables.declared import declared

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "tests" / "tables"
sys.path.insert(0, str(TABLES))  # the shapes share tests/tables/shape_configs.py

import by_location  # noqa: E402
import clamped_rows  # noqa: E402
import flat_ranges  # noqa: E402
import slot_scratch  # noqa: E402

RUN = ["run", "--target", "reference", "--profile", "ci", "--max-examples", "30", "--quiet"]
PROVE = ["prove", "--target", "reference", "--space", "tiny", "--algorithm", "none", "--quiet"]

# shape -> (the classes its plant breaks, the function its findings indict)
SHAPES: dict[Any, tuple[set[str], str]] = {
    clamped_rows: ({"read-within-row"}, "max_pages"),
    flat_ranges: ({"write-within-row"}, "range_len"),
    by_location: ({"write-within-row"}, "free_finished"),
    slot_scratch: ({"write-within-row", "read-within-row"}, "scratch_steps"),
}
PROVED = (clamped_rows, flat_ranges)  # the shapes with a closed form


def def_line(module: Any, name: str) -> int:
    return next(n.lineno for n in ast.parse(Path(module.__file__).read_text()).body if getattr(n, "name", None) == name)


def on_table(report: Path, name: str) -> list[dict[str, Any]]:
    doc = json.loads(report.read_text())
    validate("report", doc)
    return [
        f for e in doc["targets"] for f in e["findings"] if f["kind"] == "table-case" and f"@{name}" in f["signature"]
    ]


@pytest.mark.parametrize("shape", list(SHAPES), ids=lambda m: m.__name__)
def test_each_shape_is_found_replayed_and_located(shape: Any, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    classes, indicted = SHAPES[shape]
    report, sarif = tmp_path / "r.json", tmp_path / "r.sarif"
    with declared(shape.TABLE):
        argv = [*RUN, "--verbose", "--json", str(report), "--sarif", str(sarif), "--cases", str(tmp_path / "cases")]
        assert main(argv) == 1  # --verbose: every group's block, each saying its scope
        # a group no closed form of the table decides says it was only sampled; one its closed form decides does not
        assert ("scope: sampled only" in capsys.readouterr().out) == (shape not in PROVED)
        found = on_table(report, shape.TABLE.name)
        assert {f["class"] for f in found} == classes
        for f in found:  # a read past the part stops nothing and reads what no write stored
            assert f["outcome"] == ("stale-read" if f["class"] == "read-within-row" else "silent")
            assert main(["repro", f["repro"].split()[-1]]) == 1
            assert f"FAILS {f['signature']}" in capsys.readouterr().out
        results = [
            r
            for r in json.loads(sarif.read_text())["runs"][0]["results"]
            if f"@{shape.TABLE.name}" in r["properties"]["signature"]
        ]
        assert len(results) == 1  # one root cause: the indicted function
        assert results[0]["properties"]["function"] == indicted
        assert results[0]["locations"][0]["physicalLocation"] == {
            "artifactLocation": {"uri": f"tests/tables/{shape.__name__}.py"},
            "region": {"startLine": def_line(shape, indicted)},
        }
    with declared(shape.FIXED):
        assert main([*RUN, "--json", str(report)]) == 0
        assert not on_table(report, shape.TABLE.name)
    capsys.readouterr()


@pytest.mark.parametrize("shape", PROVED, ids=lambda m: m.__name__)
def test_a_shape_with_a_closed_form_is_proved(shape: Any, tmp_path: Path, capsys) -> None:
    """Without speculation every configuration of the space breaks the plant (one token ahead of a row sized
    without it), so the witnesses are one per group of the space's launches: dcp>1, paged and alloc-page-1."""
    report = tmp_path / "p.json"
    with declared(shape.TABLE):
        assert main([*PROVE, "--json", str(report), "--cases", str(tmp_path / "cases")]) == 1
        found = on_table(report, shape.TABLE.name)
        assert {f["group"].split("/")[1].split("@")[0] for f in found} == {"dcp>1", "paged", "alloc-page-1"}
        assert {f["class"] for f in found} == SHAPES[shape][0]
        witnesses = sorted((tmp_path / "cases").glob("*.json"))
        assert len(witnesses) == len(found)
        for path in witnesses:
            assert main(["repro", str(path)]) == 1
    with declared(shape.FIXED):
        assert main([*PROVE, "--json", str(report)]) == 0
        assert not on_table(report, shape.TABLE.name)
    capsys.readouterr()


def test_each_shape_names_whose_part_a_spill_lands_in(tmp_path: Path) -> None:
    """The victim: the next request's range, the next slot, the location's new owner, the end of the table."""
    from fuzz.tables.case import TableCase
    from fuzz.targets.resolve import resolve_target
    from fuzz.verdict import PIPELINE

    target = resolve_target("reference")
    spec = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 2, "speculative_eagle_topk": 2}
    from allocator_model.config import ServingConfig

    tree = ServingConfig.resolve(context_len=64, page_size=1, speculative_num_draft_tokens=4, **spec)
    overlap = ServingConfig.resolve(context_len=64, page_size=1, enable_overlap=True)
    cases = [
        (flat_ranges, tree, {"seq_lens": [64, 1]}, "victim: request 1's range"),
        (flat_ranges, tree, {"seq_lens": [64]}, "victim: past the end of flat_ranges (no owner's part)"),
        (slot_scratch, tree, {"slot": 0, "accepted": 4}, "victim: slot 1"),
        (by_location, overlap, {"a_len": 10}, "victim: request 1"),
        (clamped_rows, tree, {"row": 0, "seq_len": 64}, "victim: row 1 columns [0, 4)"),
    ]
    for shape, config, data, victim in cases:
        with declared(shape.TABLE):
            found = PIPELINE.case(target, TableCase(shape.TABLE, config, data), confirm=False).findings
        assert found and victim in found[0].violation.describe(), (
            shape.__name__,
            [f.violation.describe() for f in found],
        )
        with declared(shape.FIXED):
            assert not PIPELINE.case(target, TableCase(shape.FIXED, config, data), confirm=False).findings
