"""No clean without a verdict: a command that runs a target's code runs in a child, and only the verdict that child
sends after the command ends can make the program exit 0 (``fuzz.common.guard``).

A target whose code calls ``os._exit(0)`` used to end ``run`` with exit 0 and no report, which CI reads as
clean.  Now any process end without a verdict is ``ExitCode.NO_VERDICT`` (3) and one line, whatever status
the target's code chose (1 is not "counterexample found" either).  The guard's own rules (a verdict stands
once sent, a kill is no verdict, a signal sent to the program reaches the child once, a terminal's Ctrl-C
is not doubled) are held with a light stand-in child (no torch).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fuzz.common import guard
from fuzz.common.errors import ExitCode

ROOT = Path(__file__).resolve().parent.parent
KVROW_FUZZ = Path(sys.executable).with_name("kvrow-fuzz")  # the console script the action runs
ENDS_THE_PROCESS = """\
import os
def get_alloc_len_per_decode(): return 1
def get_alloc_reserve_per_decode(): os._exit({code})
def get_req_to_token_extra_context_len(): return 4
"""


def program(entry: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(KVROW_FUZZ)] if entry == "kvrow-fuzz" else [sys.executable, "-m", "fuzz"]
    env = {**os.environ, "KVROW_FUZZ_DATABASE": str(cwd / "db")}
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=180, cwd=cwd, env=env)


@pytest.mark.parametrize(
    "command, code, entry",
    [
        (["run", "--max-examples", "5", "--json", "report.json"], 0, "kvrow-fuzz"),
        pytest.param(  # exit 1 is not "counterexample found" (held cheaply by the stand-in below too)
            ["run", "--max-examples", "5", "--json", "report.json"], 1, "python -m fuzz", marks=pytest.mark.slow
        ),
        (["prove", "--space", "tiny", "--json", "report.json"], 0, "kvrow-fuzz"),
    ],
    ids=["run-exit-0", "run-exit-1", "prove-exit-0"],
)
def test_a_target_that_ends_the_process_is_no_verdict_never_clean(tmp_path, command, code, entry):
    sizing = tmp_path / "allocation_sizing.py"
    sizing.write_text(ENDS_THE_PROCESS.format(code=code))
    done = program(entry, *command, "--target", str(sizing), cwd=tmp_path)
    assert done.returncode == ExitCode.NO_VERDICT, done.stdout + done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith(
        f"kvrow-fuzz: error: {command[0]} ended without a verdict (its process exited with status {code};"
    )
    assert last.endswith(": not clean, see the output above") and "Traceback" not in done.stderr
    report = tmp_path / "report.json"
    if report.exists():  # what the campaign saved before it started: never a clean verdict
        assert all(t["status"] != "clean" for t in json.loads(report.read_text())["targets"])


def test_a_verdict_passes_through_unchanged_even_with_standard_output_closed(tmp_path):
    for stdout in ("", ">&-"):  # closed: the verdict pipe must not take descriptor 1
        script = f'"{sys.executable}" -m fuzz repro missing.json {stdout}'
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert done.returncode == ExitCode.BAD_INPUT, done.stderr
        assert done.stderr.splitlines()[-1] == "kvrow-fuzz: error: case file missing.json does not exist", done.stderr


def test_every_command_that_can_run_a_target_is_guarded():
    from fuzz.cli import COMMANDS, RUNS_NO_TARGET_CODE, guarded

    assert RUNS_NO_TARGET_CODE < set(COMMANDS)
    for name in (
        "run",
        "lifecycle",
        "prove",
        "fidelity",
        "matrix",
        "repro",
        "baseline",
        "advisory",
        "judge-fix",
        "from-crash",
    ):
        assert guarded([name, "--target", "x"]), name
    for argv in (["merge", "a.json"], ["targets"], ["--help"], ["--version"], ["rnu"], []):
        assert not guarded(argv), argv


def test_the_verdict_is_one_number_and_a_newline():
    assert [guard.parse_verdict(b) for b in (b"0\n", b"1\n", b"130\n", b"255\n")] == [0, 1, 130, 255]
    for partial in (b"", b"1", b"256\n", b"-1\n", b"1\n1\n", b"\xff\n", b" 0\n"):
        assert guard.parse_verdict(partial) is None, partial


def test_only_a_signal_a_process_sent_is_forwarded():
    assert guard.forwarded(0) and guard.forwarded(-1) and guard.forwarded(-6)  # SI_USER, SI_QUEUE, SI_TKILL
    assert not guard.forwarded(0x80)  # SI_KERNEL: a terminal's Ctrl-C, which the child got too


# A light stand-in for the guarded child (no torch): what it does after taking the channel is given as code.
STAND_IN = """\
import os, signal, sys, time
sys.path[:0] = [{root!r}]
from fuzz.common import guard
fd = guard.take_channel()
assert fd is not None and guard.CHANNEL_ENV not in os.environ
got = []
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda s, f: got.append(s))
guard.unblock_signals()
{body}
"""
WAIT_FOR_SIGNALS = """\
print("ready", flush=True)
while not got:
    time.sleep(0.01)
