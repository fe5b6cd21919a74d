"""Profiles: ci is deterministic and bounded; nightly is random with a database even under CI=true."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROBE = """
from hypothesis import settings
from fuzz.common.profiles import get_profile
ci, nightly, dev = get_profile("ci"), get_profile("nightly"), get_profile("dev")
print(ci.derandomize, ci.database is None, ci.max_examples)
print(nightly.derandomize, nightly.database is not None, nightly.max_examples)
print(dev.derandomize, dev.database is not None)
"""


def test_profiles_under_ci_do_not_inherit_hypothesis_ci_profile():
    env = {**os.environ, "CI": "true", "PYTHONPATH": ROOT}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    ci, nightly, dev = out.stdout.splitlines()
    assert ci == "True True 200"
    assert nightly == "False True 20000"
    assert dev == "False True"
