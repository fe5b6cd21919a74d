"""The command line: ``python -m fuzz run|repro|targets``.

Exit status: 0 no counterexample (or, for repro, the failure no longer
reproduces); 1 at least one counterexample (the failure reproduces); 2 bad
input, always as one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import signal
import sys
import threading

from hypothesis import settings as Settings

from allocator_model.config import ConfigError
from strategies.space import check_pins

from . import casefile
from .harness import CampaignResult, campaign
from .profiles import PROFILES, default_profile_name, get_profile
from .targets import TargetError, known_targets, resolve_target

EXIT_CLEAN, EXIT_FOUND, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_CASES_DIR = "fuzz-cases"


class BadInput(Exception):
    """Reported as one line and exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not usage + error
        sub = " ".join(self.prog.split()[1:])  # "fuzz run" -> "run"; the top parser has none
        raise BadInput(f"{message} (see: python -m fuzz {sub + ' ' if sub else ''}--help)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None


def add_campaign_options(p: argparse.ArgumentParser, *, targets_help: str) -> None:
    """Options every fuzzing command shares (run, and the commands that build on it)."""
    p.add_argument("--target", action="append", required=True, metavar="SPEC", help=targets_help)
    p.add_argument("--profile", choices=PROFILES, default=None,
                   help="Hypothesis profile (default: ci under CI=true, else dev)")
    p.add_argument("--max-examples", type=_positive_int, metavar="N", help="examples per round (overrides the profile)")
    p.add_argument("--seed", type=_seed, metavar="N", help="random seed (turns derandomize off; nightly picks and prints one)")
    p.add_argument("--cases", default=DEFAULT_CASES_DIR, metavar="DIR", help=f"where case files go (default {DEFAULT_CASES_DIR})")
    p.add_argument("--json", metavar="FILE", help="write a JSON report of every target")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def resolve_targets(specs: list[str]) -> list:
    try:
        return [resolve_target(spec) for spec in specs]
    except TargetError as e:
        raise BadInput(str(e)) from None


def parse_pins(items: list[str]) -> dict:
    """``NAME=VALUE`` pairs; VALUE is JSON when it parses (64, true, null, [1,3]), else a string."""
    pins = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"--pin expects NAME=VALUE, got {item!r}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        pins[name.strip()] = value
    try:
        check_pins(pins)
    except ConfigError as e:
        raise BadInput(f"invalid configuration: {e}") from None
    return pins


def campaign_settings(args) -> tuple[str, Settings, int | None]:
    """(profile name, Hypothesis settings, seed) from the shared options; prints nothing."""
    name = args.profile or default_profile_name()
    try:
        hyp = get_profile(name)
    except KeyError as e:
        raise BadInput(e.args[0]) from None
    if args.max_examples:
        hyp = Settings(hyp, max_examples=args.max_examples)
    seed = args.seed
    if seed is None and name == "nightly":
        seed = random.SystemRandom().randrange(2**32)
    return name, hyp, seed


SGLANG_VERSION_HELP = "decode semantics for file and installed SGLang targets (default: their version, else the newest)"


def _sglang_versioned(specs: list[str], version: str | None) -> list[str]:
    """Specs with --sglang-version applied (it names the semantics of a file of unknown version)."""
    if not version:
        return specs
    from .sglang import with_sglang_version

    try:
        return [with_sglang_version(s, version) for s in specs]
    except TargetError as e:
        raise BadInput(str(e)) from None


# Modules adding subcommands: each has register(subparsers), which adds a parser
# with set_defaults(func=handler); handler(args) returns the exit status.
COMMAND_MODULES: list[str] = ["fuzz.prove", "fuzz.differential", "fuzz.matrix", "fuzz.lifecycle_cli"]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fuzz", description="Fuzz KV-cache row sizing (SGLang req_to_token) for out-of-bounds writes.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="fuzz one or more targets", description=(
        "Fuzz targets with Hypothesis. Exit 0: no counterexample; 1: at least one; 2: bad input."))
    add_campaign_options(run, targets_help="reference[@REVISION], sglang==X.Y.Z, sglang or PATH "
                                           "(repeatable; see `python -m fuzz targets`)")
    run.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    run.add_argument("--pin", action="append", default=[], metavar="NAME=VALUE",
                     help="fix a configuration field (SGLang name, e.g. page_size=64, speculative_algorithm=EAGLE, "
                          "speculative_adaptive_candidate_steps=[1,3]) and fuzz the rest; repeatable")
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser("repro", help="replay a case file", description=(
        "Replay a case file deterministically. Exit 1: the failure reproduces; 0: it no longer does; 2: bad file."))
    rep.add_argument("case", metavar="CASE.json")
    rep.add_argument("--emit-test", action="store_true",
                     help="print a ready-to-paste pytest regression test for the case instead of replaying it")
    rep.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    rep.set_defaults(func=cmd_repro)

    sub.add_parser("targets", help="list what can be targeted").set_defaults(func=cmd_targets)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return p


