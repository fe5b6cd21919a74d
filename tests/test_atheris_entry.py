"""The Atheris entry point (fuzz/oss): bytes in, a crash out on a planted revision, its case file on disk first.

The in-process tests feed ``TestOneInput`` bytes from a fixed-seed
``random.Random`` (deterministic, no Atheris needed); the one subprocess test
runs the real libFuzzer loop, bounded by ``-runs``, where Atheris is installed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fuzz.campaign.driver import FindingRaised
from fuzz.cli import main as cli_main
from fuzz.common.errors import BadInput, ExitCode
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.findings import casefile
from fuzz.findings.kinds import Property, Signature
from fuzz.oss import atheris_entry, stubs
from fuzz.oss.cli import MAX_CRASH_BYTES
from fuzz.oss.target import Entry, FuzzConfig, fuzz_properties, parse_known, replay_bytes

ROOT = Path(__file__).resolve().parent.parent
PLANTED = "reference@sglang-0.5.18"  # the seed bug (#35424) and the open page-1 gap
MAX_INPUTS = 8


def crash_input(target: str, cases: Path) -> tuple[bytes, FindingRaised]:
    """The first of ``MAX_INPUTS`` fixed-seed random inputs that crashes the entry on ``target``, and its crash."""
    entry = Entry(FuzzConfig(target, cases=str(cases)), quiet=True)
    rnd = random.Random(0)
    for _ in range(MAX_INPUTS):
        data = rnd.randbytes(rnd.randrange(2048))
        try:
            entry(data)
        except FindingRaised as e:
            assert os.listdir(cases), "the crash left the entry before its case file was written"
            return data, e
    raise AssertionError(f"no crash on {target} in {MAX_INPUTS} inputs")


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def planted_crash(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, FindingRaised, Path]:
    cases = tmp_path_factory.mktemp("atheris-cases")
    data, crash = crash_input(PLANTED, cases)
    return data, crash, cases


def test_planted_revision_crashes_with_a_case_file_that_replays(planted_crash):
    data, crash, cases = planted_crash
    (name,) = os.listdir(cases)
    path = cases / name
    assert crash.finding.case_path == str(path) and "--atheris--" in name
    doc = casefile.load_document(str(path))
    assert doc["target"] == PLANTED and doc["property"] == Property.WRITE_WITHIN_ROW.value
    assert doc["signature"] == str(crash.finding.signature)
    replay = casefile.replay_document(doc, str(path))
    assert replay.reproduced and replay.signature == doc["signature"]


def test_the_same_input_passes_on_the_reference(planted_crash, tmp_path):
    data, _, _ = planted_crash
    entry = Entry(FuzzConfig("reference", cases=str(tmp_path)), quiet=True)
    assert replay_bytes(entry, data) is None
    assert not os.listdir(tmp_path)


def test_a_known_group_passes(planted_crash, tmp_path):
    data, crash, _ = planted_crash
    entry = Entry(FuzzConfig(PLANTED, cases=str(tmp_path), known=frozenset({crash.finding.signature})), quiet=True)
    assert replay_bytes(entry, data) is None
    assert not os.listdir(tmp_path)


def planted_baseline(crash: FindingRaised, path: Path, *, other: bool = False) -> str:
    """A baseline file of the crash's root cause (``other``: the same entries in another function)."""
    from fuzz.engines.sglang.causes.counterfactual import root_causes
    from fuzz.findings import baseline
    from fuzz.targets.resolve import resolve_target

    doc = baseline.document(PLANTED, root_causes(resolve_target(PLANTED), [crash.finding]))
    assert doc["entries"], "the planted crash has a root cause in the model's code"
    if other:
        doc["entries"] = [{**e, "known": "somewhere-else"} for e in doc["entries"]]  # another root cause
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_baseline_passes_a_crash_whose_root_cause_it_knows(planted_crash, tmp_path):
    data, crash, _ = planted_crash
    cases = tmp_path / "cases"
    known = planted_baseline(crash, tmp_path / "known.json")
    entry = Entry(FuzzConfig.parse(PLANTED, None, str(cases), None, known), quiet=True)
    assert entry.config.baseline and replay_bytes(entry, data) is None
    assert replay_bytes(entry, data) is None  # the same case again: its verdict remembered
    assert not os.listdir(cases)
    other = planted_baseline(crash, tmp_path / "other.json", other=True)
    entry = Entry(FuzzConfig.parse(PLANTED, None, str(cases), None, other), quiet=True)
    finding = replay_bytes(entry, data)  # a cause the baseline does not know crashes, its case file written
    assert finding is not None and finding.signature == crash.finding.signature and os.listdir(cases)


def test_known_causes_judges_each_case_once(planted_crash):
    from fuzz.causes.known import KnownCauses
    from fuzz.targets.resolve import resolve_target

    _, crash, _ = planted_crash
    knows = KnownCauses(resolve_target(PLANTED), frozenset())
    assert knows(crash.finding) is False and knows(crash.finding) is False and knows.judged == 1


