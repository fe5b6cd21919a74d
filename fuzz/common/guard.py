"""A verdict the target's code cannot end: the command runs in a child process, and the program exits with the
verdict that child sends as its last act, or, when none came, with ``ExitCode.NO_VERDICT`` (never clean).

Why: the named target's code (a local sizing file, a checkout's ``sglang`` package) runs inside the command.  A
call to ``os._exit(0)`` there (or a crash, an out-of-memory kill) ends the process at once, with the status that
code chose, before any report is written: a CI gate reading the status would call it clean.  So the verdict is
not the child's exit status but a message the child writes to a pipe after the command returned
(``send_verdict``); a child that ended without one was cut short, whatever its status, and the program says so
in one line.  A verdict that came stands even if the process then ended otherwise (an ``atexit`` hook of the
target's calling ``os._exit``): the report and the case files were written before it.

The parent stays light: it imports no engine (no torch, no Hypothesis) and starts one interpreter, the child,
with the same interpreter flags and ``sys.path`` (so ``kvrow-fuzz`` and ``python -m fuzz`` import what they
would have in one process).  Standard input, output and error are the child's own (inherited), so output passes
through unchanged and in order.  The verdict pipe is named to the child by ``CHANNEL_ENV``, which the child
removes from its environment at once: a ``kvrow-fuzz`` that the target's code starts is guarded afresh.

Signals: the child is in the parent's process group, so what a terminal sends (Ctrl-C, Ctrl-Z, a hang-up)
reaches it directly, as it reached the one process before; the parent must not send a second one (a second
signal interrupts at once, ``fuzz.common.interrupts``).  A SIGINT or SIGTERM sent to the parent by a process
(``kill PID``, a service manager, CI) is forwarded to the child, which stops and saves its findings as before.
The parent tells the two apart by the signal's origin (``forwarded``).  A group-wide ``kill`` by a process
reaches the child twice (directly and forwarded): the second interrupts at once, which still ends the run
with its findings written.  The target's own code is not fenced off (it runs with the tool's rights and
could write any verdict): the guard is against a process ended early, not against forgery.
"""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
import sys

from .defaults import PROG

CHANNEL_ENV = "KVROW_FUZZ_VERDICT_FD"
_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_WAIT_SECONDS = 1.0  # the parent wakes at least this often to look at its child (SIGCHLD wakes it at once)
# Run as ``python -c BOOT SYS_PATH... -- ARGV...``: ``sys.path`` is the parent's, set before anything is imported
# from it (``sys`` is built in), so the child imports what one process would have.
BOOT = (
    "import sys; i = sys.argv.index('--'); sys.path[:] = sys.argv[1:i]; del sys.argv[1:i + 1]; "
    "from fuzz.cli import main; sys.exit(main())"
)


def available() -> bool:
    """Whether this platform can run the guard (a pipe passed by number, signals waited for with their origin)."""
    return os.name == "posix" and hasattr(signal, "sigtimedwait")


def forwarded(si_code: int) -> bool:
    """Whether a signal the parent received goes on to the child: only one a process sent (``kill``: si_code <= 0,
    SI_USER, SI_QUEUE, SI_TKILL); one the kernel sent (a terminal's Ctrl-C: SI_KERNEL, > 0) reached the whole
    process group, the child too, and a second copy would escalate it (``fuzz.common.interrupts``)."""
    return si_code <= 0


def parse_verdict(data: bytes) -> int | None:
    """The exit status the child sent (one decimal number 0-255 and a newline, ``send_verdict``); None for
    anything else (nothing, a partial write): no verdict came."""
    text = data.decode("ascii", "replace")
    if not text.endswith("\n") or not text[:-1].isdigit() or len(text) > 4:
        return None
    status = int(text[:-1])
    return status if status <= 255 else None


