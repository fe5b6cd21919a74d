"""``./kvrow``, with a stand-in python: torch from PyTorch's CPU index when it answers the probe, else from the
default index, and the script says which; ``./kvrow test``: the pinned wheels fetched, the default tier then the
slow tier, its exit status from both.

The environment is a directory (``KVROW_VENV``) whose ``bin/python`` logs every ``-m pip``, ``-m fuzz``, ``-m ruff``,
``-m mypy`` and ``-m pytest`` call instead of running it (pytest exits ``$STAND_IN_RC``, or ``$STAND_IN_SLOW_RC``
when called with ``--run-slow``) and hands anything else (the probe) to this interpreter; the CPU index is
``KVROW_TORCH_INDEX``: a local HTTP server, or a closed port.  No pip install, no network, no test run.
"""

from __future__ import annotations

import http.server
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from documentation import page
from hermetic import PINNED_FILE, PINNED_RELEASES, missing_wheel, read_pinned

from allocator_model.revisions import RELEASE_REVISIONS

ROOT = Path(__file__).resolve().parents[1]
KVROW = ROOT / "kvrow"
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

STAND_IN = """#!/usr/bin/env bash
# A venv's python for the test: pip, fuzz, ruff, mypy and pytest are logged, not run; the probe runs for real.
log() {{ printf '%q ' "$@" >> "{log}"; echo >> "{log}"; }}  # one call a line, quoted as shlex reads it
case "$1 $2" in
    "-m pip"|"-m fuzz"|"-m ruff"|"-m mypy") log "$@"; exit 0 ;;
    "-m pytest")
        log "$@"
        case " $* " in *" --run-slow "*) exit "${{STAND_IN_SLOW_RC:-0}}" ;; esac
        exit "${{STAND_IN_RC:-0}}" ;;
esac
exec "{python}" "$@"
"""


class _Index(http.server.BaseHTTPRequestHandler):
    """The CPU index's stand-in: every page answers 200 and its path is recorded."""

    paths: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the handler's name is http.server's
        self.paths.append(self.path)
        body = b"<html><a href='torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl'>torch</a></html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass


@pytest.fixture
def cpu_index() -> Iterator[tuple[str, list[str]]]:
    """(URL, the paths asked) of a local index that answers."""
    paths: list[str] = []
    handler = type("Index", (_Index,), {"paths": paths})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu", paths
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/whl/cpu"  # nothing listens there once the socket is closed


