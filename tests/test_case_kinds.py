"""Every case kind replays in a fresh interpreter: its replayer comes from the explicit, lazy table.

Before, a ``fidelity-case`` file failed validation ("unknown kind") unless
the module that registered its replayer had happened to be imported; so did
its emitted test.  Each kind here runs in a new Python process that imports
nothing but the case-file module (or the emitted test itself).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fuzz.engines.sglang.cases import SGLangCase
from fuzz.findings import casefile
from fuzz.findings.kinds import CaseKind
from fuzz.findings.regression import emit_test, regression_files
from fuzz.tables.declared import TABLE_CASE, declared

REPLAY = (
    "import sys; from fuzz.findings.casefile import replay; r = replay(sys.argv[1]); print(r.text); "
    "sys.exit(1 if r.reproduced else 0)"
)


ROOT = Path(__file__).resolve().parents[1]
# A table case needs a table checked on its own, and the product declares none: the test-only one, told to the
# fresh interpreter as a child process is (``$KVROW_FUZZ_TABLES``).
TOY_TABLE = {"KVROW_FUZZ_TABLES": "toy_rows:TABLE"}
TOY_CASE = {
    "schema": casefile.SCHEMA,
    "schema_version": casefile.SCHEMA_VERSION,
    "kind": TABLE_CASE.value,
    "target": "reference",
    "property": "write-within-row",
    "signature": "write-within-row/paged@toy_rows",
    "config": {"context_len": 8, "page_size": 2},
    "case": {"table": "toy_rows", "data": {"row": 0, "seq_len": 8}},
}


def case_of(kind: CaseKind, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """A case file of ``kind`` (a regression's; the test-only table's for a table case) and its document."""
    if kind is TABLE_CASE:
        path = tmp_path / "toy.json"
        path.write_text(json.dumps(TOY_CASE))
        return str(path), TOY_CASE
    found = [p for p in regression_files() if casefile.load_document(p)["kind"] == kind.value]
    assert found, f"fuzz/regressions/ holds no {kind.value} case"
    return found[0], casefile.load_document(found[0])


def fresh(*args: str, cwd: str | None = None, kind: CaseKind | None = None) -> subprocess.CompletedProcess[str]:
    paths = [os.getcwd(), str(ROOT / "tests" / "tables")] if kind is TABLE_CASE else [os.getcwd()]
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths), **(TOY_TABLE if kind is TABLE_CASE else {})},
    )


def test_every_kind_has_a_replayer():
    assert {k.value for k in CaseKind} == {"decode-scenario", "lifecycle", "fidelity-case", "table-case"}
    for kind in CaseKind:
        assert callable(casefile.replayer(kind))


@pytest.mark.parametrize("kind", list(CaseKind), ids=[k.value for k in CaseKind])
def test_a_case_of_each_kind_replays_in_a_fresh_interpreter(kind, tmp_path):
    path, doc = case_of(kind, tmp_path)
    done = fresh("-c", REPLAY, path, kind=kind)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAILS {doc['signature']}" in done.stdout


@pytest.mark.parametrize("kind", list(CaseKind), ids=[k.value for k in CaseKind])
@pytest.mark.slow
def test_the_emitted_test_of_each_kind_fails_in_a_fresh_interpreter(kind, tmp_path):
    path, doc = case_of(kind, tmp_path)
    if kind is TABLE_CASE:
        with declared(toy_table()):  # emitting parses the signature: the table's groups must be known here too
            emitted = emit_test(doc)
    else:
        emitted = emit_test(doc)
    (tmp_path / "test_emitted.py").write_text(emitted)
    done = fresh("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_emitted.py", cwd=str(tmp_path), kind=kind)
    assert done.returncode == 1, done.stdout + done.stderr  # the bug is there: the test fails, it does not error
    assert "1 failed" in done.stdout and f"FAILS {doc['signature']}" in done.stdout


def toy_table():
    spec = importlib.util.spec_from_file_location("toy_rows", ROOT / "tests" / "tables" / "toy_rows.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TABLE


def test_an_unknown_kind_is_refused_by_name(tmp_path):
    doc = {**case_of(SGLangCase.DECODE, tmp_path)[1], "kind": "nope"}
    with pytest.raises(casefile.CaseFileError, match="unknown kind 'nope'"):
        casefile.validate_document(doc, "x.json")