def test_the_baseline_comes_from_the_command_line_or_the_environment(tmp_path, capsys):
    env = {atheris_entry.ENV_BASELINE: "env.json"}
    options, _ = atheris_entry.split_argv(["fuzzer", "--kvrow-baseline=argv.json"])
    assert atheris_entry.settings_strings(env, options)[4] == "argv.json"
    assert atheris_entry.settings_strings(env)[4] == "env.json"
    assert atheris_entry.settings_strings({}, baseline="baked.json")[4] == "baked.json"
    missing = tmp_path / "missing.json"
    with pytest.raises(BadInput, match=f"^KVROW_FUZZ_BASELINE {missing} does not exist$"):
        FuzzConfig.parse(PLANTED, None, None, None, str(missing))
    (tmp_path / "old.json").write_text('{"0.5.18": {"required": ["write-within-row/dcp>1"]}}')  # the old lists
    with pytest.raises(BadInput, match="not a kvrow-fuzz baseline"):
        FuzzConfig.parse(PLANTED, None, None, None, str(tmp_path / "old.json"))


def test_test_one_input_reads_the_environment(planted_crash, tmp_path, monkeypatch):
    data, crash, _ = planted_crash
    monkeypatch.setattr(atheris_entry, "_ENTRY", None)
    monkeypatch.setenv(atheris_entry.ENV_TARGET, PLANTED)
    monkeypatch.setenv(atheris_entry.ENV_CASES, str(tmp_path))
    monkeypatch.delenv(atheris_entry.ENV_PROPERTY, raising=False)
    monkeypatch.delenv(atheris_entry.ENV_KNOWN, raising=False)
    monkeypatch.delenv(atheris_entry.ENV_BASELINE, raising=False)
    with pytest.raises(FindingRaised) as raised:
        atheris_entry.TestOneInput(data)
    assert raised.value.finding.signature == crash.finding.signature
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(crash.finding.case_path or "")]


def test_from_crash_writes_the_case_file_and_exits_1_then_0_on_the_fix(planted_crash, tmp_path, capsys):
    data, crash, _ = planted_crash
    crash_file = tmp_path / "crash-0"
    crash_file.write_bytes(data)
    cases = tmp_path / "cases"
    assert cli_main(["from-crash", str(crash_file), "--target", PLANTED, "--cases", str(cases)]) == ExitCode.FOUND
    out = capsys.readouterr().out
    assert f"COUNTEREXAMPLE {crash.finding.signature} on {PLANTED}" in out and "repro: " in out
    (case,) = cases.iterdir()
    assert casefile.load_document(str(case))["signature"] == str(crash.finding.signature)
    assert cli_main(["from-crash", str(crash_file), "--cases", str(cases)]) == ExitCode.CLEAN  # the reference
    assert "passes: " in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing-crash"], "crash input missing-crash does not exist"),
        (["{crash}", "--property", "no-such"], "unknown property 'no-such'"),
        (["{crash}", "--property", "no-leak"], "unknown property 'no-leak'"),  # a lifecycle invariant: not fuzzable
        (["{crash}", "--target", "reference@no-such"], "unknown revision 'no-such'"),
        (["{big}"], f"is over {MAX_CRASH_BYTES} bytes"),
        (["{dir}"], "is a directory"),
    ],
)
def test_from_crash_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "crash").write_bytes(b"\0" * 64)
    (tmp_path / "big").write_bytes(b"\0" * (MAX_CRASH_BYTES + 1))
    paths = {"crash": "crash", "big": "big", "dir": str(tmp_path)}
    argv = ["from-crash", *(a.format(**paths) for a in args), "--cases", str(tmp_path / "cases")]
    assert cli_main(argv) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("kvrow-fuzz: error: ") and message in err and err.count("\n") == 1


def test_settings_come_from_the_command_line_then_the_environment_then_the_script():
    env = {atheris_entry.ENV_TARGET: "reference@pre-31616", atheris_entry.ENV_KNOWN: "write-within-row/paged"}
    options, rest = atheris_entry.split_argv(["fuzzer", "--kvrow-property=page-aligned-growth", "-runs=5", "corpus"])
    assert rest == ["fuzzer", "-runs=5", "corpus"]
    got = atheris_entry.settings_strings(env, options, prop="write-within-row", target="reference")
    assert got == ("reference@pre-31616", "page-aligned-growth", None, "write-within-row/paged", None)
    config = FuzzConfig.parse(*got)
    assert config.prop is SGLangProperty.PAGE_ALIGNED_GROWTH and config.cases == "fuzz-cases"
    assert config.known == {Signature(Property.WRITE_WITHIN_ROW, "paged")}
    assert FuzzConfig.parse(None, None, None, None) == FuzzConfig("reference", Property.WRITE_WITHIN_ROW)


