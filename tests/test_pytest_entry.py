"""pytest as a first-class entry: the kvrow plugin (fuzz/pytest_plugin.py) runs the properties from any repository.

Every property and the lifecycle invariants fail through it on a planted
revision and pass on the reference; from a directory laid out like SGLang's
repository, the documented command fails on a 0.5.23-shaped sizing file with
the page-1 group and passes once the reference's headroom rule is applied to
that copy. Runs are subprocesses (the plugin's options, its profile and
exit statuses are what is tested), kept short: a few examples per property
and, for the planted revisions, no shrinking (``NO_SHRINK``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

from hermetic import unbroken
from pytest import mark  # ``pytest`` itself is the name of the helper below that runs it

ROOT = Path(__file__).resolve().parent.parent
DEMO_SHAPE = ROOT / "tests" / "sglang_shapes" / "plugin_demo_0_5_23.py"
CHECKOUT_PATH = "python/sglang/srt/mem_cache/allocation_sizing.py"  # where SGLang's repository keeps the file
DECODE = "fuzz/properties/test_kvrow_decode.py"
LIFECYCLE = "fuzz/properties/test_kvrow_lifecycle.py"

# A plugin for the test runs only: the session's profile without the shrink phase (a failure is found, not minimized).
NO_SHRINK = """
import pytest
from hypothesis import Phase, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    phases = tuple(p for p in settings.default.phases if p is not Phase.shrink)
    settings.register_profile("no-shrink", parent=settings.default, phases=phases)
    settings.load_profile("no-shrink")
