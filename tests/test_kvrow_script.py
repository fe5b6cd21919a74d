"""``./kvrow``'s install step, with a stand-in python: torch from PyTorch's CPU index when it answers the probe,
else from the default index, and the script says which.

The environment is a directory (``KVROW_VENV``) whose ``bin/python`` logs every ``-m pip`` and ``-m fuzz`` call
instead of running it and hands anything else (the probe) to this interpreter; the CPU index is
``KVROW_TORCH_INDEX``: a local HTTP server, or a closed port.  No pip install, no network.
"""

from __future__ import annotations

import http.server
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KVROW = ROOT / "kvrow"
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

STAND_IN = """#!/usr/bin/env bash
# A venv's python for the test: pip and the fuzz command are logged, not run; the probe runs for real.
case "$1 $2" in
    "-m pip"|"-m fuzz") echo "$*" >> "{log}"; exit 0 ;;
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


def kvrow(tmp_path: Path, index: str, *args: str) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """``./kvrow ARGS`` with the stand-in environment; (the result, each logged call's argv after python)."""
    venv, log = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    python.write_text(STAND_IN.format(log=log, python=sys.executable))
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in PROXIES}
    env.update(KVROW_VENV=str(venv), KVROW_TORCH_INDEX=index, no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1")
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
    assert f"--index-url {default}" in (ROOT / "README.md").read_text()
    assert default in (ROOT / "action.yml").read_text()
