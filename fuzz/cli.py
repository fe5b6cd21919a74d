"""The command line: ``kvrow-fuzz COMMAND`` (also ``python -m fuzz``, ``./kvrow``): run, lifecycle, prove,
fidelity, matrix, from-crash, repro, targets; every usage line names it ``kvrow-fuzz`` (``fuzz.common.program``).

Each command lives in its package (``fuzz.run``, ``fuzz.lifecycle``,
``fuzz.prove``), whose ``cli.register`` adds its parser; an engine's own
commands (SGLang's ``fidelity``, ``matrix`` and ``advisory``) are its
package's, declared in the engine registry (``fuzz.engines.BUILTIN_COMMANDS``);
``repro`` and ``targets`` are small and live here.  Exit status: see
``fuzz.common.errors.ExitCode``; bad input is always one line on stderr.

Every parser is light: a command's ``--help`` or usage error imports no
torch, numpy or Hypothesis (``tests/test_cli.py``); each handler imports its
engine, or is named ``"module:function"`` and imported when it runs
(``fuzz.common.options.add_command``).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from fuzz.common import guard, interrupts
from fuzz.common.bounds import check_case_sizes
from fuzz.common.collector import collect_less_often
from fuzz.common.defaults import PROG
from fuzz.common.errors import BadInput, ExitCode, did_you_mean, one_line, os_error_line
from fuzz.common.streams import LOST, ClosedPipeTolerant, settled
from fuzz.common.threads import one_torch_thread_per_process
from fuzz.engines import BUILTIN_COMMANDS

# Packages adding commands: each cli module has register(subparsers), which adds a parser
# with set_defaults(func=handler); handler(args) returns the exit status.
COMMAND_MODULES: tuple[str, ...] = (
    "fuzz.run.cli",
    "fuzz.lifecycle.cli",
    "fuzz.prove.cli",
    *(module for module, _ in BUILTIN_COMMANDS.values()),  # the engines' own commands
    "fuzz.oss.cli",  # from-crash
    "fuzz.report_commands",  # merge (the shards' reports as one)
    "fuzz.ci.baseline",  # baseline write: the known findings --baseline accepts
    "fuzz.ci.paths",  # paths: every SGLang file a target reads
)


# An engine's command module -> its commands' summaries.
ENGINE_COMMANDS: dict[str, dict[str, str]] = {module: summaries for module, summaries in BUILTIN_COMMANDS.values()}


def add_unavailable_commands(sub: argparse._SubParsersAction, summaries: dict[str, str], error: ImportError) -> None:
    """An engine's commands where its code cannot be loaded: each still parses (any arguments) and answers with the
    one line that names the engine and why (exit 2), as a target of that engine does; the other commands work."""

    def unavailable(args: argparse.Namespace) -> int:
        raise error  # ``main`` names the engine behind it (``fuzz.engines.unavailable_behind``)

    for name, summary in summaries.items():
        # No option prefix: every argument, ``--help`` included, is taken as is and answered by the one line.
        p = sub.add_parser(name, help=summary, description=summary, add_help=False, prefix_chars="\0")
        p.add_argument("arguments", nargs="*")
        p.set_defaults(func=unavailable)


# Each command's one-line summary, as its module registers it (``tests/test_cli.py`` holds the two equal): the
# top-level help and a mistyped command are answered from here, before any command module is imported.
COMMANDS: dict[str, str] = {
    "run": "fuzz one or more targets",
    "lifecycle": "stateful fuzzing of the request lifecycle",
    "prove": "check every configuration of a bounded space (closed form)",
    **{name: summary for _, commands in BUILTIN_COMMANDS.values() for name, summary in commands.items()},
    "from-crash": "turn a crash input of the Atheris fuzzers (ClusterFuzzLite, OSS-Fuzz) into a case file",
    "merge": "combine the shards' reports (--shard I/N) into one",
    "baseline": "record a target's root causes as known findings (baseline write FILE --target SPEC)",
    "paths": "list every file of its engine's code a target reads (a CI workflow's paths: filter)",
    "repro": "replay a case file",
    "targets": "list what can be targeted",
}


def light_help() -> str:
    """The top-level help, from ``COMMANDS`` alone."""
    width = max(map(len, COMMANDS))
    lines = [
        f"usage: {PROG} [-h] [--version] {{{','.join(COMMANDS)}}} ...",
        "",
        "Fuzz KV-cache row sizing (SGLang req_to_token) for out-of-bounds writes.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {summary}" for name, summary in COMMANDS.items()),
        "",
        "options:",
        "  -h, --help  show this help message and exit",
        "  --version   show program's version number and exit",
        "",
        f"Each command's own help: {PROG} COMMAND --help.",
    ]
    return "\n".join(lines)


def light_answer(argv: list[str]) -> int | None:
    """The exit status of what needs no command module (the top-level help, the version, a command that does
    not exist), having printed it; None: the full parser's work."""
    if argv in (["-h"], ["--help"]):
        print(light_help())
        return ExitCode.CLEAN
    if argv == ["--version"]:
        print(f"{PROG} {tool_version()}")
        return ExitCode.CLEAN
    if not argv:
        raise BadInput(f"the following arguments are required: command (see: {PROG} --help)")
    if not argv[0].startswith("-") and argv[0] not in COMMANDS:
        hint = did_you_mean(argv[0], COMMANDS)
        raise BadInput(f"argument command: invalid choice: {argv[0]!r}{hint} (see: {PROG} --help)")
    return None