time.sleep(0.5)  # a second copy, if one was sent, arrives by then
guard.send_verdict(fd, 100 + len(got))
"""


def stand_in(body: str) -> list[str]:
    return [sys.executable, "-c", STAND_IN.format(root=str(ROOT), body=textwrap.dedent(body))]


def supervising(body: str) -> list[str]:
    """A program (its own process) supervising the stand-in, as ``kvrow-fuzz`` supervises its command."""
    code = f"import sys; sys.path[:0] = [{str(ROOT)!r}]\nfrom fuzz.common import guard\n"
    code += f"sys.exit(guard.supervise({stand_in(body)!r}, 'run'))\n"
    return [sys.executable, "-c", code]


@pytest.mark.parametrize(
    "body, status, line",
    [
        ("guard.send_verdict(fd, 1); os._exit(0)", 1, None),  # an exit after the verdict changes nothing
        ("guard.send_verdict(fd, 0)", 0, None),
        ("os._exit(0)", 3, "its process exited with status 0;"),
        ("os._exit(1)", 3, "its process exited with status 1;"),
        ("os.kill(os.getpid(), signal.SIGKILL)", 3, "its process was killed by SIGKILL;"),
        ("os.write(fd, b'1'); os._exit(0)", 3, "its process exited with status 0;"),  # half a verdict is none
    ],
    ids=["verdict-then-exit", "clean", "exit-0", "exit-1", "killed", "partial"],
)
def test_only_a_sent_verdict_is_one(body, status, line):
    done = subprocess.run(supervising(body), capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    if line is None:
        assert done.stderr == ""
    else:
        assert done.stderr.startswith("kvrow-fuzz: error: run ended without a verdict (") and line in done.stderr
        assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_sent_to_the_program_reaches_the_child_once(sig):
    parent = subprocess.Popen(supervising(WAIT_FOR_SIGNALS), stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        parent.send_signal(sig)  # to the program alone (kill PID): forwarded
        assert parent.wait(timeout=30) == 101
    finally:
        parent.kill()
        parent.wait()


PTY_CTRL_C = """\
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *json.loads(sys.argv[1])])
out = b""
while b"ready" not in out:
    out += os.read(fd, 1024)
os.write(fd, b"\\x03")  # Ctrl-C: the terminal signals the whole foreground process group
while True:
    try:
        if not select.select([fd], [], [], 30)[0] or not os.read(fd, 1024):
            break
    except OSError:  # the terminal closed
        break
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_terminals_ctrl_c_reaches_the_child_once():
    """As before the guard: one Ctrl-C is one signal (a second would interrupt at once, ``interrupts``)."""
    argv = supervising(WAIT_FOR_SIGNALS)[1:]
    code = "import json\n" + PTY_CTRL_C
    done = subprocess.run([sys.executable, "-c", code, json.dumps(argv)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "101", done.stdout + done.stderr
