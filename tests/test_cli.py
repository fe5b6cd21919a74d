"""The command line contract: exit statuses, one-line errors, case files that replay byte for byte."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fuzz(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args], capture_output=True, text=True, cwd=cwd or ROOT, env=env
    )


@pytest.fixture(scope="module")
def seed_bug_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    r = fuzz(
        "run",
        "--target",
        "reference@sglang-0.5.18",
        "--profile",
        "ci",
        "--quiet",
        "--cases",
        str(d / "cases"),
        "--json",
        str(d / "report.json"),
        cwd=d,
    )
    return d, r


def test_seed_bug_exits_1_with_a_dcp_case_and_a_repro_line(seed_bug_run):
    d, r = seed_bug_run
    assert r.returncode == 1, r.stderr
    assert "COUNTEREXAMPLE write-within-row/dcp>1" in r.stdout
    block = r.stdout.split("COUNTEREXAMPLE write-within-row/dcp>1")[1].split("\nrepro: ")[0]
    assert "attn_dcp_size=" in block and "victim: row" in block
    assert "\nrepro: python -m fuzz repro " in r.stdout.split("COUNTEREXAMPLE write-within-row/dcp>1")[1]


def test_json_report_shape(seed_bug_run):
    d, _ = seed_bug_run
    report = json.loads((d / "report.json").read_text())
    (t,) = report["targets"]
    assert t["target"] == "reference@sglang-0.5.18" and t["status"] == "counterexample"
    assert t["examples"] > 0 and t["seconds"] >= 0
    f = next(f for f in t["findings"] if f["signature"] == "write-within-row/dcp>1")
    assert f["class"] == "write-within-row" and f["config"]["attn_dcp_size"] > 1
    assert f["repro"].startswith("python -m fuzz repro ")


def test_repro_replays_byte_identically(seed_bug_run):
    d, r = seed_bug_run
    line = next(x for x in r.stdout.splitlines() if x.startswith("repro:") and "write-within-row-dcp-1" in x)
    path = line.split()[-1]
    first, second = fuzz("repro", path, cwd=d), fuzz("repro", path, cwd=d)
    assert first.returncode == second.returncode == 1
    assert first.stdout == second.stdout and "FAILS write-within-row/dcp>1" in first.stdout


def test_repro_exits_0_once_fixed(seed_bug_run, tmp_path):
    d, r = seed_bug_run
    path = next(x for x in r.stdout.splitlines() if x.startswith("repro:")).split()[-1]
    doc = json.loads((d / path).read_text())
    doc["target"] = "reference"
    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(doc))
    out = fuzz("repro", str(fixed))
    assert out.returncode == 0 and "no longer fails" in out.stdout


def test_reference_is_clean_under_ci(tmp_path):
    r = fuzz("run", "--target", "reference", "--profile", "ci", "--quiet", "--cases", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "--target", "reference@sglang-9.9.9"], "unknown revision"),
        (["run", "--target", "nonsense"], "unknown target"),
        (["run", "--target", "reference", "--profile", "weekly"], "invalid choice"),
        (["run", "--target", "reference", "--max-examples", "0"], "positive integer"),
        (["repro", "does-not-exist.json"], "does not exist"),
        (["frobnicate"], "invalid choice"),
        (["run", "--target", "reference", "--pin", "page_size=0"], "page_size must be >= 1"),
        (["run", "--target", "reference", "--pin", "speculative_eagle_topk=0"], "speculative_eagle_topk must be >= 1"),
        (["run", "--target", "reference", "--pin", "page_sizes=4"], "unknown configuration field"),
        (["run", "--target", "reference", "--pin", "page_size"], "expects NAME=VALUE"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, needle):
    r = fuzz(*args)
    assert r.returncode == 2
    assert needle in r.stderr and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "not valid JSON"),
        ('{"schema": "other"}', "not a kvrow-fuzz case file"),
        (
            '{"schema": "kvrow-fuzz/case", "schema_version": 1, "kind": "decode-scenario", "target": "reference", '
            '"property": "write-within-row", "config": {"context_len": 100, "page_size": 0}, '
            '"case": {"committed_len": 5}}',
            "page_size must be >= 1",
        ),
        (
            '{"schema": "kvrow-fuzz/case", "schema_version": 1, "kind": "decode-scenario", "target": "reference", '
            '"property": "write-within-row", "config": {"context_len": 100}, "case": {"committed_len": 99}}',
            "outside [1, 96]",
        ),
        (
            '{"schema": "kvrow-fuzz/case", "schema_version": 1, "kind": "decode-scenario", "target": "reference", '
            '"property": "write-within-row", "config": {"context_len": 100}, "case": {}}',
            "malformed case",
        ),
    ],
)
def test_corrupt_case_files_are_one_line_and_exit_2(tmp_path, content, needle):
    p = tmp_path / "case.json"
    p.write_text(content)
    r = fuzz("repro", str(p))
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_targets_lists_every_revision():
    r = fuzz("targets")
    assert r.returncode == 0
    for name in (
        "reference",
        "reference@sglang-0.5.18",
        "reference@sglang-0.5.23",
        "reference@pre-26972",
        "reference@pre-31616",
    ):
        assert name in r.stdout


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupted_run_reports_what_it_found_and_leaves_no_partial_case(tmp_path, sig):
    import signal
    import time

    cases = tmp_path / "cases"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fuzz",
            "run",
            "--target",
            "reference@pre-26972",
            "--profile",
            "nightly",
            "--max-examples",
            "1000000",
            "--cases",
            str(cases),
            "--json",
            str(tmp_path / "r.json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait for the first progress line that reports a group
        line = p.stderr.readline()
        if " 0 groups" not in line and "groups" in line:
            break
    p.send_signal(getattr(signal, sig))
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 1, out
    assert "interrupted" in out and "COUNTEREXAMPLE" in out
    names = os.listdir(cases)
    assert names and all(n.endswith(".json") and not n.startswith(".") for n in names)
    for n in names:
        json.loads((cases / n).read_text())
    assert json.loads((tmp_path / "r.json").read_text())["targets"][0]["interrupted"] is True


def test_pins_fix_fields_and_fuzz_the_rest(tmp_path):
    r = fuzz(
        "run",
        "--target",
        "reference@sglang-0.5.23",
        "--profile",
        "ci",
        "--quiet",
        "--max-examples",
        "100",
        "--pin",
        "speculative_algorithm=DFLASH",
        "--pin",
        "page_size=1",
        "--pin",
        "attn_dcp_size=1",
        "--cases",
        str(tmp_path),
        "--json",
        str(tmp_path / "r.json"),
    )
    assert r.returncode == 1, r.stdout + r.stderr
    (f,) = json.loads((tmp_path / "r.json").read_text())["targets"][0]["findings"]
    assert f["signature"] == "write-within-row/alloc-page-1"
    assert f["config"]["speculative_algorithm"] == "DFLASH" and f["config"]["page_size"] == 1