def ended_how(returncode: int) -> str:
    """How a process ended, from ``Popen.returncode`` (negative: the signal that killed it)."""
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def no_verdict_line(command: str, returncode: int) -> str:
    """The one line of a command whose process ended without sending its verdict."""
    return (
        f"{PROG}: error: {command} ended without a verdict (its process {ended_how(returncode)}; the target's code "
        "may have ended it: os._exit, a crash, a kill): not clean, see the output above"
    )


def take_channel() -> int | None:
    """In a guarded child: the verdict pipe's descriptor, its name removed from the environment (so nothing this
    process starts inherits the role) and the descriptor kept from any process it starts; None elsewhere (no
    name, or one that names no pipe: then this process is not a child and guards itself)."""
    value = os.environ.pop(CHANNEL_ENV, None)
    if value is None or not value.isdigit():
        return None
    fd = int(value)
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        os.set_inheritable(fd, False)
    except OSError:
        return None
    return fd


def unblock_signals() -> None:
    """In the child: take the signals the parent held back while starting it (any that came meanwhile arrive
    now, at the handlers ``fuzz.common.interrupts`` installed)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {*_SIGNALS, signal.SIGCHLD})


def send_verdict(fd: int, status: int) -> None:
    """The child's last act: flush what it printed (an exit after this must not lose it), then send its status."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed or full output is the streams' own business (fuzz.common.streams)
            pass
    try:
        os.write(fd, f"{int(status) & 0xFF}\n".encode())
        os.close(fd)
    except OSError:
        pass  # the parent is gone: nobody waits for the verdict


def _pipe_above_stdio() -> tuple[int, int]:
    """A pipe whose ends are not 0, 1 or 2 (with standard output closed, ``os.pipe`` would hand out 1 and the
    child would print into its verdict pipe), both close-on-exec here."""
    ends = []
    for fd in os.pipe():
        ends.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
        os.close(fd)
    return ends[0], ends[1]


def _read_verdict(fd: int) -> int | None:
    """The verdict waiting in the pipe once the child has ended (read without blocking: a process the target's
    code started might still hold the pipe open)."""
    os.set_blocking(fd, False)
    try:
        data = os.read(fd, 16)
    except BlockingIOError:
        return None
    return parse_verdict(data)


def child_command(argv: list[str]) -> list[str]:
    """The child's command line: this interpreter, its flags, ``BOOT`` with this ``sys.path``, then ``argv``."""
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]  # -X, -W, -O, -I...: as given
    return [sys.executable, *flags, "-c", BOOT, *sys.path, "--", *argv]


def supervise(command: list[str], name: str) -> int:
    """Run ``command`` (a guarded child) and return its verdict, or ``ExitCode.NO_VERDICT`` with one line on stderr
    when it ended without one.  SIGINT and SIGTERM are held back from the moment before it starts (the child takes
    those that came meanwhile, ``unblock_signals``) and forwarded when a process sent them (``forwarded``)."""
    from .errors import ExitCode

    read_end, write_end = _pipe_above_stdio()
    waited = {*_SIGNALS, signal.SIGCHLD}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    try:
        try:
            child = subprocess.Popen(command, pass_fds=(write_end,), env={**os.environ, CHANNEL_ENV: str(write_end)})
        finally:
            os.close(write_end)
        while child.poll() is None:
            info = signal.sigtimedwait(waited, _WAIT_SECONDS)
            if info is not None and info.si_signo in _SIGNALS and forwarded(info.si_code):
                child.send_signal(info.si_signo)
        verdict = _read_verdict(read_end)
    finally:
        os.close(read_end)
        while signal.sigtimedwait(waited, 0) is not None:  # nothing held back reaches this process afterwards
            pass
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if verdict is not None:
        return verdict
    _say(no_verdict_line(name, child.returncode))
    return ExitCode.NO_VERDICT


def _say(line: str) -> None:
    """``line`` on stderr if it can take it (closed, or a full disk: the exit status says it all the same)."""
    try:
        if sys.stderr is not None:
            print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
