"""A repro line runs as pasted into a fresh shell (issue 35: it printed ``python -m fuzz repro``, which runs only
where the tool's environment is active, and ``./kvrow`` never activates its ``.venv``).

The installation is made as ``./kvrow`` makes it: a virtual environment with this checkout installed editable by
pip (``pip install -e ROOT``), its dependencies lent by this test's own environment (a ``.pth`` line: nothing is
fetched), and the stamp ``./kvrow`` checks, so ``./kvrow run`` takes it as set up.  A campaign runs through
``./kvrow run`` (the quick start) or through the installed ``kvrow-fuzz`` script on the PATH; its printed repro
line is run by ``bash -c`` in a clean environment (``env -i``: a bare ``PATH``, a new ``HOME``, the same working
directory) and must replay the case: exit 1 and the text the tool's replay prints.  The old spelling, in the same
clean shell, does not.  ``fuzz.common.program.shell_command``'s three answers are checked on the same
installation.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest
from hermetic import unbroken

from fuzz.cli import main

ROOT = Path(__file__).resolve().parents[1]
BARE_PATH = "/usr/bin:/bin"  # a fresh shell's: no environment activated
RUN = ["--target", "reference@sglang-0.5.18", "--profile", "ci", "--max-examples", "5", "--quiet"]
OUT = {"capture_output": True, "text": True, "timeout": 300}
CASE = "fuzz-cases/reference-sglang-0.5.18--prod--write-within-row-dcp-1.json"  # the seed bug's lead case file


def clean_env(home: Path, path: str = BARE_PATH, **extra: str) -> dict[str, str]:
    """What ``env -i HOME=... PATH=...`` leaves a command: nothing of this test's environment."""
    return {"HOME": str(home), "PATH": path, **extra}


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with this checkout installed as ``./kvrow`` installs it; its directory."""
    where = tmp_path_factory.mktemp("install") / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(where)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(where), "platbase": str(where)}))
    lent = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}  # torch, Hypothesis...: this env's
    (site / "lent_by_the_test.pth").write_text("".join(f"{p}\n" for p in sorted(lent)))
    python = where / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--disable-pip-version-check"]
    done = subprocess.run(
        [*pip, "--no-deps", "--no-build-isolation", "--no-index", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # ./kvrow's stamp: the environment is set up for these pyproject.toml and constraints.txt (``setup`` in kvrow)
    cksum = subprocess.run(
        ["bash", "-c", 'cat pyproject.toml constraints.txt | cksum | cut -d" " -f1'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (where / f".kvrow-base-{cksum}").touch()
    # The installation runs this checkout's code, nothing else's (a lent site-packages with a copy would shadow it).
    probe = subprocess.run(
        [str(python), "-c", "import fuzz; print(fuzz.__file__)"], env=clean_env(where), capture_output=True, text=True
    )
    assert probe.stdout.strip() == str(ROOT / "fuzz" / "__init__.py"), probe.stdout + probe.stderr
    return where


def repro_lines(out: str) -> list[str]:
    return [line.split("repro: ", 1)[1] for line in unbroken(out).splitlines() if line.lstrip().startswith("repro: ")]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["./kvrow run", "kvrow-fuzz on the PATH"])
def test_a_printed_repro_line_replays_as_pasted_into_a_fresh_shell(installed, tmp_path, how, monkeypatch, capsys):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    if how == "./kvrow run":  # the quick start: nothing activated, .venv's bin never on the PATH
        argv, env = ["bash", str(ROOT / "kvrow"), "run", *RUN], clean_env(home, KVROW_VENV=str(installed))
    else:  # pip's script on the PATH, as an activated environment (or a pip install into one on it) has it
        path = f"{installed / 'bin'}:{BARE_PATH}"
        argv, env = ["kvrow-fuzz", "run", *RUN], clean_env(home, path)
    run = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    (line,) = [x for x in repro_lines(run.stdout) if x.endswith(CASE)]
    script = installed / "bin" / "kvrow-fuzz"
    expected_program = "kvrow-fuzz" if how == "kvrow-fuzz on the PATH" else shlex.quote(str(script))
    assert line == f"{expected_program} repro {CASE}", line

    shell = clean_env(home) if how == "./kvrow run" else env  # the user's fresh shell: what its PATH has, no more
    pasted = subprocess.run(["bash", "-c", line], cwd=work, env=shell, **OUT)
    monkeypatch.chdir(work)
    assert main(["repro", CASE]) == 1  # the tool's own replay, in this process
    reference = capsys.readouterr().out
    assert "FAILS write-within-row/dcp>1" in reference
    assert (pasted.returncode, pasted.stdout) == (1, reference), pasted.stderr[-2000:]

    old = subprocess.run(["bash", "-c", f"python -m fuzz repro {CASE}"], cwd=work, env=clean_env(home), **OUT)
    assert "FAILS" not in old.stdout  # the line it printed before: nothing replays in a fresh shell


@pytest.mark.slow
def test_the_program_a_line_starts_with_is_this_installations(installed, tmp_path):
    """``kvrow-fuzz`` only where that name on the PATH is this installation's script; else the script's full path;
    code no installation provides (a copy on ``PYTHONPATH``) is run by its interpreter, ``-m fuzz``."""
    code = "from fuzz.common.program import shell_command; print(shell_command())"
    python, script = installed / "bin" / "python", installed / "bin" / "kvrow-fuzz"

    def answer(path: str, pythonpath: Path | None = None) -> str:
        env = clean_env(tmp_path, path, **({"PYTHONPATH": str(pythonpath)} if pythonpath else {}))
        done = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, **OUT)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    other = tmp_path / "other-bin"  # another kvrow-fuzz first on the PATH: not this installation's
    other.mkdir()
    (other / "kvrow-fuzz").write_text("#!/bin/sh\nexit 0\n")
    (other / "kvrow-fuzz").chmod(0o755)
    assert answer(BARE_PATH) == shlex.quote(str(script))
    assert answer(f"{installed / 'bin'}:{BARE_PATH}") == "kvrow-fuzz"
    assert answer(f"{other}:{installed / 'bin'}:{BARE_PATH}") == shlex.quote(str(script))

    copy = tmp_path / "checkout"  # the package's code no distribution installed
    for part in ("fuzz/__init__.py", "fuzz/common/__init__.py", "fuzz/common/defaults.py", "fuzz/common/program.py"):
        (copy / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, copy / part)
    assert answer(BARE_PATH, copy) == f"{shlex.quote(str(python))} -m fuzz"