"""

# property test -> a planted revision it fails on (allocator_model/revisions.py)
PLANTED = {
    "test_every_rounded_write_ends_within_its_row": ("reference@sglang-0.5.18", "write-within-row/"),
    "test_no_other_row_changes": ("reference@sglang-0.5.18", "neighbour-rows-untouched/"),
    "test_drafts_stay_inside_what_was_allocated": ("reference@sglang-0.5.18", "drafts-within-allocation/"),
    "test_growth_is_page_aligned_on_paged_allocators": ("reference@pre-31616", "page-aligned-growth/"),
    "test_lifecycle_invariants_hold": ("reference@sglang-0.5.18", " (lifecycle, "),  # its block: the script's steps
}
MAX_FAILURE_LINES = 40  # a failing property's text, at most (fuzz/pytest_failures.py)
# What a failure text must not show: this tool's traceback, reprs and source, Hypothesis' own report of the example
# (a reference target's cause names allocator_model/sizing.py: there it is the target's own code).
INTERNALS = ("Traceback", "fuzz/", "hypothesis/", "Target(", "Finding(", "Falsifying", "Explanation", "Draw 1")


def pytest(*args: str, cwd: Path = ROOT, plugins: Path | None = None, env: dict | None = None):
    """``python -m pytest ARGS`` in ``cwd`` (no xdist, no cache), with ``plugins`` importable (``-p NAME``)."""
    path = os.pathsep.join(str(p) for p in (plugins, ROOT) if p)
    full = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    full.update({"PYTHONPATH": path, **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
    )


def no_shrink(tmp_path: Path) -> Path:
    d = tmp_path / "plugins"
    d.mkdir(exist_ok=True)
    (d / "kvrow_no_shrink.py").write_text(NO_SHRINK)
    return d


def junit(path: Path, text_only: bool = False) -> dict[str, str | None]:
    """JUnit test name -> its failure message and text (``text_only``: the text, pytest's whole failure text; None
    when it passed)."""
    cases = {}
    for tc in ET.parse(path).iter("testcase"):
        failure = tc.find("failure")
        message = "" if failure is None or text_only else failure.get("message", "")
        cases[tc.get("name", "")] = None if failure is None else message + (failure.text or "")
    return cases


def assert_reads_as_run_prints(failures: dict[str, str | None], stdout: str, cases: Path) -> None:
    """Each failure text: the ROOT CAUSES section ``run`` prints, at most MAX_FAILURE_LINES lines of at most 120
    columns but a repro line, a repro line whose case file is there, nothing of this tool's internals; and the
    session printed no warnings summary."""
    assert "warnings summary" not in stdout, stdout[-3000:]
    for name, text in failures.items():
        if text is None:
            continue
        lines = text.splitlines()
        assert lines and len(lines) <= MAX_FAILURE_LINES, (name, len(lines), text)
        assert any(line.startswith("ROOT CAUSES on ") for line in lines), (name, text)
        whole = unbroken(text).splitlines()  # a repro line past the width is broken with a shell continuation
        repros = [line.split(" repro ", 1)[1] for line in whole if line.strip().startswith("repro: ")]
        assert repros and all((cases / Path(r.split()[0]).name).is_file() for r in repros), (name, repros)
        # as run prints it: a lone word past the width (a case file's path) stays whole, and a block's headline
        # (what a reader greps the block by: tests/test_report_text.py)
        heads = [line for line in lines if line.lstrip().startswith("COUNTEREXAMPLE ")]
        assert all(len(line) <= 120 or len(line.split()) == 1 or line in heads for line in lines), (name, text)
        shown = [word for word in INTERNALS if word in text]
        assert not shown, (name, shown, text)


def module_of(test: str) -> str:
    return LIFECYCLE if test == "test_lifecycle_invariants_hold" else DECODE


# Examples each planted test needs to meet its bug on the derandomized seed (the rest: 60).  The stale read of
# drafts-within-allocation needs DCP > 1, page > 1 and a tree step near the bound at once: 200 reach it.
BUDGETS = {"test_drafts_stay_inside_what_was_allocated": 200}


def test_every_property_fails_on_its_planted_revision_and_passes_on_the_reference(tmp_path):
    planted_targets = sorted({spec for spec, _ in PLANTED.values()})
    cases: dict[str, str | None] = {}
    for budget in sorted({60, *BUDGETS.values()}):
        tests = [t for t in PLANTED if BUDGETS.get(t, 60) == budget]
        ids = [f"{module_of(t)}::{t}[{PLANTED[t][0]}]" for t in tests]
        ids += [f"{module_of(t)}::{t}[reference]" for t in tests]
        report = tmp_path / f"junit-{budget}.xml"
        r = pytest(
            *ids,
            f"--kvrow-max-examples={budget}",
            f"--kvrow-cases={tmp_path / 'cases'}",
            "--kvrow-target=reference",
            *(f"--kvrow-target={t}" for t in planted_targets[1:]),
            "--target",  # this repository's older spelling, the same option
            planted_targets[0],
            "-p",
            "kvrow_no_shrink",
            f"--junitxml={report}",
            plugins=no_shrink(tmp_path),
        )
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
        cases.update(junit(report))
        assert_reads_as_run_prints(junit(report, text_only=True), r.stdout, tmp_path / "cases")
    assert len(cases) == 2 * len(PLANTED), sorted(cases)
    for test, (spec, group) in PLANTED.items():
        failure = cases[f"{test}[{spec}]"]
        assert failure is not None, f"{test} passed on {spec}"
        assert f"on {spec}" in failure and group in failure, failure[:2000]
        assert cases[f"{test}[reference]"] is None, cases[f"{test}[reference]"]


def sglang_checkout(root: Path, headroom_at_every_page: bool) -> Path:
    """A directory laid out like SGLang's repository, its sizing file in 0.5.23's shape (the rule applied or not)."""
    source = DEMO_SHAPE.read_text()
    assert source.count("HEADROOM_AT_EVERY_PAGE = False\n") == 1
    if headroom_at_every_page:
        source = source.replace("HEADROOM_AT_EVERY_PAGE = False\n", "HEADROOM_AT_EVERY_PAGE = True\n")
    path = root / CHECKOUT_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    # The checkout's own configuration: no kvrow setting, test files of another name (the plugin collects its own).
    (root / "pytest.ini").write_text("[pytest]\npython_files = check_*.py\n")
    return root


OWN_PROPERTY = '''
from hypothesis import Verbosity, given, settings, strategies as st

from strategies.scenarios import decode_scenarios


@given(data=st.data())
def test_own_headroom_is_at_least_four(kvrow_target, data):
    """A property of the checkout's own, against the same target (the kvrow_target fixture)."""
    assert settings.default.verbosity is Verbosity.quiet  # the session's kvrow profile (ci),
    assert settings.default.max_examples == 40  # capped by --kvrow-max-examples
    cfg = data.draw(decode_scenarios(kvrow_target.revision)).config
    assert kvrow_target.sizing.req_to_token_extra_context_len(cfg) >= 4
