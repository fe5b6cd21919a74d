"""The command line contract: exit statuses, one-line errors, case files that replay byte for byte.

Runs that exercise the entry point as a program (exit status, signals, files
on disk) spawn ``python -m fuzz``; bad input, which fails before any work,
calls ``fuzz.cli.main`` in-process.
"""

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from hermetic import unbroken

from allocator_model.revisions import REVISIONS
from fuzz.cli import main
from fuzz.common.profiles import get_profile
from fuzz.findings.repro import repro_command
from fuzz.targets.resolve import known_targets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fuzz(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args], capture_output=True, text=True, cwd=cwd or ROOT, env=env
    )


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def seed_bug_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    started = time.monotonic()
    r = fuzz(
        "run",
        "--target",
        "reference@sglang-0.5.18",
        "--profile",
        "ci",
        "--cases",
        str(d / "cases"),
        "--json",
        str(d / "report.json"),
        cwd=d,
    )
    r.wall_seconds = time.monotonic() - started  # what the report's "seconds" must fit in
    return d, r


@pytest.mark.slow
def test_seed_bug_exits_1_with_a_dcp_case_and_a_repro_line(seed_bug_run):
    d, r = seed_bug_run
    assert r.returncode == 1, r.stderr
    assert "COUNTEREXAMPLE write-within-row/dcp>1" in r.stdout
    block = unbroken(r.stdout).split("COUNTEREXAMPLE write-within-row/dcp>1")[1].split("repro: ")[0]  # its cause's lead
    assert "attn_dcp_size=" in block and "victim: row" in block
    assert f" repro: {repro_command()} " in unbroken(r.stdout).split("COUNTEREXAMPLE write-within-row/dcp>1")[1]


def test_json_report_shape(seed_bug_run):
    d, r = seed_bug_run
    report = json.loads((d / "report.json").read_text())
    (t,) = report["targets"]
    assert t["target"] == "reference@sglang-0.5.18" and t["status"] == "counterexample"
    # The campaign's own time: spent (not a default 0), within the process' lifetime.
    assert t["examples"] > 0 and 0 < t["seconds"] < r.wall_seconds
    f = next(f for f in t["findings"] if f["signature"] == "write-within-row/dcp>1")
    assert f["class"] == "write-within-row" and f["config"]["attn_dcp_size"] > 1
    assert f["repro"].startswith(f"{repro_command()} ")


@pytest.mark.slow
def test_repro_replays_byte_identically(seed_bug_run):
    d, r = seed_bug_run
    line = next(
        x for x in unbroken(r.stdout).splitlines() if x.lstrip().startswith("repro:") and "write-within-row-dcp-1" in x
    )
    path = line.split()[-1]
    first, second = fuzz("repro", path, cwd=d), fuzz("repro", path, cwd=d)
    assert first.returncode == second.returncode == 1
    assert first.stdout == second.stdout and "FAILS write-within-row/dcp>1" in first.stdout


def test_repro_exits_0_once_fixed(seed_bug_run, tmp_path):
    d, r = seed_bug_run
    path = next(x for x in unbroken(r.stdout).splitlines() if x.lstrip().startswith("repro:")).split()[-1]
    doc = json.loads((d / path).read_text())
    doc["target"] = "reference"
    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps(doc))
    out = fuzz("repro", str(fixed))
    assert out.returncode == 0 and "no longer fails" in out.stdout


