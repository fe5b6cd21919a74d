"""Every case kind replays in a fresh interpreter: its replayer comes from the explicit, lazy table.

Before, a ``fidelity-case`` file failed validation ("unknown kind") unless
the module that registered its replayer had happened to be imported; so did
its emitted test.  Each kind here runs in a new Python process that imports
nothing but the case-file module (or the emitted test itself).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fuzz.engines.sglang.cases import SGLangCase
from fuzz.findings import casefile
from fuzz.findings.kinds import CaseKind
from fuzz.findings.regression import emit_test, regression_files

REPLAY = (
    "import sys; from fuzz.findings.casefile import replay; r = replay(sys.argv[1]); print(r.text); "
    "sys.exit(1 if r.reproduced else 0)"
)


def case_of(kind: CaseKind) -> str:
    found = [p for p in regression_files() if casefile.load_document(p)["kind"] == kind.value]
    assert found, f"fuzz/regressions/ holds no {kind.value} case"
    return found[0]


def fresh(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )


def test_every_kind_has_a_replayer():
    assert {k.value for k in CaseKind} == {"decode-scenario", "lifecycle", "fidelity-case"}
    for kind in CaseKind:
        assert callable(casefile.replayer(kind))


@pytest.mark.parametrize("kind", list(CaseKind), ids=[k.value for k in CaseKind])
def test_a_case_of_each_kind_replays_in_a_fresh_interpreter(kind):
    path = case_of(kind)
    done = fresh("-c", REPLAY, path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAILS {casefile.load_document(path)['signature']}" in done.stdout


@pytest.mark.parametrize("kind", list(CaseKind), ids=[k.value for k in CaseKind])
@pytest.mark.slow
def test_the_emitted_test_of_each_kind_fails_in_a_fresh_interpreter(kind, tmp_path):
    path = case_of(kind)
    (tmp_path / "test_emitted.py").write_text(emit_test(casefile.load_document(path)))
    done = fresh("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_emitted.py", cwd=str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr  # the bug is there: the test fails, it does not error
    assert "1 failed" in done.stdout and f"FAILS {casefile.load_document(path)['signature']}" in done.stdout


def test_an_unknown_kind_is_refused_by_name(tmp_path):
    doc = {**casefile.load_document(case_of(SGLangCase.DECODE)), "kind": "nope"}
    with pytest.raises(casefile.CaseFileError, match="unknown kind 'nope'"):
        casefile.validate_document(doc, "x.json")
