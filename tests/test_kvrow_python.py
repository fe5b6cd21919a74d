"""./kvrow's choice of interpreter: any Python of requires-python's range (3.10 to 3.12), 3.11 first.

``pick_python`` is cut out of the script and run by bash with a PATH of stand-in
interpreters that print their version: hermetic, whatever Pythons this machine has.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BASH = shutil.which("bash")
PICK_PYTHON = re.search(r"^pick_python\(\) \{\n.*?^\}\n", (ROOT / "kvrow").read_text(), re.M | re.S)


def pick(tmp_path: Path, versions: dict[str, str], python: str = "") -> subprocess.CompletedProcess[str]:
    """pick_python with only ``versions`` (name -> the version it prints; "" fails) on PATH."""
    for name, version in versions.items():
        stand_in = tmp_path / name
        stand_in.write_text(f"#!/bin/sh\necho {version}\n" if version else "#!/bin/sh\nexit 1\n")
        stand_in.chmod(0o755)
    assert BASH and PICK_PYTHON, "bash and the script's pick_python"
    env = {"PATH": str(tmp_path), **({"PYTHON": python} if python else {})}
    script = f"set -euo pipefail\n{PICK_PYTHON[0]}pick_python\n"
    return subprocess.run([BASH, "-c", script], env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    "versions, chosen",
    [
        ({"python3.10": "3.10"}, "python3.10"),  # 3.10 is never refused: SGLang supports it
        ({"python3.12": "3.12", "python3": "3.12"}, "python3.12"),
        ({"python3.10": "3.10", "python3.11": "3.11", "python3.12": "3.12"}, "python3.11"),  # 3.11 first
        ({"python3.11": "", "python3.10": "3.10"}, "python3.10"),  # one that does not run is passed over
        ({"python3": "3.12"}, "python3"),
    ],
)
def test_kvrow_takes_a_python_of_3_10_to_3_12_and_3_11_first(tmp_path, versions, chosen):
    done = pick(tmp_path, versions)
    assert (done.returncode, done.stdout.strip()) == (0, chosen), done.stderr


@pytest.mark.parametrize("python3", ["3.9", "3.13", ""])
def test_kvrow_refuses_in_one_line_where_no_python_is_in_range(tmp_path, python3):
    done = pick(tmp_path, {"python3": python3})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "kvrow: error: no Python 3.10 to 3.12 on PATH (python3.11, python3.12, python3.10 or python3); "
        "set PYTHON=/path/to/python3.11"
    ]


def test_kvrow_takes_python_as_given(tmp_path):
    done = pick(tmp_path, {"python3.11": "3.11"}, python=os.path.join("opt", "py", "bin", "python3.10"))
    assert (done.returncode, done.stdout.strip()) == (0, "opt/py/bin/python3.10")
