"""Reports and case files follow the published schemas (fuzz/findings/*.schema.json), checked with jsonschema."""

from __future__ import annotations

import copy
import json

import pytest
from jsonschema import ValidationError

from fuzz.cli import main
from fuzz.findings.regression import regression_files
from fuzz.findings.schemas import validate

FILES = regression_files()


@pytest.mark.parametrize("path", FILES, ids=[p.rsplit("/", 1)[-1] for p in FILES])
def test_every_regression_case_file_follows_the_case_schema(path):
    with open(path) as f:
        validate("case", json.load(f))


def test_the_case_schema_refuses_a_broken_case():
    with open(FILES[0]) as f:
        doc = json.load(f)
    for broken in (
        {**doc, "kind": "Not a kind"},
        {**doc, "kind": "decode-scenario", "config": {"rows": 4}},  # SGLang's kinds carry SGLang's configuration
        {**doc, "Sglang": "an engine's confirmation is under its name, lower case"},
        {**doc, "sglang": {"not": "a string"}},
        {k: v for k, v in doc.items() if k != "target"},
        {**doc, "config": {**doc["config"], "page_size": 0}},
        {**doc, "signature": "no-slash"},
    ):
        with pytest.raises(ValidationError):
            validate("case", broken)


@pytest.mark.parametrize("command, extra", [("run", []), ("lifecycle", ["--steps", "4", "--max-examples", "8"])])
def test_campaign_reports_follow_the_report_schema(tmp_path, capsys, command, extra):
    report = tmp_path / "r.json"
    code = main(
        [
            command,
            "--target",
            "reference@sglang-0.5.18",
            "--profile",
            "ci",
            "--max-examples",
            "40",
            "--quiet",
            "--cases",
            str(tmp_path / "cases"),
            "--json",
            str(report),
            *extra,
        ]
    )
    capsys.readouterr()
    doc = json.loads(report.read_text())
    validate("report", doc)
    assert doc["command"] == command and code in (0, 1)
    if doc["targets"][0]["findings"]:  # a finding of the wrong shape is refused too
        broken = copy.deepcopy(doc)
        del broken["targets"][0]["findings"][0]["kind"]
        with pytest.raises(ValidationError):
            validate("report", broken)


def test_the_case_files_fields_are_the_schemas():
    """``casefile``'s field lists (what it reads, all it accepts) and the published schema say the same."""
    from fuzz.findings.casefile import FIELDS
    from fuzz.findings.kinds import CaseKind, case_type
    from fuzz.findings.schemas import load_schema

    schema = load_schema("case")
    engines = {case_type(kind).engine for kind in CaseKind} - {""}  # each engine's confirmation field (none: core)
    # Beyond its fields, only an engine's confirmation (a string, under the engine's name): any engine may add one.
    assert schema["additionalProperties"] == {
        "type": "string",
        "description": schema["additionalProperties"]["description"],
    }
    assert set(schema["properties"]) == FIELDS | engines
    per_kind = {
        rule["if"]["properties"]["kind"]["const"]: rule["then"]["properties"]["case"]
        for rule in schema["allOf"]
        if "const" in rule["if"]["properties"]["kind"]
    }
    for kind in CaseKind:
        case = per_kind[kind.value]
        assert case["additionalProperties"] is False and set(case["properties"]) == case_type(kind).fields, kind


def test_a_fidelity_report_follows_the_strict_report_schema(tmp_path, capsys):
    """Every top-level field a report carries is one the schema names (``additionalProperties: false``)."""
    report = tmp_path / "f.json"
    code = main(
        ["fidelity", "--target", "reference@sglang-0.5.18", "--configs", "20", "--write-path-steps", "0"]
        + ["--quiet", "--json", str(report), "--cases", str(tmp_path / "cases")]
    )
    capsys.readouterr()
    doc = json.loads(report.read_text())
    assert code == 0 and "configs" in doc
    validate("report", doc)
    for broken in ({**doc, "extra": 1}, {**doc, "schema_version": True}):
        with pytest.raises(ValidationError):
            validate("report", broken)