def kvrow(
    tmp_path: Path, index: str, *args: str, **extra: str
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """``./kvrow ARGS`` with the stand-in environment (and ``extra`` in its environment); (the result, each logged
    call's argv after python).  The real-wheel cache is ``tmp_path/wheels`` (empty) unless ``extra`` names one."""
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    python.write_text(STAND_IN.format(log=log, python=sys.executable))
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in PROXIES}
    env.update(KVROW_VENV=str(venv), KVROW_TORCH_INDEX=index, no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1")
    env.update(KVROW_FUZZ_REAL_WHEELS=str(tmp_path / "wheels"), **extra)
    for name in ("KVROW_JUNIT_DIR", "STAND_IN_RC", "STAND_IN_SLOW_RC"):
        if name not in extra:
            env.pop(name, None)
    result = subprocess.run(["bash", str(KVROW), *args], env=env, capture_output=True, text=True, timeout=60)
    calls = [shlex.split(line) for line in log.read_text().splitlines()] if log.exists() else []
    return result, calls


def pip_installs(calls: list[list[str]]) -> list[list[str]]:
    return [c for c in calls if c[:3] == ["-m", "pip", "install"]]


def test_torch_comes_from_the_cpu_index_when_it_answers(tmp_path, cpu_index):
    url, asked = cpu_index
    result, calls = kvrow(tmp_path, url, "targets")
    assert result.returncode == 0, result.stderr
    assert asked == ["/whl/cpu/torch/"]  # the probe: the index's torch page
    torch, project = pip_installs(calls)
    assert torch[torch.index("--index-url") + 1] == url and torch[-1] == "torch==2.13.0"
    assert ["-c", str(ROOT / "constraints.txt")] == torch[torch.index("-c") : torch.index("-c") + 2]
    assert "--index-url" not in project and "torch==2.13.0" in project and project[-2:] == ["-e", str(ROOT)]
    assert f"kvrow: installing torch 2.13.0 (CPU build) from {url}" in result.stderr
    assert "default index" not in result.stderr
    assert calls[-1] == ["-m", "fuzz", "targets"]  # then the command itself, in that environment


def test_torch_comes_from_the_default_index_when_the_cpu_index_does_not_answer(tmp_path):
    url = closed_port()
    result, calls = kvrow(tmp_path, url, "targets")
    assert result.returncode == 0, result.stderr
    (only,) = pip_installs(calls)  # torch and the project in one install, from the default index
    assert "--index-url" not in only and "--extra-index-url" not in only and "torch==2.13.0" in only
    assert f"kvrow: {url} does not answer: torch 2.13.0 from the default index" in result.stderr
    assert "CPU build" not in result.stderr


def test_the_install_runs_once_until_the_pins_change(tmp_path, cpu_index):
    url, _ = cpu_index
    kvrow(tmp_path, url, "targets")
    result, calls = kvrow(tmp_path, url, "run", "--max-examples", "5")
    assert len(pip_installs(calls)) == 2  # the first call's two, none since: the stamp matches
    assert calls[-1] == ["-m", "fuzz", "run", "--target", "reference", "--max-examples", "5"]
    assert "installing" not in result.stderr


def test_the_default_cpu_index_is_the_one_the_readme_and_the_action_name():
    (line,) = [x for x in KVROW.read_text().splitlines() if x.startswith("CPU_INDEX=")]
    default = line.split(":-", 1)[1].rstrip('}"')
    assert default == "https://download.pytorch.org/whl/cpu"
    assert f"--index-url {default}" in page("command-line.md")  # setting up by hand
    assert default in (ROOT / "action.yml").read_text()


def pytest_runs(calls: list[list[str]]) -> list[list[str]]:
    """Each pytest call's arguments after ``-m pytest``."""
    return [c[2:] for c in calls if c[:2] == ["-m", "pytest"]]


TIERS = ["-n", "auto", "--dist", "worksteal"]


def test_kvrow_test_runs_ruff_mypy_then_the_default_tier_then_the_slow_tier(tmp_path):
    """Issue 33: no tier rots unseen: ``./kvrow test`` (what .ci/run and the workflows run) runs both tiers."""
    result, calls = kvrow(tmp_path, closed_port(), "test")
    assert result.returncode == 0, result.stderr
    checks = [c[:3] for c in calls if c[:2] in (["-m", "ruff"], ["-m", "mypy"])]
    assert checks == [["-m", "ruff", "check"], ["-m", "ruff", "format"], ["-m", "mypy"]]
    assert calls.index(["-m", "mypy"]) < next(i for i, c in enumerate(calls) if c[:2] == ["-m", "pytest"])
    assert pytest_runs(calls) == [TIERS, [*TIERS, "--run-slow", "-m", "slow"]]


@pytest.mark.parametrize(
    "default, slow, status",
    [(1, 0, 1), (0, 1, 1), (2, 1, 2), (5, 0, 5), (0, 5, 5)],
)
def test_kvrow_test_fails_when_either_tier_fails_or_collects_nothing_and_runs_both(tmp_path, default, slow, status):
    """A failure in one tier hides nothing in the other (both run); a tier that collected no test (5) fails too:
    without ARGS each tier must have tests, or it has rotted away."""
    result, calls = kvrow(tmp_path, closed_port(), "test", STAND_IN_RC=str(default), STAND_IN_SLOW_RC=str(slow))
    assert result.returncode == status
    assert len(pytest_runs(calls)) == 2
    assert f"kvrow: the suite failed: default tier exit {default}, slow tier (--run-slow -m slow) exit {slow}" in (
        result.stderr
    )


@pytest.mark.parametrize("rc", [0, 1, 5])
def test_kvrow_test_with_args_runs_just_what_they_select_and_passes_pytests_status_on(tmp_path, rc):
    """``./kvrow test ARGS``: one pytest run of ARGS (kvrow's usage says so); 5 stays 5: ARGS selected nothing."""
    args = ["tests/test_x.py", "-k", "nothing matches this"]
    result, calls = kvrow(tmp_path, closed_port(), "test", *args, STAND_IN_RC=str(rc), STAND_IN_SLOW_RC="3")
    assert result.returncode == rc
    assert pytest_runs(calls) == [[*TIERS, *args]]
    assert "kvrow: the suite failed" not in result.stderr
    assert "./kvrow test ARGS" in KVROW.read_text()  # the usage header documents it


def test_kvrow_test_writes_a_junit_report_per_tier_where_asked(tmp_path):
    result, calls = kvrow(tmp_path, closed_port(), "test", KVROW_JUNIT_DIR="reports")
    assert result.returncode == 0, result.stderr
    default, slow = pytest_runs(calls)
    assert default == [*TIERS, "--junitxml=reports/junit.xml"]
    assert slow == [*TIERS, "--junitxml=reports/junit-slow.xml", "--run-slow", "-m", "slow"]


def test_kvrow_test_fetches_the_pinned_releases_of_the_one_list_and_only_those_missing(tmp_path):
    """The pinned releases have one home, ``tests/pinned-releases.txt``: ``./kvrow test`` fetches what it lists (the
    releases ``hermetic.PINNED_RELEASES`` says the write-path tests execute), skipping a wheel already cached."""
    cache = tmp_path / "wheels"
    cache.mkdir()
    (cache / f"sglang-{PINNED_RELEASES[0]}-cp311-cp311-manylinux_2_34_x86_64.whl").write_bytes(b"")
    result, calls = kvrow(tmp_path, closed_port(), "test")
    assert result.returncode == 0, result.stderr
    downloads = [c for c in calls if c[:3] == ["-m", "pip", "download"]]
    assert [c[c.index("--no-deps") + 1] for c in downloads] == [f"sglang=={v}" for v in PINNED_RELEASES[1:]]
    assert all(c[c.index("-d") + 1] == str(cache) for c in downloads)
    assert "PINNED_WHEELS=" not in KVROW.read_text() and "tests/pinned-releases.txt" in KVROW.read_text()


def test_the_pinned_list_is_modeled_releases_in_order_once_each():
    releases = read_pinned(PINNED_FILE.read_text())
    assert releases == PINNED_RELEASES and releases
    assert all(v in RELEASE_REVISIONS for v in releases)
    assert sorted(releases, key=lambda v: tuple(map(int, v.split(".")))) == list(releases)
    assert len(set(releases)) == len(releases)


def test_read_pinned_reads_the_file_as_the_script_does():
    """``#`` to the line's end a comment, blank lines skipped, words split: ``sed 's/#.*//'`` then ``for v in``."""
    text = "# head\n0.5.13\n\n  0.5.16  # trailing\n0.5.18 0.5.19\n#0.5.20\n"
    assert read_pinned(text) == ("0.5.13", "0.5.16", "0.5.18", "0.5.19")
    script = f"for v in $(printf '%s' {shlex.quote(text)} | sed 's/#.*//'); do echo \"$v\"; done"
    words = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert tuple(words) == read_pinned(text)


def test_a_missing_wheels_reason_is_true_for_a_pinned_release_and_for_any_other(tmp_path):
    """Issue 33: reasons claimed ``./kvrow test`` fetches 0.5.22 and 0.5.14, which it never does."""
    pinned, other = PINNED_RELEASES[-1], "0.5.14"
    assert other not in PINNED_RELEASES
    said = missing_wheel(pinned, tmp_path)
    assert "./kvrow test fetches it" in said and f"pip download sglang=={pinned} --no-deps -d {tmp_path}" in said
    said = missing_wheel(other, tmp_path)
    assert "./kvrow test does not fetch it" in said and "./kvrow test fetches" not in said
    assert f"pip download sglang=={other} --no-deps -d {tmp_path}" in said


def test_no_skip_reason_of_its_own_says_what_kvrow_test_fetches():
    """The one place a skip says what ``./kvrow test`` fetches is ``hermetic.missing_wheel``, which knows the list."""
    claim = re.compile(r"pytest\.skip\(.*kvrow test")
    for path in sorted((ROOT / "tests").glob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not claim.search(line), f"{path.name}:{n}: {line.strip()}"