@pytest.mark.slow
def test_reference_is_clean_under_ci(tmp_path):
    cases, report = tmp_path / "cases", tmp_path / "r.json"
    r = fuzz("run", "--target", "reference", "--profile", "ci", "--quiet", "--cases", str(cases), "--json", str(report))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not cases.exists() or os.listdir(cases) == []
    (t,) = json.loads(report.read_text())["targets"]
    # Clean because the examples ran: a whole ci round of them, past the covering set, and nothing found.
    assert t["status"] == "clean" and t["findings"] == [] and not t["interrupted"]
    assert t["examples"] >= get_profile("ci").max_examples, t["examples"]
    assert "COUNTEREXAMPLE" not in r.stdout and "clean" in r.stdout, r.stdout


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
def test_bad_input_is_one_line_and_exit_2(args, needle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no file may be written here
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("kvrow-fuzz: error: ") and needle in err, err
    assert len(err.strip().splitlines()) == 1
    assert [f for _, _, files in os.walk(tmp_path) for f in files] == []


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
def test_corrupt_case_files_are_one_line_and_exit_2(tmp_path, content, needle, capsys):
    p = tmp_path / "case.json"
    p.write_text(content)
    assert main(["repro", str(p)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and needle in err and len(err.strip().splitlines()) == 1, err


def test_targets_lists_every_revision(capsys):
    assert main(["targets"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    revisions = ["reference"] + [f"reference@{name}" for name in REVISIONS if name != "reference"]
    assert listed[: len(revisions)] == revisions  # every modeled revision, once, in order
    assert listed == [spec for spec, _ in known_targets()] and len(set(listed)) == len(listed)
    assert {"sglang==X.Y.Z", "sglang[@X.Y.Z]", "PATH[@X.Y.Z]"} <= set(listed[len(revisions) :])


READ_TIMEOUT_S = 240  # for one line of progress; generous under load, and the child is reaped either way
PROGRESS = re.compile(r"^\[(?P<target>[^\]]+)\] [^:]+: (?P<examples>\d+) examples, (?:.*, )?(?P<groups>\d+) groups, ")


def stderr_lines(child: subprocess.Popen) -> "queue.Queue[str | None]":
    """The child's stderr, line by line, read on a thread (None at its end): reads can time out."""
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in child.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def wait_for_a_group(lines: "queue.Queue[str | None]") -> str:
    """Block until a progress line reports a group found (the run is then mid-campaign); that line."""
    seen = []
    while True:
        line = lines.get(timeout=READ_TIMEOUT_S)  # queue.Empty: a test failure, never a hang
        assert line is not None, "the run ended before reporting a group: " + "".join(seen)
        seen.append(line)
        m = PROGRESS.match(line)
        if m and int(m["groups"]) > 0:
            return line


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_run_reports_what_it_found_and_leaves_no_partial_case(tmp_path, sig):
    """A fixed seed; the signal once a progress line reports a group (not after a clock); the child always reaped."""
    cases = tmp_path / "cases"
    with open(tmp_path / "stdout", "w+") as stdout:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fuzz",
                "run",
                "--target",
                "reference@pre-26972",
                "--profile",
                "ci",
                "--seed",
                "1",
                "--max-examples",
                "1000000",  # never ends by itself: the signal ends it
                "--cases",
                str(cases),
                "--json",
                str(tmp_path / "r.json"),
            ],
            stdout=stdout,  # a file: a full pipe can never stall the child
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": ROOT},
        )
        try:
            lines = stderr_lines(child)
            assert PROGRESS.match(wait_for_a_group(lines))["target"] == "reference@pre-26972"
            child.send_signal(sig)
            assert child.wait(timeout=READ_TIMEOUT_S) == 1
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
        stdout.seek(0)
        out = stdout.read()
    assert "interrupted" in out and "COUNTEREXAMPLE" in out, out
    names = os.listdir(cases)
    assert names and all(n.endswith(".json") and not n.startswith(".") for n in names)
    for n in names:
        json.loads((cases / n).read_text())
    (t,) = json.loads((tmp_path / "r.json").read_text())["targets"]
    assert t["interrupted"] is True and t["status"] == "counterexample" and t["findings"]
    written = [f["repro"] for f in t["findings"]]  # each group's case file, and its representative case's
    written += [
        f["representative"]["finding"]["repro"] for f in t["findings"] if f.get("representative", {}).get("found")
    ]
    assert sorted(os.path.basename(r.split()[-1]) for r in written) == sorted(names)


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
        "--pin",
        "kv_pool=standard",
        "--cases",
        str(tmp_path),
        "--json",
        str(tmp_path / "r.json"),
    )
    assert r.returncode == 1, r.stdout + r.stderr
    found = json.loads((tmp_path / "r.json").read_text())["targets"][0]["findings"]
    (f,) = (f for f in found if f["kind"] != "table-case")  # FA3's page table's findings aside (pinned too)
    assert f["signature"] == "write-within-row/alloc-page-1"
    for f in found:
        assert f["config"]["speculative_algorithm"] == "DFLASH" and f["config"]["page_size"] == 1


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["rnu"], "did you mean 'run'?"),
        (["run", "--target", "refrence"], "did you mean 'reference'?"),
        (["run", "--target", "reference@sglang-0.5.2"], "did you mean 'sglang-0.5.23'?"),
        (["prove", "--target", "reference", "--heatmap-pool", "unified-mambaa"], "unknown kind of KV pool"),
    ],
)
def test_a_mistyped_name_is_one_line_with_the_closest_known(argv, suggestion, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert suggestion in err and len(err.strip().splitlines()) == 1


def test_every_modeled_release_is_a_model_target():
    from allocator_model.revisions import RELEASE_REVISIONS
    from fuzz.targets.resolve import resolve_target

    for release, revision in RELEASE_REVISIONS.items():
        assert resolve_target(f"reference@sglang-{release}").revision.name == revision


def test_the_light_command_table_is_what_the_commands_register():
    import argparse

    from fuzz.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {c.dest: c.help for c in sub._choices_actions} == COMMANDS


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["rnu"], []])
def test_the_top_level_help_and_a_mistyped_command_import_no_torch_numpy_or_hypothesis(argv):
    import subprocess
    import sys

    code = (
        "import sys\nfrom fuzz.cli import main\nstatus = main(sys.argv[1:])\n"
        "heavy = [m for m in ('torch', 'numpy', 'hypothesis') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\nsys.exit(status)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in done.stderr, done.stderr
    assert done.returncode == (0 if argv in (["--help"], ["--version"]) else 2)


# Usage errors whose value is checked by a light copy of a heavy module's names (profiles, spaces, pools).
TYPED_USAGE_ERRORS = [
    ["run", "--target", "reference", "--jobs", "abc"],
    ["run", "--target", "reference", "--profile", "nite"],
    ["lifecycle", "--target", "reference", "--steps", "0"],
    ["prove", "--target", "reference", "--space", "ful"],
    ["prove", "--target", "reference", "--heatmap-pool", "unified"],
    ["matrix", "--profile", "cii"],
    ["fidelity", "--target", "sglang", "--configs", "3", "--per-kind", "2"],
    ["baseline", "write", "b.json", "--target", "reference", "--profile", "dve"],
]


def test_every_command_help_and_usage_error_imports_no_torch_numpy_or_hypothesis():
    """Each command's parser is light (its engine is imported when it runs): one process runs them all."""
    import contextlib
    import io

    from fuzz.cli import COMMANDS

    runs = [[c, "--help"] for c in COMMANDS] + [[c, "--no-such-option"] for c in COMMANDS] + TYPED_USAGE_ERRORS
    code = (
        "import contextlib, io, json, sys\nfrom fuzz.cli import main\nstatuses = []\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        try:\n            statuses.append(main(argv))\n"
        "        except SystemExit as e:\n            statuses.append(e.code)\n"
        "heavy = [m for m in ('torch', 'numpy', 'hypothesis') if m in sys.modules]\n"
        "print(json.dumps({'statuses': statuses, 'heavy': heavy}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, json.dumps(runs)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["heavy"] == [], got["heavy"]
    assert dict(zip(map(" ".join, runs), got["statuses"], strict=True)) == {
        " ".join(argv): 0 if argv[1] == "--help" else 2 for argv in runs
    }
    with contextlib.redirect_stderr(io.StringIO()) as err:  # in-process: the messages the light parsers give
        assert [main(argv) for argv in TYPED_USAGE_ERRORS[3:6]] == [2, 2, 2]
    assert "did you mean 'full'?" in err.getvalue() and "did you mean 'ci'?" in err.getvalue()
    assert "unknown kind of KV pool 'unified' (known: standard, swa," in err.getvalue()


def test_the_parsers_light_copies_are_their_heavy_homes():
    """What a parser names without importing the module that defines it, held equal (the scalar defaults have one
    light home instead, ``fuzz.common.defaults``, that parser and engine both import)."""
    from allocator_model.pools import KVPool
    from fuzz.engines.sglang.fidelity import cli as fidelity_cli
    from fuzz.engines.sglang.fidelity import matrix
    from fuzz.engines.sglang.prove import space
    from fuzz.prove import cli as prove_cli

    assert prove_cli.SPACE_NAMES == tuple(sorted(space.SPACES))
    assert prove_cli.POOL_KINDS == tuple(k.value for k in KVPool)
    assert (fidelity_cli.DEFAULT_EXAMPLES, fidelity_cli.DEFAULT_OUT) == (matrix.DEFAULT_EXAMPLES, matrix.DEFAULT_OUT)


def test_every_usage_and_help_line_names_the_program_kvrow_fuzz(capsys):
    """One name (issue 35): the top-level help, each command's help and usage error, a mistyped command and a
    missing one all say ``kvrow-fuzz``; ``python -m fuzz`` and ``./kvrow`` are the same command, never printed as
    the program's name, and no line calls the program ``fuzz``."""
    from fuzz.cli import COMMANDS

    runs = [["--help"], [], ["rnu"], ["baseline", "write", "--help"]]
    runs += [[c, "--help"] for c in COMMANDS] + [[c, "--no-such-option"] for c in COMMANDS]
    for argv in runs:
        assert main(argv) in (0, 2), argv
        out, err = capsys.readouterr()
        text = out + err
        assert "python -m fuzz" not in text, (argv, text)
        for line in text.splitlines():
            assert not re.match(r"\s*(usage: )?fuzz\b(?!-)", line), (argv, line)  # the old name, as a program
        if argv[-1:] == ["--help"]:
            assert out.startswith(f"usage: kvrow-fuzz {'' if argv == ['--help'] else argv[0] + ' '}"), out
        else:
            assert err.startswith("kvrow-fuzz: error: ") and "(see: kvrow-fuzz " in err, err
