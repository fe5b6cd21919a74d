"""Every command's only output is safe (issue 33): lost output is never a clean exit, a planted link is never
followed, text from a travelling file never reaches a terminal or a generated file raw, and a case file's
nested objects hold only the fields this tool reads.

Output lost
    stdout on /dev/full or closed (``>&-``): exit != 0 and one line (``repro --emit-test``, ``paths``, the
    help); a reader that left (EPIPE) stays quiet with the command's own status; a finding keeps exit 1.
    A file write failing with ENOSPC (injected at ``fsync``, where every atomic write passes): one line and
    exit 2 for ``merge``, ``advisory``, ``baseline write``, the stubs generator; a clean ``prove`` whose
    report was lost exits 2, not 0.
Symbolic links
    ``--json LINK``, ``--cases LINK``, ``merge --cases-out`` holding a planted link: refused, the file the
    link names untouched.
Escapes
    a fidelity case's ``revision.name`` (clear screen, colour, bidi, a forged ``passes:`` line); the Atheris
    stub generator's target (a docstring it could close).
Strict nested keys
    an unknown key in a lifecycle step or a decode case's ``prior``: one line, exit 2.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fuzz.cli import main
from fuzz.findings.regression import regression_files

ROOT = Path(__file__).resolve().parent.parent
SEED_CASE = next(p for p in regression_files() if "reference-sglang-0.5.18--write-within-row" in p)
LIFECYCLE_CASE = next(p for p in regression_files() if "--lifecycle--" in p)
FIDELITY_CASE = next(p for p in regression_files() if "--fidelity-case--" in p)
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def fuzz(args: list[str], redirect: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """``python -m fuzz ARGS`` with its standard output redirected by the shell (``>/dev/full``, ``>&-``)."""
    import shlex

    line = " ".join(map(shlex.quote, [sys.executable, "-m", "fuzz", *args]))
    return subprocess.run(
        ["sh", "-c", f"exec {line} {redirect}"], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=ENV
    )


def one_line(err: str) -> bool:
    return "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- standard output lost --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, redirect",
    [
        pytest.param(["repro", "--emit-test", SEED_CASE], ">/dev/full", marks=pytest.mark.slow),
        (["--help"], ">/dev/full"),  # the loss met at the last flush, as a short output meets it
        (["--help"], ">&-"),
    ],
    ids=["repro-emit-test-dev-full", "help-dev-full", "help-closed"],
)
def test_standard_output_lost_is_a_nonzero_exit_and_one_line(args, redirect) -> None:
    done = fuzz(args, redirect)
    assert done.returncode == 2 and one_line(done.stderr), (done.returncode, done.stderr)
    assert "standard output" in done.stderr


@pytest.mark.slow
def test_paths_on_a_full_standard_output_is_a_nonzero_exit(pinned_wheels) -> None:
    done = fuzz(["paths", "--target", "sglang==0.5.23"], ">/dev/full")
    assert done.returncode == 2 and one_line(done.stderr), (done.returncode, done.stderr)


def test_a_reader_that_left_is_no_loss_and_stays_quiet() -> None:
    """``| head`` closing the pipe (EPIPE) asked for no more: the command's own status, nothing on stderr."""
    child = subprocess.Popen(
        [sys.executable, "-m", "fuzz", "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=ENV,
    )
    assert child.stdout is not None
    child.stdout.close()  # before the child writes a byte: its first write meets EPIPE
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0 and err == "", (child.returncode, err)


class FullStream:
    """A standard output on a full disk: every write fails with ENOSPC."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def isatty(self) -> bool:
        return False


def test_an_emitted_test_lost_on_a_full_standard_output_is_not_a_clean_exit(capsys, monkeypatch) -> None:
    """In-process twin of the /dev/full run above (slow tier): every write fails as it is made."""
    monkeypatch.setattr(sys, "stdout", FullStream())
    code = main(["repro", "--emit-test", SEED_CASE])
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and "standard output cannot be written" in err, (code, err)


def test_a_finding_keeps_its_status_when_standard_output_is_lost(capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdout", FullStream())
    code = main(["repro", SEED_CASE])
    err = capsys.readouterr().err
    assert code == 1 and one_line(err) and "standard output cannot be written" in err, (code, err)


# -- output files lost (ENOSPC) ----------------------------------------------------------------------------
@pytest.fixture
def full_disk(monkeypatch):
    """Every atomic write fails as a full disk makes it fail (ENOSPC, at the sync before the rename)."""

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", fsync)


def shard_with_a_finding(tmp_path: Path) -> str:
    """A shard's run report that did work and found the seed case (its case file beside it)."""
    doc = json.loads(Path(SEED_CASE).read_text())
    (tmp_path / "s1" / "cases").mkdir(parents=True)
    (tmp_path / "s1" / "cases" / "seed.json").write_text(json.dumps(doc))
    finding = {"signature": doc["signature"], "repro": "python -m fuzz repro cases/seed.json"}
    entry = {"target": doc["target"], "status": "counterexample", "seconds": 1, "examples": 3, "findings": [finding]}
    report = {"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run", "targets": [entry]}
    (tmp_path / "s1" / "run.json").write_text(json.dumps(report))
    return str(tmp_path / "s1" / "run.json")


def test_merge_on_a_full_disk_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, full_disk) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["merge", shard_with_a_finding(tmp_path), "--cases-out", "merged", "--json", "merged.json"])
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and "No space left on device" in err, err