def test_bad_settings_are_bad_input(capsys):
    with pytest.raises(BadInput, match="unknown option '--kvrow-seed'"):
        atheris_entry.split_argv(["fuzzer", "--kvrow-seed=3"])
    with pytest.raises(BadInput, match="unknown option '--kvrow-target'"):
        atheris_entry.split_argv(["fuzzer", "--kvrow-target"])  # without =VALUE
    with pytest.raises(BadInput, match="known group: "):
        parse_known("write-within-row/dcp>1,not-a-signature")
    assert atheris_entry.main(["fuzzer", "--kvrow-nope=1"]) == ExitCode.BAD_INPUT  # before Atheris or torch
    assert capsys.readouterr().err.startswith("kvrow-fuzz: error: unknown option '--kvrow-nope'")


def test_len_control_is_added_unless_given():
    assert atheris_entry.with_default_flags(["f", "-runs=9"]) == ["f", "-len_control=0", "-runs=9"]
    assert atheris_entry.with_default_flags(["f", "-len_control=100"]) == ["f", "-len_control=100"]


def test_one_fuzzer_script_per_property_with_its_target(tmp_path):
    paths = stubs.write_stubs(str(tmp_path), PLANTED, "write-within-row/alloc-page-1")
    assert [os.path.basename(p) for p in paths] == [f"{stubs.fuzzer_name(p.value)}.py" for p in fuzz_properties()]
    assert len(fuzz_properties()) == 4 and os.path.basename(paths[0]) == "kvrow_write_within_row_fuzzer.py"
    for prop, path in zip(fuzz_properties(), paths, strict=True):
        text = Path(path).read_text()
        compile(text, path, "exec")
        assert f"main(prop={prop.value!r}, target={PLANTED!r}, known='write-within-row/alloc-page-1')" in text
    with pytest.raises(BadInput, match="unknown target"):
        stubs.write_stubs(str(tmp_path / "none"), "no-such-target")
    with pytest.raises(BadInput, match="known group: "):
        stubs.write_stubs(str(tmp_path / "none"), PLANTED, "alloc-page-1")
    assert not (tmp_path / "none").exists()


def test_clusterfuzzlite_layout():
    """Python project, CPU torch pinned, one fuzzer per property; PR fuzzing code-change, batch and prune scheduled."""
    cfl = ROOT / ".clusterfuzzlite"
    assert yaml.safe_load((cfl / "project.yaml").read_text()) == {"language": "python"}
    docker = (cfl / "Dockerfile").read_text()
    assert docker.splitlines()[2] == "FROM gcr.io/oss-fuzz-base/base-builder-python"
    torch_lines = [line for line in docker.splitlines() if "torch" in line and not line.startswith("#")]
    assert torch_lines == [
        "RUN python3 -m pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    ]
    build = (cfl / "build.sh").read_text()
    assert "python3 -m fuzz.oss.stubs " in build and 'compile_python_fuzzer "$fuzzer"' in build
    assert os.access(cfl / "build.sh", os.X_OK)

    def steps(name: str) -> dict[str, list[dict]]:
        jobs = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())["jobs"]
        return {job: spec["steps"] for job, spec in jobs.items()}

    modes = []
    for name in ("cflite_pr.yml", "cflite_batch.yml"):
        for job_steps in steps(name).values():
            uses = [s["uses"] for s in job_steps]
            assert uses == [
                "google/clusterfuzzlite/actions/build_fuzzers@v1",
                "google/clusterfuzzlite/actions/run_fuzzers@v1",
            ]
            assert job_steps[0]["with"]["language"] == "python"
            modes.append((name, job_steps[1]["with"]["mode"]))
    assert modes == [("cflite_pr.yml", "code-change"), ("cflite_batch.yml", "batch"), ("cflite_batch.yml", "prune")]


def test_atheris_loop_crashes_on_the_planted_revision_and_from_crash_agrees(tmp_path):
    """The real libFuzzer loop (a subprocess: libFuzzer ends the process), bounded by runs, on a fixed seed."""
    pytest.importorskip("atheris")
    env = {**os.environ, "PYTHONPATH": str(ROOT), atheris_entry.ENV_CASES: str(tmp_path / "cases")}
    argv = [sys.executable, "-m", "fuzz.oss.atheris_entry", f"--kvrow-target={PLANTED}"]
    argv += ["-runs=2000", "-seed=1", f"-artifact_prefix={tmp_path}/"]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stderr[-3000:]
    crashes = list(tmp_path.glob("crash-*"))
    (case,) = (tmp_path / "cases").iterdir()
    assert len(crashes) == 1, proc.stderr[-3000:]
    signature = casefile.load_document(str(case))["signature"]
    assert f"kvrow-fuzz: {signature} on {PLANTED} after " in proc.stderr
    again = tmp_path / "again"
    assert cli_main(["from-crash", str(crashes[0]), "--target", PLANTED, "--cases", str(again)]) == ExitCode.FOUND
    (replayed,) = again.iterdir()
    assert casefile.load_document(str(replayed))["signature"] == signature
