"""Issue 33: ``merge`` never calls a shard that did no work clean, never prints a travelling path in a command, and
its case copies never collide; every JSON file this tool reads refuses a key given twice and NaN/Infinity.

Cheap by design: reports and case files are written here (a regression case with its target changed), no campaign
runs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from documentation import all_text
from hermetic import repro_words

from fuzz.cli import main
from fuzz.common.jsonfile import JsonFileError, read_json
from fuzz.engines import runs_named_code
from fuzz.findings import casefile
from fuzz.findings.regression import regression_files
from fuzz.findings.repro import repro_command

SIG = "write-within-row/dcp>1"


def _report(path: Path, command: str, entries: list[dict], raw: str | None = None) -> str:
    doc = {"schema": "kvrow-fuzz/report", "schema_version": 1, "command": command, "targets": entries}
    path.write_text(raw if raw is not None else json.dumps(doc))
    return str(path)


def _case_text(target: str, sig: str = SIG, **extra) -> str:
    doc = json.loads(Path(next(p for p in regression_files() if "0.5.18--write-within-row" in p)).read_text())
    doc.update(target=target, signature=sig, property=sig.split("/")[0], **extra)
    return json.dumps(doc) + "\n"


RUN = {"target": "reference", "status": "clean", "seconds": 1, "examples": 10, "findings": []}
LIFECYCLE = {**RUN, "kind": "lifecycle", "runs": 2, "steps": 40}
PROVE = {"target": "reference", "status": "clean", "seconds": 1, "space": "tiny", "method": "m", "configurations": 3}
PROVE |= {"findings": []}


def _merge(tmp_path: Path, capsys, *reports: str) -> tuple[int, str, str]:
    code = main(["merge", *reports, "--cases-out", str(tmp_path / "out"), "--json", str(tmp_path / "merged.json")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line_exit_2(tmp_path: Path, capsys, report: str, message: str) -> None:
    code, _, err = _merge(tmp_path, capsys, report)
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "merged.json").exists()


@pytest.mark.parametrize(
    "command, entries, message",
    [
        ("run", [], "no target entries"),
        ("run", [{**RUN, "examples": 0}], '"examples" 0'),
        ("run", [{"target": "reference", "findings": []}], '"status"'),
        ("run", [{k: v for k, v in RUN.items() if k != "examples"}], 'no "examples"'),
        ("run", [{**RUN, "examples": None}], 'no "examples"'),
        ("lifecycle", [{**LIFECYCLE, "steps": 0}], '"steps" 0'),
        ("lifecycle", [{**LIFECYCLE, "examples": 0}], '"examples" 0'),
        ("prove", [{k: v for k, v in PROVE.items() if k != "space"} | {"configurations": 0}], "ran nothing"),
        ("prove", [{k: v for k, v in PROVE.items() if k != "space"}], "swept no space"),
        ("prove", [{**PROVE, "configurations": 0}], '"configurations" 0'),
        ("run", [{**RUN, "interrupted": True, "status": "interrupted", "examples": 0}], '"examples" 0'),
        # a crashed shard's report: it says clean, found nothing, ran nothing
        ("run", [{"target": "reference", "status": "clean", "seconds": 0, "examples": 0, "findings": []}], "ran"),
        # a shard that says it found something and lists nothing is not clean
        ("run", [{**RUN, "status": "counterexample"}], "lists no finding"),
    ],
)
def test_a_shard_that_did_no_work_is_bad_input(tmp_path, monkeypatch, capsys, command, entries, message) -> None:
    """Each measured on main as exit 0 (clean) or, for ``"examples": null``, exit 1."""
    monkeypatch.chdir(tmp_path)
    _one_line_exit_2(tmp_path, capsys, _report(tmp_path / "r.json", command, entries), message)


def test_twenty_thousand_targets_that_resolve_to_nothing_are_bad_input(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    entries = [{**RUN, "target": f"nothing-{i}"} for i in range(20_000)]
    _one_line_exit_2(tmp_path, capsys, _report(tmp_path / "r.json", "run", entries), "20,000 target entries")
    report = _report(tmp_path / "r.json", "run", entries[:1000])
    _one_line_exit_2(tmp_path, capsys, report, "nothing-0 names no target this tool resolves")


@pytest.mark.parametrize(
    "target", ["", " reference", "reference ", "reference@sglang-9.9.9", "reference@nope", "sglang==x", "nothing"]
)
def test_a_target_spec_the_tool_cannot_resolve_is_bad_input(tmp_path, monkeypatch, capsys, target) -> None:
    monkeypatch.chdir(tmp_path)
    report = _report(tmp_path / "r.json", "run", [{**RUN, "target": target}])
    _one_line_exit_2(tmp_path, capsys, report, "no target this tool resolves")


@pytest.mark.parametrize(
    "raw, message",
    [
        ('{"target": "reference", "status": "clean", "seconds": NaN, "examples": 3, "findings": []}', "NaN"),
        ('{"target": "reference", "status": "clean", "seconds": 1e999, "examples": 3, "findings": []}', "1e999"),
        ('{"target": "reference", "status": "clean", "seconds": 1, "examples": Infinity, "findings": []}', "Infinity"),
        (
            '{"target": "reference", "status": "clean", "seconds": 1, "examples": 3, "examples": 0, "findings": []}',
            "twice",
        ),
    ],
)
def test_nan_infinity_and_a_duplicate_key_in_a_shard_are_bad_input(tmp_path, monkeypatch, capsys, raw, message) -> None:
    monkeypatch.chdir(tmp_path)
    text = '{"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run", "targets": [' + raw + "]}"
    _one_line_exit_2(tmp_path, capsys, _report(tmp_path / "r.json", "run", [], raw=text), message)


def test_a_duplicate_targets_key_is_bad_input_not_the_last_one_wins(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    finding = {"signature": SIG}
    found = json.dumps([{**RUN, "status": "counterexample", "findings": [finding]}])
    text = f'{{"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run", "targets": {found}, '
    text += f'"targets": {json.dumps([RUN])}}}'
    _one_line_exit_2(tmp_path, capsys, _report(tmp_path / "r.json", "run", [], raw=text), "'targets' twice")


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"entries": [], "entries": [1]}', "the key 'entries' twice in one object"),
        ('{"a": {"b": 1, "b": 1}}', "the key 'b' twice"),
        ('{"seconds": NaN}', "NaN, which is not a JSON number"),
        ("[Infinity]", "Infinity, which is not a JSON number"),
        ("[-Infinity]", "-Infinity, which is not a JSON number"),
        ("[-1e400]", "too large for a float"),
    ],
)
def test_every_json_reader_refuses_duplicate_keys_and_non_finite_numbers(tmp_path, text, message) -> None:
    """``read_json`` is what every reader uses (cases, baselines, shards, matrix --expect, advisory inputs)."""
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(JsonFileError, match=re.escape(message)) as e:
        read_json(str(path), 1 << 20, "baseline")
    assert len(str(e.value).splitlines()) == 1 and str(path) in str(e.value)
    path.write_text('{"a": [1.5, 2, -3e2, {"b": null}]}')
    assert read_json(str(path), 1 << 20, "baseline") == {"a": [1.5, 2, -300.0, {"b": None}]}


def test_a_case_file_with_a_duplicate_key_is_refused(tmp_path) -> None:
    text = _case_text("reference@sglang-0.5.18")
    path = tmp_path / "c.json"
    path.write_text(text.replace('"target":', '"target": "reference", "target":', 1))
    with pytest.raises(casefile.CaseFileError, match="twice"):
        casefile.load_document(str(path))


def _shard_with_finding(
    directory: Path, target: str, case_text: str, shard: str = "1/1", name: str | None = None
) -> str:
    (directory / "cases").mkdir(parents=True)
    name = name or casefile.case_file_name(json.loads(case_text))
    (directory / "cases" / name).write_text(case_text)
    entry = {**RUN, "target": target, "status": "counterexample", "shard": shard}
    entry["findings"] = [{"signature": SIG, "repro": f"python -m fuzz repro cases/{name} --target {target}"}]
    return _report(directory / "run.json", "run", [entry])


def test_the_repro_line_names_no_path_from_a_shard(tmp_path, monkeypatch, capsys) -> None:
    """Today: ``repro COPY --target /x/evil/allocation_sizing.py``: pasting it runs the file the shard named."""
    monkeypatch.chdir(tmp_path)
    evil = "/x/evil;touch pwned/allocation_sizing.py"
    report = _shard_with_finding(tmp_path / "a", evil, _case_text(evil))
    code, out, err = _merge(tmp_path, capsys, report)
    assert code == 1, err
    (t,) = json.loads((tmp_path / "merged.json").read_text())["targets"]
    (f,) = t["findings"]
    assert "evil" not in f["repro"] and f["repro"].endswith(" --target YOUR_CHECKOUT"), f["repro"]
    copy = shlex.split(f["repro"].removeprefix(repro_command()))[0]
    assert os.path.isfile(copy) and os.path.dirname(copy) == str(tmp_path / "out")
    commands = [line for line in out.splitlines() if repro_command() in line]
    assert commands and not any("evil" in line for line in commands)
    named = [line for line in out.splitlines() if "evil" in line and repro_command() not in line]
    assert any("the shard named the target" in line for line in named), out


@pytest.mark.parametrize(
    "target, printed",
    [
        ("reference@sglang-0.5.18", None),
        ("reference", None),
        ("sglang==0.5.18", None),
        ("sglang", "sglang"),
        ("sglang@0.5.18", "sglang@0.5.18"),
        ("/a/b.py", "YOUR_CHECKOUT"),
        ("/a/b;rm -rf ~/c@0.5.18", "YOUR_CHECKOUT@0.5.18"),
        ("/a/b.py@0.5.18;x", "YOUR_CHECKOUT"),
    ],
)
def test_the_target_a_repro_line_gives(target, printed) -> None:
    """Only what the tool recognises is ever printed; a spec that replays itself from the case file is not."""
    from fuzz.merge_cases import needs_target, printed_target, target_class

    cls = target_class(target)
    assert cls is not None and needs_target(cls) == runs_named_code(target)
    assert printed_target(cls, target) == printed
    assert target_class("sglang==0.5.18 ; rm -rf ~") is None and target_class("sglang@x") is None


def test_stderr_escapes_what_a_shard_says(tmp_path, monkeypatch, capsys) -> None:
    """Today the gap line printed a shard's target raw on stderr (a clear-screen, a forged line)."""
    monkeypatch.chdir(tmp_path)
    evil = "/ckpt/\x1b[2J\x1b[32mpasses\u202e/allocation_sizing.py\nfuzz: clean"
    report = _shard_with_finding(tmp_path / "a", evil, _case_text(evil), shard="1/2")
    code, out, err = _merge(tmp_path, capsys, report)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "\\x1b[2J" in err and "\\u202e" in err and "\\x0a" in err
    assert not re.search(r"[\x00-\x1f\x7f\u202e]", err.rstrip("\n")) and not re.search(r"[\x1b\u202e]", out)