def build_parser() -> argparse.ArgumentParser:
    from fuzz.common.options import SGLANG_VERSION_HELP, Parser

    p = Parser(prog=PROG, description="Fuzz KV-cache row sizing (SGLang req_to_token) for out-of-bounds writes.")
    p.add_argument("--version", action="version", version=f"{PROG} {tool_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(name).register(sub)
        except ImportError as e:
            if name not in ENGINE_COMMANDS:
                raise
            add_unavailable_commands(sub, ENGINE_COMMANDS[name], e)

    rep = sub.add_parser(
        "repro",
        help="replay a case file",
        description=(
            "Replay a case file deterministically. Exit 1: the failure reproduces; 0: it no longer does; 2: bad file."
        ),
    )
    add_repro_arguments(rep, SGLANG_VERSION_HELP)
    rep.set_defaults(func=cmd_repro)

    sub.add_parser("targets", help="list what can be targeted").set_defaults(func=cmd_targets)
    return p


def add_repro_arguments(p: argparse.ArgumentParser, sglang_version_help: str | None = None) -> None:
    """``repro``'s arguments (also parsed on their own, light, by ``check_repro_early``)."""
    p.add_argument("case", metavar="CASE.json")
    p.add_argument(
        "--emit-test",
        action="store_true",
        help="print a ready-to-paste pytest regression test for the case instead of replaying it",
    )
    p.add_argument(
        "--target",
        metavar="SPEC",
        help=(
            "replay on this target instead of the case's own (needed when the case names a local file or the "
            "installed sglang: a case file never runs code it names); e.g. a fixed checkout"
        ),
    )
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=sglang_version_help)


class _Unparsed(Exception):
    pass


class _LightParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Unparsed(message)


def check_repro_early(argv: list[str]) -> None:
    """Before anything heavy is imported (torch, Hypothesis): the case file of ``repro`` read within its size
    bound and its sizes within the limits (``fuzz.common.bounds``); BadInput otherwise.

    So a case with ``context_len`` 10**9 is one line and exit 2 in a blink, even where importing torch
    would not fit.  Arguments this parse cannot read are left to the full parser.
    """
    parser = _LightParser(add_help=False)
    add_repro_arguments(parser)
    try:
        args, _ = parser.parse_known_args(argv)
    except _Unparsed:
        return
    check_case_sizes(args.case)


def tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kvrow-fuzz")
    except PackageNotFoundError:
        return "(not installed)"


