"""A reader that goes away (``| head -1``) never turns findings into a clean exit, nor loses a case file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_a_closed_pipe_still_exits_1_with_every_case_file(tmp_path):
    cases = tmp_path / "cases"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fuzz",
            "run",
            "--target",
            "reference@sglang-0.5.18",
            "--profile",
            "ci",
            "--quiet",
            "--cases",
            str(cases),
            "--json",
            str(tmp_path / "r.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert child.stdout is not None
        first = child.stdout.readline()
        child.stdout.close()  # what `head -1` does
        _, err = child.communicate(timeout=300)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert first.startswith("profile ci")
    assert child.returncode == 1, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    names = {p.name for p in cases.iterdir()}
    assert {
        "reference-sglang-0.5.18--drafts-within-allocation-dcp-1-stale-read.json",
        "reference-sglang-0.5.18--page-aligned-growth-dcp-1.json",
        "reference-sglang-0.5.18--page-aligned-growth-dflash.json",
        "reference-sglang-0.5.18--write-within-row-alloc-page-1.json",
        "reference-sglang-0.5.18--write-within-row-dcp-1.json",
    } <= names  # the standard pool's silent groups; the other kinds and the guards have theirs too
    findings = json.loads((tmp_path / "r.json").read_text())["targets"][0]["findings"]
    # one case file per group and one per representative case found, none lost
    found = sum(1 for f in findings if f.get("representative", {}).get("found"))
    assert len(findings) + found == len(names)
