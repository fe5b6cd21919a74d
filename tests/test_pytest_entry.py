"""pytest as a first-class entry: `pytest fuzz/test_properties.py --target SPEC` fails on a planted bug."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest(*args):
    env = {**os.environ, "PYTHONPATH": ROOT, "HYPOTHESIS_PROFILE": "ci"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )


def test_property_tests_fail_on_the_seed_bug_and_name_the_victim():
    r = pytest(
        "fuzz/test_properties.py::test_every_rounded_write_ends_within_its_row", "--target", "reference@sglang-0.5.18"
    )
    assert r.returncode == 1, r.stdout[-2000:]
    assert "columns past its end" in r.stdout and "victim: row" in r.stdout


def test_unknown_target_is_a_usage_error():
    r = pytest("fuzz/test_properties.py", "--target", "reference@nope")
    assert r.returncode == 4 and "unknown revision" in r.stdout + r.stderr