def test_forged_targets_that_fold_together_get_their_own_copies(tmp_path, monkeypatch, capsys) -> None:
    """Today both copies were ``ckpt-a-b--write-within-row-dcp-1.json`` (``a_b`` and ``a-b`` fold alike): the later
    shard's passing case replaced the real one, and the real repro then said "no longer fails"."""
    monkeypatch.chdir(tmp_path)
    real, forged = "/ckpt/a-b/allocation_sizing.py", "/ckpt/a_b/allocation_sizing.py"
    real_case, forged_case = _case_text(real), _case_text(forged, reached_by="forged")
    a = _shard_with_finding(tmp_path / "a", real, real_case)
    b = _shard_with_finding(tmp_path / "b", forged, forged_case)
    assert casefile.case_file_name(json.loads(real_case)) == casefile.case_file_name(json.loads(forged_case))
    code, _, err = _merge(tmp_path, capsys, a, b)
    assert code == 1, err
    targets = {t["target"]: t for t in json.loads((tmp_path / "merged.json").read_text())["targets"]}
    copies = {spec: repro_words(t["findings"][0]["repro"])[1] for spec, t in targets.items()}
    assert len(set(copies.values())) == 2 and len(os.listdir(tmp_path / "out")) == 2
    assert Path(copies[real]).read_text() == real_case and Path(copies[forged]).read_text() == forged_case