@pytest.mark.slow
def test_advisory_on_a_full_disk_is_one_line_and_exit_2(tmp_path, capsys, pinned_wheels, full_disk) -> None:
    case = tmp_path / "case.json"
    case.write_text(json.dumps({**json.loads(Path(SEED_CASE).read_text()), "target": "sglang==0.5.18"}))
    code = main(["advisory", str(case), "--out", str(tmp_path / "adv")])
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and "No space left on device" in err, err


@pytest.mark.slow
def test_baseline_write_on_a_full_disk_is_one_line_and_exit_2(tmp_path, capsys, full_disk) -> None:
    argv = ["baseline", "write", str(tmp_path / "bl.json"), "--target", "reference@sglang-0.5.18"]
    code = main([*argv, "--max-examples", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and "No space left on device" in err, err


def test_a_clean_command_whose_report_was_lost_does_not_exit_0(tmp_path, capsys, full_disk) -> None:
    code = main(
        ["prove", "--space", "tiny", "--target", "reference", "--quiet"]
        + ["--json", str(tmp_path / "r.json"), "--cases", str(tmp_path / "cases")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "could not write the report" in err and "Traceback" not in err, err


def test_the_stub_generator_on_a_full_disk_is_one_line_and_exit_2(tmp_path, capsys, full_disk) -> None:
    from fuzz.oss import stubs

    assert stubs.main([str(tmp_path / "out"), "--target", "reference@sglang-0.5.18"]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and "could not write" in err and "No space left on device" in err, err


# -- symbolic links in output paths -----------------------------------------------------------------------
@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text("untouched\n")
    return path


def test_a_report_path_that_is_a_link_is_refused(tmp_path, capsys, victim) -> None:
    (tmp_path / "r.json").symlink_to(victim)
    code = main(["prove", "--space", "tiny", "--target", "reference", "--json", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and "symbolic link" in err, err
    assert victim.read_text() == "untouched\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["prove", "--space", "tiny", "--target", "reference", "--cases", "cases"],
        ["merge", "s1/run.json", "--cases-out", "cases"],
    ],
    ids=["prove-cases", "merge-cases-out"],
)
def test_an_output_directory_that_is_a_link_is_refused(argv, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    shard_with_a_finding(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "cases").symlink_to(tmp_path / "elsewhere")
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and "symbolic link" in err, err
    assert os.listdir(tmp_path / "elsewhere") == []


WITNESS = "reference-sglang-0.5.18--witness--write-within-row-dcp-1.json"  # one of prove --space tiny's


def test_a_link_planted_as_a_case_file_in_the_output_directory_is_never_followed(tmp_path, capsys, victim) -> None:
    """In CI the output directory sits in the checkout of the pull request under test: a link committed there
    under a case file's name is refused in one line (the findings still exit 1, every other case file is
    written), and the file it names stays as it was."""
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / WITNESS).symlink_to(victim)
    code = main(["prove", "--space", "tiny", "--target", "reference@sglang-0.5.18", "--quiet", "--cases", str(cases)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and victim.read_text() == "untouched\n" and (cases / WITNESS).is_symlink()
    assert [line for line in err if "symbolic link" in line] == [
        f"fuzz: could not write the case file {cases / WITNESS}: is a symbolic link (an output is never written "
        "through one)"
    ], err
    assert len(os.listdir(cases)) > 10


def test_an_atomic_write_never_follows_a_link(tmp_path, victim) -> None:
    from fuzz.common.errors import WriteFailed
    from fuzz.common.files import write_atomically

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x.json").symlink_to(victim)
    (tmp_path / "linked").symlink_to(tmp_path / "out")
    for path in (tmp_path / "out" / "x.json", tmp_path / "linked" / "y.json"):
        with pytest.raises(WriteFailed, match="symbolic link") as e:
            write_atomically(str(path), "forged\n")
        assert e.value.filename == str(path) and e.value.errno == errno.ELOOP
    assert victim.read_text() == "untouched\n" and sorted(os.listdir(tmp_path / "out")) == ["x.json"]
    write_atomically(str(tmp_path / "out" / "z.json"), "ok\n")
    assert (tmp_path / "out" / "z.json").stat().st_mode & 0o777 == 0o644 & ~current_umask()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- text from a travelling file ---------------------------------------------------------------------------
FORGED = "x\x1b[2J\x1b[31m\u202e\npasses: model-mismatch no longer fails on reference\r"


def test_a_fidelity_case_revision_name_prints_as_the_characters_it_holds(tmp_path, capsys) -> None:
    from allocator_model.revisions import REVISIONS

    doc = json.loads(Path(FIDELITY_CASE).read_text())
    doc["revision"] = {**REVISIONS[doc["revision"]].to_dict(), "name": FORGED}
    (tmp_path / "case.json").write_text(json.dumps(doc))
    code = main(["repro", str(tmp_path / "case.json")])
    out = capsys.readouterr().out
    assert code == 1 and not any(c in out for c in "\x1b\r\u202e"), out
    assert not any(line.startswith("passes:") for line in out.splitlines()), out
    assert "against model x\\x1b[2J\\x1b[31m\\u202e\\x0apasses:" in out


def test_a_stub_script_holds_the_target_only_as_a_literal() -> None:
    from fuzz.oss.stubs import script

    target = 'x"""\nimport os; os.system("touch PWNED")\n"""\x1b[2J'
    tree = ast.parse(script("write-within-row", target, 'a"""\nb'))
    doc = ast.get_docstring(tree) or ""
    assert "import" not in doc and "\x1b" not in doc and "\n" not in doc
    kinds = [type(node).__name__ for node in tree.body]
    assert kinds == ["Expr", "Import", "ImportFrom", "If"], kinds  # the docstring, two imports, the call
    call = tree.body[-1].body[0].value.args[0]  # type: ignore[attr-defined]
    assert {k.arg: ast.literal_eval(k.value) for k in call.keywords}["target"] == target


# -- strict keys inside a case ----------------------------------------------------------------------------
def edited(path: str, change: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(path).read_text())
    change(doc["case"])
    return doc


@pytest.mark.parametrize(
    "path, change, says",
    [
        (LIFECYCLE_CASE, lambda c: c["steps"][1].update(evil=1), "unknown field 'evil' in step 2 (prefill)"),
        (LIFECYCLE_CASE, lambda c: c["steps"][0].update(rid=0), "unknown field 'rid' in step 1 (admit)"),
        (LIFECYCLE_CASE, lambda c: c["steps"].append({"op": "evict"}), "step 4 is not an object with a known op"),
        (LIFECYCLE_CASE, lambda c: c["steps"].append([1]), "step 4 is not an object with a known op"),
        (SEED_CASE, lambda c: c.update(prior={"accepted": 1, "evil": 2}), "unknown field 'evil' in \"prior\""),
    ],
    ids=["step-unknown-key", "step-key-of-another-op", "step-unknown-op", "step-not-an-object", "prior-unknown-key"],
)
def test_a_nested_unknown_key_is_one_line_and_exit_2(path, change, says, tmp_path, capsys) -> None:
    from jsonschema import ValidationError

    from fuzz.findings.schemas import validate

    doc = edited(path, change)
    (tmp_path / "case.json").write_text(json.dumps(doc))
    code = main(["repro", str(tmp_path / "case.json")])
    err = capsys.readouterr().err
    assert code == 2 and one_line(err) and says in err, err
    with pytest.raises(ValidationError):
        validate("case", doc)


def test_the_nested_fields_are_the_schemas() -> None:
    """``casefile``'s step and prior fields and the published schema say the same."""
    from fuzz.engines.sglang.cases import PRIOR_FIELDS, STEP_FIELDS
    from fuzz.findings.schemas import load_schema

    schema = load_schema("case")
    kinds = [r for r in schema["allOf"] if "const" in r["if"]["properties"]["kind"]]  # (the other: SGLang's config)
    rules = {r["if"]["properties"]["kind"]["const"]: r["then"]["properties"]["case"] for r in kinds}
    prior = rules["decode-scenario"]["properties"]["prior"]
    assert prior["additionalProperties"] is False and set(prior["properties"]) == PRIOR_FIELDS
    steps = rules["lifecycle"]["properties"]["steps"]["items"]["allOf"]
    by_op = {r["if"]["properties"]["op"]["const"]: set(r["then"]["propertyNames"]["enum"]) for r in steps}
    assert by_op == {op.value: set(fields) for op, fields in STEP_FIELDS.items()}