def cmd_repro(args: argparse.Namespace) -> ExitCode:
    from fuzz.engines import runs_named_code
    from fuzz.findings import casefile
    from fuzz.findings.regression import emit_test
    from fuzz.targets.resolve import resolve_targets

    try:
        doc = casefile.load_document(args.case)
        target = args.target
        if args.sglang_version:
            if target is None and runs_named_code(doc["target"]):
                raise BadInput(f"{args.case} names a local target: give it with --target SPEC --sglang-version X.Y.Z")
            target = resolve_targets([target or doc["target"]], args.sglang_version)[0].spec
        result = casefile.replay_document(doc, args.case, target)  # also validates it fully before printing code
    except casefile.CaseFileError as e:
        raise BadInput(str(e)) from None
    if args.emit_test:
        print(emit_test(doc), end="")
        return ExitCode.CLEAN
    print(result.text)
    return ExitCode.FOUND if result.reproduced else ExitCode.CLEAN


def cmd_targets(args: argparse.Namespace) -> ExitCode:
    from fuzz.targets.resolve import known_targets

    for spec, summary in known_targets():
        print(f"{spec:<28} {summary}")
    return ExitCode.CLEAN


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status reflects the findings however stdout is consumed.

    ``argv`` None: this process is the program (``kvrow-fuzz``, ``python -m fuzz``, ``./kvrow``), and a command
    that runs a target's code is guarded (``program``); a list: the command runs here, as a caller (a test) asks.
    """
    if argv is None:
        return program(sys.argv[1:])
    return run_command(list(argv))


# Commands that never run a target's code (they read reports, or list names): they run in the program's process.
# Every other command runs in a child whose verdict the program waits for (``fuzz.common.guard``).
RUNS_NO_TARGET_CODE = frozenset({"merge", "targets"})


def guarded(argv: list[str]) -> bool:
    """Whether ``argv`` names a command that runs a target's code (the top-level help, the version and a mistyped
    command are answered in this process)."""
    return bool(argv) and argv[0] in COMMANDS and argv[0] not in RUNS_NO_TARGET_CODE and guard.available()


def program(argv: list[str]) -> int:
    """The program's exit status: a guarded command's verdict as its child sent it (``ExitCode.NO_VERDICT`` when
    the child ended without one: never clean); in the child, the command's status, sent as its last act."""
    channel = guard.take_channel()
    if channel is None:
        if guarded(argv):
            return guard.supervise(guard.child_command(argv), argv[0])
        return run_command(argv)
    interrupts.install()  # before the signals held back while this process started arrive
    guard.unblock_signals()
    status = run_command(argv)
    guard.send_verdict(channel, status)
    return status


def run_command(argv: list[str]) -> int:
    """One command in this process; bad input is one line and ``ExitCode.BAD_INPUT``."""
    interrupts.install()
    collect_less_often()
    stdout = sys.stdout
    sys.stdout = ClosedPipeTolerant(stdout)  # type: ignore[assignment]
    LOST.reset()
    try:
        light = light_answer(argv)
        if light is not None:
            return settled(light)
        if argv[:1] == ["repro"]:
            check_repro_early(argv[1:])
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help: argparse's exit, a status like any other (a guarded child sends it)
            return settled(e.code) if isinstance(e.code, int) else ExitCode.BAD_INPUT
        if argv[0] not in RUNS_NO_TARGET_CODE:  # after the parser: --help answers without torch
            one_torch_thread_per_process()
        return settled(int(args.func(args)))  # output lost (a full disk, no stdout): never a clean exit
    except BadInput as e:
        print(f"{PROG}: error: {one_line(str(e))}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except OSError as e:  # an output (or input) the system refused mid-command: one line, never a traceback
        print(f"{PROG}: error: {os_error_line(e)}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except Exception as e:  # noqa: BLE001 - only a target that cannot be run is ours to report
        from fuzz.engines import unavailable_behind  # not at import: the CLI starts without torch
        from fuzz.targets.base import TargetError

        if isinstance(e, ImportError) and (unavailable := unavailable_behind(e)) is not None:
            e = unavailable  # the command needs an engine that cannot be loaded here: said, never a traceback
        if not isinstance(e, TargetError):  # found out mid-command (StandInMissing): nothing was checked
            raise
        print(f"{PROG}: error: {one_line(str(e))}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    finally:
        sys.stdout = stdout