def test_a_copy_never_overwrites_a_different_case_and_reuses_the_same(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    case = _case_text("reference")
    report = _shard_with_finding(tmp_path / "a", "reference", case)
    assert _merge(tmp_path, capsys, report)[0] == 1
    (first,) = os.listdir(tmp_path / "out")
    assert _merge(tmp_path, capsys, report)[0] == 1  # the same case: the copy is reused
    assert os.listdir(tmp_path / "out") == [first]
    other = _case_text("reference", reached_by="someone else's")
    (tmp_path / "out" / first).write_text(other)
    assert _merge(tmp_path, capsys, report)[0] == 1
    assert (tmp_path / "out" / first).read_text() == other  # never overwritten
    (t,) = json.loads((tmp_path / "merged.json").read_text())["targets"]
    second = repro_words(t["findings"][0]["repro"])[1]
    assert os.path.basename(second) != first and Path(second).read_text() == case


def test_copy_names_are_readable_and_tell_every_target_apart() -> None:
    from fuzz.merge_cases import copy_name, printed_target
    from fuzz.targets.base import TargetKind

    doc = json.loads(_case_text("reference@sglang-0.5.18"))
    name = copy_name(doc, "run", "reference@sglang-0.5.18", SIG)
    assert re.fullmatch(r"reference-sglang-0\.5\.18--write-within-row-dcp-1--[0-9a-f]{12}\.json", name), name
    local = {copy_name(doc, "run", t, SIG) for t in ("/c/a-b.py", "/c/a_b.py", "/c/a-b.py ", "/c/a b.py")}
    assert len(local) == 4 and all(n.startswith("local--write-within-row-dcp-1--") for n in local)
    assert copy_name(doc, "prove", "/c/a-b.py", SIG) not in local
    assert printed_target(TargetKind.FILE, "/c/a-b.py") == "YOUR_CHECKOUT"


def test_readme_and_regression_case_paths_still_resolve() -> None:
    """The case paths the README and docs/ name are run's (unchanged); the suite's regressions still load."""
    readme = all_text()
    named = set(re.findall(r"fuzz-cases/([A-Za-z0-9.\-]+\.json)", readme))
    assert "reference-sglang-0.5.18--write-within-row-dcp-1.json" in named
    for path in regression_files():
        assert os.path.basename(path) == casefile.case_file_name(casefile.load_document(path)), path
    doc = json.loads(_case_text("reference@sglang-0.5.18"))
    assert casefile.case_file_name(doc) in named