'''


@mark.slow
def test_documented_command_fails_on_a_0_5_23_checkout_and_passes_with_the_reference_rule(tmp_path):
    plugins = no_shrink(tmp_path)
    command = [
        "--pyargs",
        "fuzz.properties",
        "check_own_property.py",
        f"--kvrow-target={CHECKOUT_PATH}",
        "--kvrow-max-examples=40",
        "-k",
        "rounded_write or own_headroom",
        "-p",
        "kvrow_no_shrink",
        "--junitxml=junit.xml",
    ]
    name = f"test_every_rounded_write_ends_within_its_row[{CHECKOUT_PATH}]"
    before = sglang_checkout(tmp_path / "before", headroom_at_every_page=False)
    (before / "check_own_property.py").write_text(OWN_PROPERTY)
    r = pytest(*command, cwd=before, plugins=plugins)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    cases = junit(before / "junit.xml")
    assert set(cases) == {name, f"test_own_headroom_is_at_least_four[{CHECKOUT_PATH}]"}, sorted(cases)
    assert cases[name] is not None and "write-within-row/alloc-page-1 on " in cases[name], cases[name]
    assert cases[f"test_own_headroom_is_at_least_four[{CHECKOUT_PATH}]"] is None

    after = sglang_checkout(tmp_path / "after", headroom_at_every_page=True)
    (after / "check_own_property.py").write_text(OWN_PROPERTY)
    r = pytest(*command, cwd=after, plugins=plugins)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert set(junit(after / "junit.xml").values()) == {None}


@mark.network
def test_the_plugin_line_on_0_5_23_prints_each_failure_as_run_does(pinned_wheels, tmp_path):
    """The documented line on the real 0.5.23 wheel, from an adopter's directory: every property that fails
    (its bugs are real: #33579 and the unified-rows builders) reads as ``run`` prints it, with its repro line."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    cases, report = tmp_path / "cases", tmp_path / "junit.xml"
    line = ["--pyargs", "fuzz.properties", "--kvrow-target=sglang==0.5.23", f"--kvrow-cases={cases}"]
    r = pytest(*line, f"--junitxml={report}", cwd=tmp_path)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    failures = junit(report, text_only=True)
    assert len([t for t in failures.values() if t is not None]) >= 3, failures  # the proof and both row properties
    assert_reads_as_run_prints(failures, r.stdout, cases)


NOISE = """
import warnings

import pytest
import torch


def forward(x):
    return x


def test_torch_jit_warns():  # the noise is there: this session's filter, not its absence, keeps it out
    with pytest.warns(DeprecationWarning, match="script_method"):
        torch.jit.script_method(forward)


def test_noise():
    torch.jit.script_method(forward)
    warnings.warn("a deprecation of this test's own", DeprecationWarning)
    warnings.warn_explicit(
        "`torch.jit.script_method` is deprecated, said elsewhere", DeprecationWarning, "elsewhere.py", 1, "elsewhere"
    )
"""


def test_the_known_torch_jit_noise_is_filtered_and_nothing_else(tmp_path):
    """A session that asks for kvrow drops torch.jit's own deprecation notice (which its first test shows is
    raised), by category, message and module; every other warning (this test's, the same words from another
    module) stays in the summary."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_noise.py").write_text(NOISE)
    r = pytest("test_noise.py", "--kvrow-target=reference", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "a deprecation of this test's own" in r.stdout and "said elsewhere" in r.stdout, r.stdout[-3000:]
    assert "torch/jit/_script.py" not in r.stdout, r.stdout[-3000:]


INERT = """
from hypothesis import Verbosity, settings


def test_profile_is_not_kvrow():
    assert settings.default.verbosity is not Verbosity.quiet  # every kvrow profile is quiet


def test_target_defaults_to_the_reference(kvrow_target):
    assert kvrow_target.spec == "reference"
"""


def test_plugin_leaves_hypothesis_alone_unless_asked(tmp_path):
    """Loaded by every pytest run where kvrow-fuzz is installed: no kvrow option, no kvrow profile."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_inert.py").write_text(INERT)
    r = pytest("-v", "test_inert.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "test_target_defaults_to_the_reference[reference] PASSED" in r.stdout, r.stdout[-3000:]


# Two sessions in one process, the property module imported before either (a conftest, pytester's in-process runs).
TWO_SESSIONS = """
import pytest
import fuzz.properties.test_kvrow_tables
for n in (3, 6):
    pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--pyargs", "fuzz.properties.test_kvrow_tables",
                 f"--kvrow-max-examples={n}", "-k", "fa3_page_table/write", "--hypothesis-show-statistics"])
"""


def test_each_session_runs_the_properties_under_its_own_profile(tmp_path):
    """Hypothesis binds a test's settings when its module is imported: a property module imported before the
    session loaded its profile ran under Hypothesis' defaults (100 examples, a 200 ms deadline, the example
    database), whatever ``--kvrow-max-examples`` said.  The plugin imports the properties afresh per session."""
    (tmp_path / "two_sessions.py").write_text(TWO_SESSIONS)
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_PROFILE"}
    r = subprocess.run(
        [sys.executable, str(tmp_path / "two_sessions.py")], capture_output=True, text=True, cwd=ROOT, env=env
    )
    counts = [line.split()[1] for line in r.stdout.splitlines() if line.strip().startswith("- ") and "passing" in line]
    assert counts == ["3", "6"], r.stdout[-3000:] + r.stderr[-2000:]


def test_options_are_registered_once_by_the_entry_point_and_the_root_conftest():
    assert "fuzz.pytest_plugin" in {ep.value for ep in entry_points(group="pytest11")}, "reinstall: pip install -e ."
    for env in ({}, {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}):  # the entry point and conftest.py; conftest.py alone
        r = pytest("--help", "fuzz/properties", env=env)  # no tests/conftest.py: nothing imports torch
        assert r.returncode == 0, r.stderr[-2000:]
        options = [line.split()[0] for line in r.stdout.splitlines() if line.strip().startswith("--")]
        assert options.count("--kvrow-target=SPEC") == 1 and options.count("--target=SPEC") == 1, env


def test_unknown_target_is_a_usage_error():
    r = pytest(DECODE, "--kvrow-target", "reference@nope")
    assert r.returncode == 4 and "unknown revision" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