def _print_failure(f, out) -> None:
    print(f"COUNTEREXAMPLE {f.signature} on {f.target}", file=out)
    print(f"  config: {f.scenario.config.short()}", file=out)
    print(f"  case:   {f.scenario.describe()}", file=out)
    for line in f.violation.describe().splitlines():
        print(f"  {line}", file=out)
    print(f"repro: {f.repro}", file=out)


def _summary(results: list[CampaignResult], out) -> None:
    print("", file=out)
    print(f"{'target':<32} {'status':<28} {'examples':>9} {'seconds':>8}  groups", file=out)
    for r in results:
        groups = ", ".join(f.signature for f in r.failures) or "-"
        status = r.status + (" (interrupted)" if r.interrupted else "")
        print(f"{r.target:<32} {status:<28} {r.examples:>9} {r.seconds:>8.1f}  {groups}", file=out)


def exit_status(results: list[CampaignResult]) -> int:
    """0 clean, 1 findings (also when interrupted after some), 130 interrupted with none, 2 errors."""
    if any(r.failures for r in results):
        return EXIT_FOUND
    if any(r.interrupted for r in results):
        return 130
    return EXIT_BAD_INPUT if any(r.error for r in results) else EXIT_CLEAN


def campaign_header(what: str, hyp: Settings, seed: int | None) -> str:
    """The first line of a campaign: what runs, and how to run it again."""
    return what + (f", seed {seed}" if seed is not None else ", derandomized" if hyp.derandomize else "")


def drive_campaigns(args, targets, header: str, fuzz_one, save_case, print_failure, after=None) -> int:
    """What every fuzzing command does per target: fuzz, save and print each finding, summarize, exit status.

    ``fuzz_one(target, on_progress)`` runs one campaign; ``save_case(target, failure)``
    returns the case file path; ``after(result, out)`` may print a line of its own.
    """
    out = sys.stdout
    print(header, file=out)
    progress = None if args.quiet else (lambda p: print(p.line(), file=sys.stderr, flush=True))
    results: list[CampaignResult] = []
    for target in targets:
        print(f"== {target.spec}: {target.label}", file=out, flush=True)
        result = fuzz_one(target, progress)
        results.append(result)
        for f in result.failures:
            f.case_path = save_case(target, f)
            print_failure(f, out)
        if result.error:
            print(f"ERROR {target.spec}: {result.error}", file=out)
        if after:
            after(result, out)
        if result.interrupted:
            print("interrupted: reporting what was found so far", file=out)
            break
    _summary(results, out)
    if args.json:
        casefile.write_atomically(args.json, json.dumps({"targets": [r.to_json() for r in results]}, indent=2) + "\n")
    return exit_status(results)


def cmd_run(args) -> int:
    targets = resolve_targets(_sglang_versioned(args.target, args.sglang_version))
    profile_name, hyp, seed = campaign_settings(args)
    pins = parse_pins(args.pin)
    return drive_campaigns(
        args, targets, campaign_header(f"profile {profile_name}, {hyp.max_examples} examples per round", hyp, seed),
        lambda target, progress: campaign(target, hyp, seed=seed, on_progress=progress, pins=pins),
        lambda target, f: casefile.save_document(casefile.decode_document(target.spec, f), args.cases),
        _print_failure,
    )


def cmd_repro(args) -> int:
    try:
        if args.emit_test:
            from .regression import emit_test

            casefile.replay(args.case)  # validate it fully before printing code
            print(emit_test(casefile.load_document(args.case)), end="")
            return EXIT_CLEAN
        if args.sglang_version:
            doc = casefile.load_document(args.case)
            doc["target"] = _sglang_versioned([doc["target"]], args.sglang_version)[0]
            result = casefile.replay_document(doc, args.case)
        else:
            result = casefile.replay(args.case)
    except casefile.CaseFileError as e:
        raise BadInput(str(e)) from None
    print(result.text)
    return EXIT_FOUND if result.reproduced else EXIT_CLEAN


def cmd_targets(args) -> int:
    for spec, summary in known_targets():
        print(f"{spec:<28} {summary}")
    return EXIT_CLEAN


def _interrupt_on_sigterm() -> None:
    # CI cancels and time limits send SIGTERM: treat it like Ctrl-C so the run still reports.
    def handler(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> int:
    _interrupt_on_sigterm()
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except BadInput as e:
        print(f"fuzz: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("fuzz: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os._exit(EXIT_CLEAN)
