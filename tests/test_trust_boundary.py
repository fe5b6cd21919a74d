"""A case file is data: it never runs the code it names.

Case files travel as CI artifacts and sit in fuzz/regressions/.  One whose
target is a local file (or the installed package) replays only on a target
the command line names: ``repro CASE --target SPEC``, or KVROW_FUZZ_TARGET
for an emitted test.  ``reference[@REVISION]`` and ``sglang==X.Y.Z`` replay as
named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from fuzz.engines import runs_named_code
from fuzz.findings import casefile
from fuzz.findings.regression import emit_test, regression_files

EVIL = """\
open({marker!r}, "w").write("this file ran")
def get_alloc_len_per_decode(): return 1
def get_alloc_reserve_per_decode(): return 2
def get_req_to_token_extra_context_len(): return 4
"""


@pytest.fixture
def evil_case(tmp_path):
    marker = tmp_path / "MARKER"
    script = tmp_path / "allocation_sizing.py"
    script.write_text(EVIL.format(marker=str(marker)))
    (source,) = [p for p in regression_files() if "0.5.23--write-within-row" in p]
    with open(source) as f:
        doc = json.load(f)
    doc["target"] = str(script)
    case = tmp_path / "case.json"
    case.write_text(json.dumps(doc))
    return case, marker, doc


def fuzz(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.getcwd(), **(env or {})},
    )


@pytest.mark.parametrize("extra", [[], ["--emit-test"]], ids=["repro", "emit-test"])
def test_a_case_naming_a_python_file_is_refused_and_the_file_never_runs(evil_case, extra):
    case, marker, _ = evil_case
    done = fuzz("repro", str(case), *extra)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert "never runs code it names" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not marker.exists()


def test_the_emitted_test_refuses_it_too(evil_case, tmp_path):
    _, marker, doc = evil_case
    with pytest.raises(casefile.CaseFileError, match="never runs code it names"):
        casefile.replay_document(doc)
    namespace: dict = {}
    exec(compile(emit_test(doc), "<emitted>", "exec"), namespace)
    (test,) = [v for k, v in namespace.items() if k.startswith("test_")]
    no_options = SimpleNamespace(config=SimpleNamespace(getoption=lambda name, default=None: default))
    with pytest.raises(casefile.CaseFileError):
        test(no_options)  # its request: no --kvrow-target, so the case's own target
    assert not marker.exists()


def test_the_command_line_can_name_a_target_to_replay_on(evil_case):
    case, marker, _ = evil_case
    done = fuzz("repro", str(case), "--target", "reference@sglang-0.5.23")
    assert done.returncode == 1 and "FAILS write-within-row/alloc-page-1" in done.stdout
    assert not marker.exists()


def test_which_specs_run_named_code():
    assert not any(runs_named_code(s) for s in ("reference", "reference@sglang-0.5.18", "sglang==0.5.23"))
    assert all(runs_named_code(s) for s in ("sglang", "sglang@0.5.18", "./allocation_sizing.py", "/x/checkout"))
