"""Acceptance of issue 34: a second engine runs through the core, in a process where SGLang cannot be imported.

``tests/engines/toy/`` is an engine package of its own (a toy paged
allocator with one per-request table, ``toy_slots``, whose width omits the
allocator's page rounding: the planted bug; ``toy@fixed`` its corrected
twin), declared by ``$KVROW_FUZZ_ENGINES`` in a child process that first sets
``sys.modules[name] = None`` for the SGLang engine (``fuzz.engines.sglang``),
its model (``allocator_model``) and its strategies (``strategies``).  There
``run`` finds the planted bug and writes its case file, report and SARIF
(at the toy's width function); ``repro`` replays the case, the same way
twice, and passes it on the corrected twin; the pytest plugin fails on the
planted toy and passes on the corrected one.  Each child reports, at its
exit, that none of SGLang's modules was imported and the blocks still
stand: so the core needs neither the SGLang engine nor its model to serve
another engine.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from fuzz.findings.schemas import validate

ROOT = Path(__file__).resolve().parents[1]
ALLOCATOR = ROOT / "tests" / "engines" / "toy" / "allocator.py"
BLOCKED = ("fuzz.engines.sglang", "allocator_model", "strategies")
PLANTED = "write-within-row/paged@toy_slots"
RUN = ["run", "--profile", "ci", "--max-examples", "30"]
PLUGIN = ["-p", "fuzz.pytest_plugin", "--pyargs", "fuzz.properties", "--kvrow-profile=ci", "--kvrow-max-examples=30"]
PLUGIN += ["-p", "no:cacheprovider", "-p", "no:xdist", "-q"]

# The child: SGLang's modules blocked before anything of ``fuzz`` is imported, then each command in turn (``cli``: the
# command line in this process, its output captured; ``pytest``: one session), then what was imported, in JSON.
CHILD = textwrap.dedent(
    """
    import contextlib, io, json, sys
    BLOCKED = tuple(json.loads(sys.argv[2]))
    for name in BLOCKED:
        sys.modules[name] = None
    results = []
    for tool, argv in json.loads(sys.argv[3]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if tool == "cli":
                from fuzz.cli import main
                code = main(argv)
            else:
                import pytest
                code = int(pytest.main(argv))
        results.append({"code": code, "out": out.getvalue(), "err": err.getvalue()})
    from fuzz.engines import engines
    ready, unavailable = engines()
    imported = sorted(n for n in sys.modules if sys.modules[n] is not None and any(
        n == b or n.startswith(b + ".") for b in BLOCKED))
    still = [b for b in BLOCKED if b in sys.modules and sys.modules[b] is None]
    report = {"results": results, "imported": imported, "still_blocked": still,
              "ready": [e.name for e in ready], "unavailable": unavailable}
    with open(sys.argv[1], "w") as f:
        json.dump(report, f)
    """
)


def in_child(commands: list[tuple[str, list[str]]], out: Path, cwd: Path) -> list[dict[str, Any]]:
    """Run ``commands`` in one child with SGLang blocked and the toy declared; each command's exit status and
    output, once the child's own report says none of SGLang's modules was imported and every block stood."""
    env = {k: v for k, v in os.environ.items() if k not in ("KVROW_FUZZ_TABLES", "HYPOTHESIS_PROFILE")}
    paths = [str(ROOT), str(ROOT / "tests" / "engines"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env.update(PYTHONPATH=os.pathsep.join(paths), KVROW_FUZZ_ENGINES="toy=toy.engine:ENGINE")
    # Where this project is installed, pytest's autoload marks every module of its distribution for assertion
    # rewriting and trips on a blocked one (``sys.modules[name] = None``): the plugin is named instead (``-p``).
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    args = [sys.executable, "-c", CHILD, str(out), json.dumps(BLOCKED), json.dumps(commands)]
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and out.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["imported"] == [], f"SGLang's modules were imported: {report['imported']}"
    assert report["still_blocked"] == list(BLOCKED)
    assert report["ready"] == ["toy"] and "cannot be imported" in report["unavailable"]["sglang"], report
    results: list[dict[str, Any]] = report["results"]
    return results


def def_line(name: str) -> int:
    return next(n.lineno for n in ast.parse(ALLOCATOR.read_text()).body if getattr(n, "name", None) == name)


def test_run_repro_and_sarif_serve_the_toy_engine_without_sglang(tmp_path: Path) -> None:
    """run: exit 1 on the planted toy, one group (the neighbour's overwrite is the same write: named once), its
    case file, a report whose entry carries the toy's own counts and judged table, and one SARIF result at
    ``row_width``'s def, known by its code; exit 0 on the corrected twin.  repro, in a fresh process: the same
    failure, the same output twice; the case passes on the corrected twin; a case the toy cannot run is one
    line and exit 2."""
    report, sarif, cases, fixed = tmp_path / "r.json", tmp_path / "r.sarif", tmp_path / "cases", tmp_path / "f.json"
    planted_run = ["--target", "toy", "--json", str(report), "--sarif", str(sarif), "--cases", str(cases)]
    found, clean = in_child(
        [("cli", [*RUN, *planted_run]), ("cli", [*RUN, "--quiet", "--target", "toy@fixed", "--json", str(fixed)])],
        tmp_path / "run.json",
        ROOT,  # SARIF's locations are relative to the working directory
    )
    assert found["code"] == 1, found
    out = found["out"]
    assert f"COUNTEREXAMPLE {PLANTED} on toy" in out and "victim: request 1" in out, out
    assert f"in: tests/engines/toy/allocator.py:{def_line('row_width')} row_width" in out, out
    assert "judged: toy_slots (its decode steps on the toy allocator, sampled)" in out, out
    doc = json.loads(report.read_text())
    entry = doc["targets"][0]
    assert (entry["target"], entry["status"]) == ("toy", "counterexample")
    assert entry["tables"] == {"toy_slots": {"judged": True, "by": "its decode steps on the toy allocator, sampled"}}
    assert entry["toy_steps"] >= 30  # the engine's own report field, carried by the core
    assert [(f["kind"], f["signature"]) for f in entry["findings"]] == [("toy-step", PLANTED)]
    assert [(c["key"], c["code"][0]["function"]) for c in entry["causes"]] == [("toy_slots-width", "row_width")]
    case_path = entry["findings"][0]["repro"].split()[-1]
    case = json.loads(Path(case_path).read_text())
    assert (case["kind"], case["target"], case["signature"]) == ("toy-step", "toy", PLANTED)
    assert set(case["config"]) == {"rows", "context_len", "page_size", "lookahead"} and set(case["case"]) == {
        "row",
        "seq_len",
    }
    # The published schemas are the core's: another engine's report and case file follow them (its kind of case,
    # its configuration, its confirmation under its own name).
    validate("report", doc)
    validate("case", case)
    # SARIF: one result for the one root cause, at the toy's width function, known by its code; its rules are the
    # core's properties alone (none of SGLang's was declared in the child)
    log = json.loads(sarif.read_text())["runs"][0]
    assert [r["id"] for r in log["tool"]["driver"]["rules"]] == [
        "write-within-row",
        "neighbour-rows-untouched",
        "read-within-row",
        "copied-from-own-row",
        "sizing-raised",
        "model-mismatch",
        "unproven",
    ]
    [result] = log["results"]
    assert result["properties"]["signature"] == PLANTED and result["properties"]["function"] == "row_width"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "tests/engines/toy/allocator.py"},
        "region": {"startLine": def_line("row_width")},
    }
    fingerprint = result["partialFingerprints"]["kvrowCause/v2"]
    assert fingerprint.startswith("toy|toy_slots:new:toy_slots-width@tests/engines/toy/allocator.py:row_width#")
    # the corrected twin: clean, its table judged
    assert clean["code"] == 0 and "clean" in clean["out"], clean
    assert json.loads(fixed.read_text())["targets"][0]["findings"] == []

    # repro, in another process: the same failure twice, identically; passes on the fix; hostile data refused
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps({**case, "case": {"row": 99, "seq_len": 1}}))
    again, twice, on_fix, refused = in_child(
        [
            ("cli", ["repro", case_path]),
            ("cli", ["repro", case_path]),
            ("cli", ["repro", case_path, "--target", "toy@fixed"]),
            ("cli", ["repro", str(hostile)]),
        ],
        tmp_path / "repro.json",
        ROOT,
    )
    assert again["code"] == 1 and f"FAILS {PLANTED}" in again["out"] and "victim: request 1" in again["out"], again
    assert twice == again  # deterministic: the same verdict, the same story
    assert on_fix["code"] == 0 and "passes: write-within-row no longer fails on toy@fixed" in on_fix["out"], on_fix
    assert refused["code"] == 2 and len(refused["err"].strip().splitlines()) == 1, refused
    assert "row 99 or seq_len 1 is outside" in refused["err"], refused


def outcomes(junit: Path) -> dict[str, str]:
    """Test id -> passed, failed, skipped or error, from a JUnit report; a failure's message under ``id:text``."""
    named = {"failure": "failed", "skipped": "skipped", "error": "error"}
    found = {}
    for case in ET.parse(junit).iter("testcase"):
        name = case.get("name", "")
        found[name] = next((named[child.tag] for child in case if child.tag in named), "passed")
        for child in case:
            if child.tag == "failure":
                found[f"{name}:text"] = (child.get("message") or "") + (child.text or "")
    return found


def test_the_plugin_fails_on_the_planted_toy_and_passes_on_the_corrected_one(tmp_path: Path) -> None:
    """``pytest -p fuzz.pytest_plugin --pyargs fuzz.properties``, as an adopter runs it from their own repository:
    on ``toy`` the two properties the toy fuzzes fail, naming the planted group and its victim; on ``toy@fixed``
    they pass and the session exits 0.  What the toy does not have (SGLang's other two decode properties, a
    bounded proof, a request lifecycle, a table checked on its own) is a skip that says so, never an error."""
    planted, fixed = tmp_path / "planted.xml", tmp_path / "fixed.xml"
    on_planted, on_fixed = in_child(
        [
            ("pytest", [*PLUGIN, "--kvrow-target=toy", f"--junitxml={planted}"]),
            ("pytest", [*PLUGIN, "--kvrow-target=toy@fixed", f"--junitxml={fixed}"]),
        ],
        tmp_path / "plugin.json",
        tmp_path,  # an adopter's repository: this one's conftest and settings play no part
    )
    assert on_planted["code"] == 1 and on_fixed["code"] == 0, (on_planted, on_fixed)
    for spec, junit in (("toy", planted), ("toy@fixed", fixed)):
        got = outcomes(junit)
        fuzzed = {f"test_every_rounded_write_ends_within_its_row[{spec}]", f"test_no_other_row_changes[{spec}]"}
        assert {got[name] for name in fuzzed} == {"failed" if spec == "toy" else "passed"}, got
        rest = {name: got[name] for name in got if name not in fuzzed and not name.endswith(":text")}
        assert rest and set(rest.values()) == {"skipped"}, rest  # no error: what the toy lacks is skipped
    text = outcomes(planted)["test_no_other_row_changes[toy]:text"]
    assert "neighbour-rows-untouched/paged@toy_slots on toy" in text and "victim: request 1" in text, text
