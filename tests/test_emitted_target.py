"""An emitted regression test replays on each ``--kvrow-target``, else on ``$KVROW_FUZZ_TARGET``, else on its case's.

The emitted file is run by pytest in this process (``pytester``), with the
kvrow plugin loaded as installed and, once, without it (``-p
no:fuzz.pytest_plugin``): the seed bug's case (the model of 0.5.18) fails on
its own target and on ``sglang==0.5.18`` and passes on ``sglang==0.5.19``
(this suite's wheels: tests/conftest.py) and on the reference.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
from hypothesis import settings

from fuzz.findings.casefile import Replay, load_document
from fuzz.findings.regression import (
    POINT_AT_A_FIX,
    REGRESSIONS_DIR,
    TARGET_ENV,
    emit_test,
    replay_targets,
    reproduced_on,
)

pytest_plugins = ["pytester"]

SEED_CASE = os.path.join(REGRESSIONS_DIR, "reference-sglang-0.5.18--write-within-row-dcp-1.json")
SIGNATURE = "write-within-row/dcp>1"


def options(**given: object) -> SimpleNamespace:
    """A stand-in pytest config: ``getoption`` as pytest's, its default for any option not given."""
    return SimpleNamespace(getoption=lambda name, default=None: given.get(name, default))


@pytest.fixture
def emitted(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """Run the seed case's emitted test with pytest ARGS in this process; Hypothesis' profile is left as found."""
    monkeypatch.delenv(TARGET_ENV, raising=False)
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    pytester.makepyfile(test_kv_row_regression=emit_test(load_document(SEED_CASE)))
    profile = settings.get_current_profile_name()

    def run(*args: str) -> pytest.RunResult:
        try:
            return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist", *args)
        finally:
            settings.load_profile(profile)  # the plugin loads a kvrow profile when --kvrow-target is given

    return run


def test_replay_targets_are_the_option_else_the_environment_else_the_case(monkeypatch):
    monkeypatch.delenv(TARGET_ENV, raising=False)
    assert replay_targets(options()) == [None]  # the case's own target
    assert replay_targets(options(kvrow_target=None)) == [None]
    monkeypatch.setenv(TARGET_ENV, "")
    assert replay_targets(options()) == [None]  # set but empty reads as unset
    monkeypatch.setenv(TARGET_ENV, "sglang==0.5.19")
    assert replay_targets(options()) == ["sglang==0.5.19"]
    both = options(kvrow_target=["reference", "sglang==0.5.18"])
    assert replay_targets(both) == ["reference", "sglang==0.5.18"]  # the option wins, every value, in order


def test_the_failure_names_each_target_it_reproduces_on_only_when_several_ran():
    bad, good = Replay(True, ("FAILS x/y story",)), Replay(False, ("ok",))
    assert reproduced_on({None: bad}) == "FAILS x/y story" + POINT_AT_A_FIX
    assert reproduced_on({"reference": good}) == ""
    assert reproduced_on({"a": good, "b": good}) == ""
    several = reproduced_on({"a": bad, "b": good, "c": bad})
    both = "--kvrow-target=a: reproduces\nFAILS x/y story\n--kvrow-target=c: reproduces\nFAILS x/y story"
    assert several == both + POINT_AT_A_FIX
    assert "--kvrow-target=PATH@X.Y.Z" in POINT_AT_A_FIX and TARGET_ENV in POINT_AT_A_FIX


def test_it_fails_on_its_own_target_and_on_the_buggy_release(emitted):
    for args in [(), ("--kvrow-target=sglang==0.5.18",)]:
        result = emitted(*args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([f"*FAILS {SIGNATURE}*", "*to check a fix: pytest --kvrow-target=PATH@X.Y.Z*"])


def test_the_option_replays_it_on_the_fix(emitted, monkeypatch):
    emitted("--kvrow-target=sglang==0.5.19").assert_outcomes(passed=1)
    monkeypatch.setenv(TARGET_ENV, "reference@sglang-0.5.18")  # the option wins over the environment
    emitted("--kvrow-target", "reference").assert_outcomes(passed=1)


def test_the_environment_is_read_when_no_option_is_given(emitted, monkeypatch):
    monkeypatch.setenv(TARGET_ENV, "sglang==0.5.19")
    emitted().assert_outcomes(passed=1)


def test_several_targets_replay_on_each_and_name_those_it_reproduces_on(emitted):
    result = emitted("--kvrow-target=sglang==0.5.19", "--kvrow-target=reference@sglang-0.5.18")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*--kvrow-target=reference@sglang-0.5.18: reproduces*", f"*FAILS {SIGNATURE}*"])
    assert "--kvrow-target=sglang==0.5.19: reproduces" not in result.stdout.str()
    emitted("--kvrow-target=sglang==0.5.19", "--kvrow-target=reference").assert_outcomes(passed=1)


def test_without_the_plugin_it_runs_on_the_environment_or_the_case(emitted, monkeypatch):
    emitted("-p", "no:fuzz.pytest_plugin").assert_outcomes(failed=1)
    monkeypatch.setenv(TARGET_ENV, "sglang==0.5.19")
    emitted("-p", "no:fuzz.pytest_plugin").assert_outcomes(passed=1)
