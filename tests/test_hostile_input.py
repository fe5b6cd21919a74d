"""Hostile input, as an attacker and a careless user would give it: one line, exit 2, and nothing touched.

Every input below (case files, pins, flags, targets, output paths) must be
refused before any work: exactly one line on stderr naming the problem,
exit status 2, no traceback, nothing on stdout, and no file changed,
created or removed outside the output directory the command names (which
a command may create, empty, when it checks its outputs first).  The
commands run in-process (``fuzz.cli.main``) in a scratch directory, so the
whole suite takes seconds.

Also here: a case past the size limits is refused before torch is even
imported (under a 2 GiB address-space limit), the early check agrees with
the model's own limits word for word, and ``matrix --expect`` is read
bounded.
"""

from __future__ import annotations

import copy
import json
import os
import resource
import stat
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from allocator_model.config import LIMITS, TENSOR_BUDGET, ConfigError, ServingConfig
from fuzz.cli import main
from fuzz.common.bounds import MAX_CASE_BYTES, MAX_EXPECT_BYTES, config_limits, size_problem
from fuzz.common.errors import MAX_ERROR_CHARS
from fuzz.findings.regression import regression_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE_CASE = next(p for p in regression_files() if "reference-sglang-0.5.23--write-within-row" in p)
DEFAULT_OUTPUTS = ("fuzz-cases", "fuzz-matrix")  # what a command may create when it checks its outputs
EVIL = 'open("MARKER", "w").write("ran")\n'  # a target file that must never run


def base_doc() -> dict[str, Any]:
    with open(BASE_CASE) as f:
        doc: dict[str, Any] = json.load(f)
    return doc


DELETE = object()


def edit(**changes: Any) -> Callable[[], str]:
    """The base case with fields changed (``config__page_size=0`` sets doc["config"]["page_size"]; DELETE drops)."""

    def text() -> str:
        doc = copy.deepcopy(base_doc())
        for key, value in changes.items():
            *parents, leaf = key.split("__")
            node = doc
            for p in parents:
                node = node[p]
            if value is DELETE:
                del node[leaf]
            else:
                node[leaf] = value
        return json.dumps(doc)

    return text


def raw(content: str | bytes) -> Callable[[], str | bytes]:
    return lambda: content


# (id, the case file's content, what the one line must say)
CASE_FILES: list[tuple[str, Callable[[], str | bytes], str]] = [
    ("empty-file", raw(""), "not valid JSON"),
    ("not-json", raw("{not json"), "not valid JSON"),
    ("binary", raw(b"\xff\xfe\x00garbage"), "not UTF-8"),
    ("json-array", raw("[]"), "not a kvrow-fuzz case file"),
    ("json-string", raw('"case"'), "not a kvrow-fuzz case file"),
    ("json-null", raw("null"), "not a kvrow-fuzz case file"),
    ("other-schema", edit(schema="other"), "not a kvrow-fuzz case file"),
    ("schema-version-2", edit(schema_version=2), "schema_version 2"),
    ("schema-version-text", edit(schema_version="1"), "schema_version '1'"),
    ("no-target", edit(target=DELETE), "missing the field 'target'"),
    ("no-config", edit(config=DELETE), "missing the field 'config'"),
    ("no-case", edit(case=DELETE), "missing the field 'case'"),
    ("no-property", edit(property=DELETE), "missing the field 'property'"),
    ("unknown-kind", edit(kind="nope"), "unknown kind 'nope'"),
    ("kind-number", edit(kind=5), "unknown kind 5"),
    ("target-number", edit(target=5), '"target" must be a target spec string'),
    ("target-empty", edit(target=""), '"target" must be a target spec string'),
    ("target-a-bare-name", edit(target="nonsense"), "never runs code it names"),
    ("target-unknown-revision", edit(target="reference@sglang-9.9.9"), "unknown revision"),
    ("target-python-file", edit(target="evil.py"), "never runs code it names"),
    ("target-installed-sglang", edit(target="sglang"), "never runs code it names"),
    ("unknown-property", edit(property="nope"), "unknown property 'nope'"),
    ("property-number", edit(property=5), "unknown property 5"),
    ("signature-other-property", edit(signature="drafts-within-allocation/tree"), "not write-within-row/GROUP"),
    ("signature-number", edit(signature=5), "has signature 5"),
    ("signature-garbage", edit(signature="x"), "has signature 'x'"),
    ("config-list", edit(config=[]), '"config" and "case" must be JSON objects'),
    ("case-string", edit(case="x"), '"config" and "case" must be JSON objects'),
    ("context-len-1e9", edit(config__context_len=10**9), "context_len 1000000000 is past this tool's limit"),
    ("context-len-1e400", edit(config__context_len=10**400), "context_len ~1e400 is past this tool's limit"),
    ("page-size-2-40", edit(config__page_size=2**40), "page_size 1099511627776 is past this tool's limit"),
    ("running-requests-1e9", edit(config__max_running_requests=10**9), "max_running_requests 1000000000 is past"),
    ("dcp-1e6", edit(config__attn_dcp_size=10**6), "attn_dcp_size 1000000 is past this tool's limit"),
    ("draft-tokens-1e6", edit(config__speculative_num_draft_tokens=10**6), "speculative_num_draft_tokens 1000000"),
    (
        "past-the-tensor-budget",
        edit(config__context_len=LIMITS["context_len"], config__max_running_requests=LIMITS["max_running_requests"]),
        f"past this tool's budget of {TENSOR_BUDGET}",
    ),
    ("context-len-negative", edit(config__context_len=-5), "context_len must be >= 1"),
    ("context-len-text", edit(config__context_len="big"), "context_len must be an integer"),
    ("context-len-float", edit(config__context_len=1.5), "context_len must be an integer"),
    ("context-len-bool", edit(config__context_len=True), "context_len must be an integer"),
    ("context-len-nan", raw(edit()().replace('"context_len": 8', '"context_len": NaN')), "holds NaN, which is not"),
    ("page-size-zero", edit(config__page_size=0), "page_size must be >= 1"),
    ("unknown-config-field", edit(config__page_sizes=4), "unknown configuration field 'page_sizes'"),
    ("unknown-algorithm", edit(config__speculative_algorithm="NOPE"), "NOPE"),
    ("committed-len-out-of-range", edit(case__committed_len=99), "outside [1,"),
    ("case-empty", edit(case={}), "malformed case"),
    ("integer-of-5000-digits", raw('{"schema": ' + "9" * 5000 + "}"), "case file case.json:"),
    ("nested-100k-deep", raw("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    ("over-1-MiB", raw(" " * MAX_CASE_BYTES + "{}"), f"is over {MAX_CASE_BYTES} bytes"),
]

# (id, argv, what the one line must say); run in a scratch directory holding the files of ``arena``.
ARGV: list[tuple[str, list[str], str]] = [
    # case files that are not files
    ("repro-missing-file", ["repro", "nope.json"], "does not exist"),
    ("repro-directory", ["repro", "adir"], "is a directory"),
    ("repro-fifo", ["repro", "fifo"], "is not a regular file"),
    ("repro-dev-zero", ["repro", "/dev/zero"], "is not a regular file"),
    ("repro-dev-null-link", ["repro", "devnull-link"], "is not a regular file"),
    ("repro-no-case", ["repro"], "the following arguments are required: CASE.json"),
    ("emit-test-python-file-target", ["repro", "evil-case.json", "--emit-test"], "never runs code it names"),
    ("repro-local-target-with-version", ["repro", "evil-case.json", "--sglang-version", "0.5.18"], "--target SPEC"),
    # pins
    ("pin-power-expression", ["run", "--target", "reference", "--pin", "page_size=2**40"], "page_size must be"),
    ("pin-past-limit", ["run", "--target", "reference", "--pin", "page_size=1099511627776"], "past this tool's limit"),
    ("pin-repeated", ["run", "--target", "reference", "--pin", "page_size=4", "--pin", "page_size=8"], "given twice"),
    ("pin-no-value", ["run", "--target", "reference", "--pin", "page_size"], "expects NAME=VALUE"),
    ("pin-no-name", ["run", "--target", "reference", "--pin", "=4"], "expects NAME=VALUE"),
    ("pin-unknown-field", ["run", "--target", "reference", "--pin", "nosuch=1"], "unknown configuration field"),
    ("pin-zero-page", ["run", "--target", "reference", "--pin", "page_size=0"], "page_size must be >= 1"),
    ("pin-text-topk", ["run", "--target", "reference", "--pin", "speculative_eagle_topk=x"], "must be an integer"),
    ("pin-zero-dcp", ["run", "--target", "reference", "--pin", "attn_dcp_size=0"], "attn_dcp_size must be >= 1"),
    ("pin-negative-context", ["run", "--target", "reference", "--pin", "context_len=-1"], "context_len must be >= 1"),
    (
        "pin-candidates-past-63",
        ["run", "--target", "reference", "--pin", "speculative_adaptive_candidate_steps=[1,99]"],
        "at most 63",
    ),  # noqa: E501
    ("target-device", ["run", "--target", "/dev/zero"], "is not a regular file"),
    ("pin-deep-json", ["run", "--target", "reference", "--pin", "page_size=" + "[" * 50_000], "page_size must be"),
    (
        "pin-uno-under-dcp",  # UNO alone is fine now (its draft count is drawn); under DCP SGLang refuses it
        ["run", "--target", "reference", "--pin", "speculative_algorithm=UNO", "--pin", "attn_dcp_size=2"],
        "invalid configuration",
    ),  # noqa: E501
    ("lifecycle-pin-unknown", ["lifecycle", "--target", "reference", "--pin", "nosuch=1"], "unknown configuration"),
    # pins a release has no launch of (each draw would be refused: Hypothesis' health check, not one line, before)
    (
        "pin-dcp-before-dcp",
        ["run", "--target", "reference@sglang-0.5.13", "--pin", "attn_dcp_size=2"],
        "launches no configuration with these pins: sglang-0.5.13 has no decode context parallelism",
    ),
    (
        "pin-algorithm-before-it",
        ["run", "--target", "reference@sglang-0.5.13", "--pin", "speculative_algorithm=UNO"],
        "does not run speculative_algorithm UNO",
    ),
    (
        "pin-pool-before-it",
        ["lifecycle", "--target", "reference@sglang-0.5.13", "--pin", "kv_pool=unified-mamba"],
        "has no kv_pool unified-mamba",
    ),
    # flags
    ("max-examples-zero", ["run", "--target", "reference", "--max-examples", "0"], "positive integer"),
    ("max-examples-negative", ["run", "--target", "reference", "--max-examples", "-3"], "positive integer"),
    ("max-examples-text", ["run", "--target", "reference", "--max-examples", "many"], "expected an integer"),
    ("seed-text", ["run", "--target", "reference", "--seed", "lucky"], "expected an integer seed"),
    ("unknown-profile", ["run", "--target", "reference", "--profile", "weekly"], "invalid choice"),
    ("unknown-flag", ["run", "--target", "reference", "--frobnicate"], "unrecognized arguments"),
    ("run-without-target", ["run"], "--target"),
    ("unknown-command", ["frobnicate"], "invalid choice"),
    ("no-command", [], "required: command"),
    ("lifecycle-steps-zero", ["lifecycle", "--target", "reference", "--steps", "0"], "positive integer"),
    ("prove-unknown-space", ["prove", "--target", "reference", "--space", "huge"], "invalid choice"),
    ("prove-unknown-algorithm", ["prove", "--target", "reference", "--algorithm", "NOPE"], "NOPE"),
    ("prove-heatmap-not-png", ["prove", "--target", "reference", "--heatmap", "map.txt"], "--heatmap"),
    ("fidelity-unknown-revision", ["fidelity", "--target", "sglang==0.5.23", "--revision", "nope"], "unknown revision"),
    ("fidelity-configs-zero", ["fidelity", "--target", "sglang==0.5.23", "--configs", "0"], "positive integer"),
    ("matrix-releases-empty", ["matrix", "--releases", ""], "names no release"),
    ("matrix-releases-comma", ["matrix", "--releases", ","], "names no release"),
    ("matrix-releases-garbage", ["matrix", "--releases", "latest"], "--releases"),
    ("matrix-releases-empty-range", ["matrix", "--releases", "0.5.23..0.5.16"], "empty release range"),
    ("matrix-fidelity-configs-negative", ["matrix", "--fidelity-configs", "-1"], "integer >= 0"),
    ("matrix-jobs-zero", ["matrix", "--jobs", "0"], "positive integer"),
    ("fidelity-page-table-steps-negative", ["fidelity", "--target", "reference", "--page-table-steps", "-1"], ">= 0"),
    ("matrix-page-table-steps-garbage", ["matrix", "--page-table-steps", "many"], "expected an integer"),
    # targets
    ("target-unknown", ["run", "--target", "nonsense"], "unknown target"),
    ("target-empty", ["run", "--target", ""], "unknown target"),
    ("target-unknown-revision", ["run", "--target", "reference@nope"], "unknown revision"),
    ("target-missing-file", ["run", "--target", "/nonexistent/allocation_sizing.py"], "does not exist"),
    ("target-directory-without-sglang", ["run", "--target", "adir"], "is a directory without"),
    ("lifecycle-target-unknown", ["lifecycle", "--target", "nonsense"], "unknown target"),
    ("prove-target-unknown", ["prove", "--target", "nonsense"], "unknown target"),
    ("fidelity-target-unknown", ["fidelity", "--target", "nonsense"], "unknown target"),
    # output paths
    ("cases-is-a-file", ["run", "--target", "reference", "--cases", "afile"], "--cases: afile is not a directory"),
    ("cases-under-a-file", ["run", "--target", "reference", "--cases", "afile/sub"], "--cases"),
    ("cases-is-a-fifo", ["run", "--target", "reference", "--cases", "fifo"], "is not a directory"),
    ("cases-in-proc", ["run", "--target", "reference", "--cases", "/proc/kvrow-cases"], "--cases: cannot create"),
    ("json-is-a-directory", ["run", "--target", "reference", "--json", "adir"], "--json: adir is a directory"),
    ("json-in-proc", ["run", "--target", "reference", "--json", "/proc/x.json"], "--json"),
    ("json-under-a-file", ["run", "--target", "reference", "--json", "afile/x.json"], "--json"),
    ("json-dev-full", ["run", "--target", "reference", "--json", "/dev/full"], "is not a regular file"),
    ("json-symlink-to-dev-null", ["run", "--target", "reference", "--json", "devnull-link"], "is not a regular file"),
    ("json-fifo", ["run", "--target", "reference", "--json", "fifo"], "is not a regular file"),
    ("lifecycle-cases-is-a-file", ["lifecycle", "--target", "reference", "--cases", "afile"], "not a directory"),
    ("prove-json-directory", ["prove", "--target", "reference", "--json", "adir"], "is a directory"),
    ("prove-heatmap-in-proc", ["prove", "--target", "reference", "--heatmap", "/proc/x.png"], "--heatmap"),
    ("fidelity-json-directory", ["fidelity", "--target", "sglang==0.5.23", "--json", "adir"], "is a directory"),
    ("matrix-out-is-a-file", ["matrix", "--releases", "0.5.18", "--out", "afile"], "--out: afile is not a directory"),
    ("matrix-expect-missing", ["matrix", "--releases", "0.5.18", "--expect", "nope.json"], "does not exist"),
    ("matrix-expect-fifo", ["matrix", "--releases", "0.5.18", "--expect", "fifo"], "is not a regular file"),
    ("matrix-expect-huge", ["matrix", "--releases", "0.5.18", "--expect", "huge.json"], f"over {MAX_EXPECT_BYTES}"),
    ("matrix-expect-not-json", ["matrix", "--releases", "0.5.18", "--expect", "afile"], "not valid JSON"),
    ("matrix-expect-deep", ["matrix", "--releases", "0.5.18", "--expect", "deep.json"], "nested too deeply"),
    ("matrix-expect-list", ["matrix", "--releases", "0.5.18", "--expect", "list.json"], "not a kvrow-fuzz baseline"),
    ("matrix-expect-no-release", ["matrix", "--releases", "0.5.18", "--expect", "other.json"], "no entry for"),
    ("matrix-expect-number", ["matrix", "--releases", "0.5.18", "--expect", "number.json"], "required must be true"),
    ("matrix-expect-old-format", ["matrix", "--releases", "0.5.18", "--expect", "old.json"], "not a kvrow-fuzz"),
    ("matrix-expect-bad-property", ["matrix", "--releases", "0.5.18", "--expect", "typo.json"], "property 'nope'"),
]


@pytest.fixture
def arena(tmp_path, monkeypatch):
    """A scratch working directory holding the files the hostile inputs name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVROW_FUZZ_DATABASE", str(tmp_path / "db"))  # nothing may be stored: it would show
    (tmp_path / "afile").write_text("a regular file, not JSON\n")
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    os.symlink("/dev/null", tmp_path / "devnull-link")
    (tmp_path / "evil.py").write_text(EVIL)
    (tmp_path / "evil-case.json").write_text(edit(target="evil.py")())
    (tmp_path / "huge.json").write_text(" " * MAX_EXPECT_BYTES + "{}")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "list.json").write_text("[]")
    known = '{"schema": "kvrow-fuzz/baseline", "schema_version": 2, "target": "sglang==%s", "entries": [%s]}'
    (tmp_path / "other.json").write_text(known % ("0.5.19", ""))  # a baseline of another release
    entry = '{"property": "%s", "table": "req_to_token", "known": "page-1-headroom"%s}'
    (tmp_path / "number.json").write_text(known % ("0.5.18", entry % ("write-within-row", ', "required": 5')))
    (tmp_path / "typo.json").write_text(known % ("0.5.18", entry % ("nope", "")))
    (tmp_path / "old.json").write_text('{"0.5.18": {"required": ["write-within-row/dcp>1"]}}')  # the old lists
    return tmp_path


def outputs_named(argv: list[str]) -> set[str]:
    """The output directories a command may create: the ones it names, or its defaults."""
    named = {argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--cases", "--out")}
    return named | set(DEFAULT_OUTPUTS)


def snapshot(root: str, outputs: set[str]) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root`` (type, mode, size, mtime, link target), but those inside an output directory."""
    found: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if any(rel == d or rel.startswith(d + os.sep) for d in outputs) and (
                stat.S_ISDIR(st.st_mode) or rel not in outputs
            ):
                continue
            link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
            found[rel] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, link)
    return found


def files_in(root: str, outputs: set[str]) -> list[str]:
    """Files written inside the output directories (a refused command writes none)."""
    return [
        os.path.join(dirpath, f)
        for d in outputs
        if os.path.isdir(os.path.join(root, d))
        for dirpath, _, files in os.walk(os.path.join(root, d))
        for f in files
    ]


def refused(argv: list[str], root: str, capsys: Any) -> str:
    """Run ``argv`` in-process: exit 2, one line on stderr, nothing on stdout, nothing changed; the line."""
    outputs = outputs_named(argv)
    before = snapshot(root, outputs)
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, (status, out, err)
    assert out == "", out
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith("kvrow-fuzz: error: "), err
    assert len(err) <= len("kvrow-fuzz: error: \n") + MAX_ERROR_CHARS, err  # a huge value is never echoed whole
    assert snapshot(root, outputs) == before, "a refused command changed files outside its output directory"
    assert files_in(root, outputs) == [], "a refused command wrote into its output directory"
    assert not os.path.exists(os.path.join(root, "MARKER")), "a case file ran the code it names"
    return err


@pytest.mark.parametrize("make, says", [pytest.param(m, s, id=i) for i, m, s in CASE_FILES])
@pytest.mark.parametrize("emit", [False, True], ids=["repro", "emit-test"])
def test_a_hostile_case_file_is_one_line_and_exit_2(arena, capsys, make, says, emit):
    content = make()
    path = arena / "case.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    err = refused(["repro", "case.json", *(["--emit-test"] if emit else [])], str(arena), capsys)
    assert says in err, err


@pytest.mark.parametrize("argv, says", [pytest.param(a, s, id=i) for i, a, s in ARGV])
def test_a_hostile_command_line_is_one_line_and_exit_2(arena, capsys, argv, says):
    err = refused(argv, str(arena), capsys)
    assert says in err, err


def test_the_suite_holds_at_least_60_distinct_inputs():
    ids = [i for i, _, _ in CASE_FILES] + [f"argv:{i}" for i, _, _ in ARGV]
    assert len(set(ids)) == len(ids) and len(ids) >= 60


def test_the_snapshot_sees_a_change_outside_the_output_directory(arena):
    """The suite's own check can fail: a file written beside the cases directory, or into it, is seen."""
    outputs = outputs_named(["run", "--cases", "out"])
    before = snapshot(str(arena), outputs)
    (arena / "out").mkdir()
    assert snapshot(str(arena), outputs) == before  # the output directory may be created
    (arena / "out" / "case.json").write_text("{}")
    assert files_in(str(arena), outputs) == [str(arena / "out" / "case.json")]
    os.utime(arena / "afile", ns=(1, 1))
    assert snapshot(str(arena), outputs) != before


# -- bounded before torch -------------------------------------------------------

CHILD = """\
import sys
from fuzz.cli import main
status = main(["repro", sys.argv[1]])
heavy = sorted(m for m in ("torch", "hypothesis", "numpy") if m in sys.modules)
print("imported:", ",".join(heavy) or "nothing heavy")
sys.exit(status)
"""


def two_gib_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_case_past_the_limits_is_refused_before_torch_under_2_gib(tmp_path):
    """context_len 10**9 once ended in an out-of-memory kill after ~20 GB; now: one line, exit 2, no torch."""
    case = tmp_path / "case.json"
    case.write_text(edit(config__context_len=10**9)())
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(case)],
        capture_output=True,
        text=True,
        timeout=120,  # generous for a loaded machine; it takes a fraction of a second
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ROOT},
        preexec_fn=two_gib_address_space,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"kvrow-fuzz: error: {case}: context_len 1000000000 is past this tool's limit of 1048576\n"
    assert done.stdout == "imported: nothing heavy\n"


def test_the_early_limits_are_the_models():
    assert config_limits() == (LIMITS, TENSOR_BUDGET)


@pytest.mark.parametrize(
    "changes",
    [
        {"context_len": 10**9},
        {"context_len": 10**400},
        {"page_size": 2**40},
        {"speculative_num_steps": 65},
        {"context_len": LIMITS["context_len"], "max_running_requests": LIMITS["max_running_requests"]},
    ],
    ids=["context-len", "huge-context-len", "page-size", "steps", "budget"],
)
def test_the_early_check_says_what_the_model_says(changes):
    config = {**base_doc()["config"], **changes}
    with pytest.raises(ConfigError) as late:
        ServingConfig.from_dict(config)
    assert size_problem(config) == str(late.value)


def test_the_early_check_leaves_valid_sizes_to_the_model():
    assert size_problem(base_doc()["config"]) is None
    assert size_problem({"context_len": "big", "page_size": None}) is None  # the model's rules, not a size
