"""Option parsing every command shares: the one-line parser, integer parsers, the campaign options, pins.

Commands build their parsers with ``parents=[campaign_options()]`` (the
argparse way to share options), so ``run`` and ``lifecycle`` take exactly
the same campaign options.

Light at import, as every command's parser is (``tests/test_cli.py``): a
``--help`` or a usage error imports no torch, numpy or Hypothesis; what
needs them (the profiles' settings, the pins' check) is imported where used.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .defaults import PROFILES, PROG
from .errors import BadInput, did_you_mean
from .files import check_output_dir, check_output_file
from .shards import parse_jobs, parse_shard
from .text import parse_int, printable

if TYPE_CHECKING:
    from hypothesis import settings as Settings

DEFAULT_CASES_DIR = "fuzz-cases"
PROFILE_NAMES = PROFILES  # (``fuzz.common.defaults``: light, where fuzz.common.profiles imports Hypothesis)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the command's --help (raised as BadInput)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sub = " ".join(self.prog.split()[1:])  # "kvrow-fuzz run" -> "run"; the top parser has none
        raise BadInput(f"{message}{did_you_mean_choice(message)} (see: {PROG} {sub + ' ' if sub else ''}--help)")


def did_you_mean_choice(message: str) -> str:
    """The suggestion for argparse's ``invalid choice: 'X' (choose from ...)`` (a command, an option's value)."""
    import re

    m = re.match(r"argument [^:]*: invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not m:
        return ""
    return did_you_mean(
        m.group(1),
        re.findall(r"'([^']*)'|([\w.-]+)", m.group(2))
        and [a or b for a, b in re.findall(r"'([^']*)'|([\w.-]+)", m.group(2))],
    )


def add_command(
    subparsers: Any,
    name: str,
    summary: str,
    description: str,
    func: Callable[..., Any] | str,
    parents: list[argparse.ArgumentParser] | None = None,
) -> argparse.ArgumentParser:
    """A command's parser: its one-line summary, its description (what it does, its exit statuses), its handler.

    ``func`` is the handler, or ``"module:function"`` naming it in a module imported only when the command
    runs (its executor, which imports the engines: torch, Hypothesis).
    """
    p: argparse.ArgumentParser = subparsers.add_parser(
        name, parents=parents or [], help=summary, description=description
    )
    p.set_defaults(func=func if callable(func) else handler(func))
    return p


def handler(name: str) -> Callable[[argparse.Namespace], Any]:
    """The handler ``"module:function"``, its module imported when it is called, not before."""
    module, _, function = name.partition(":")

    def run(args: argparse.Namespace) -> Any:
        return getattr(importlib.import_module(module), function)(args)

    run.__qualname__ = run.__name__ = function
    return run


def int_at_least(minimum: int, what: str) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum`` (``what`` names the bound in the message)."""

    def parse(text: str) -> int:
        try:
            value = parse_int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {printable(text, 60)!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value}")
        return value

    return parse


positive_int = int_at_least(1, "a positive integer")
non_negative_int = int_at_least(0, "an integer >= 0")


def seed_int(text: str) -> int:
    try:
        return parse_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {printable(text, 60)!r}") from None


TARGETS_HELP = "reference[@REVISION], sglang==X.Y.Z, sglang or PATH (repeatable; see `kvrow-fuzz targets`)"
SARIF_HELP = (  # fuzz.findings.sarif: one result per root cause (tests/test_sarif.py holds the two equal)
    "write a SARIF 2.1.0 log for code scanning: one result per root cause (its bug groups in the result), at the "
    "code the cause indicts"
)
SGLANG_VERSION_HELP = "decode semantics for file and installed SGLang targets (default: their version, else the newest)"
PIN_HELP = (
    "fix a configuration field (SGLang name, e.g. page_size=64, speculative_algorithm=EAGLE, "
    "speculative_adaptive_candidate_steps=[1,3]) and fuzz the rest; repeatable"
)


def campaign_options() -> argparse.ArgumentParser:
    """The options of every fuzzing campaign (``run``, ``lifecycle``), as an argparse parent."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--target", action="append", required=True, metavar="SPEC", help=TARGETS_HELP)
    p.add_argument(
        "--profile",
        choices=PROFILE_NAMES,
        default=None,
        help="Hypothesis profile (default: ci under CI=true, else dev)",
    )
    p.add_argument("--max-examples", type=positive_int, metavar="N", help="examples per round (overrides the profile)")
    p.add_argument(
        "--seed",
        type=seed_int,
        metavar="N",
        help="random seed (turns derandomize off, keeps the example database; nightly picks and prints one)",
    )
    add_output_options(p)
    add_detail_options(p)
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    p.add_argument("--pin", action="append", default=[], metavar="NAME=VALUE", help=PIN_HELP)
    p.add_argument(
        "--jobs",
        type=parse_jobs,
        metavar="N",
        help="worker processes, each with its own seed and share of the examples, sharing the example database "
        "(0 or auto: every core; default 1, nightly: every core)",
    )
    add_shard_option(p, "this shard's seeds and share of the examples")
    p.add_argument(
        "--write-path",
        choices=("auto", "sglang", "model"),
        default="auto",
        help="a real target's decode steps (run: the covering set, a sample of the search, every finding) and "
        "allocator (lifecycle) on SGLang's own code: auto (where the target has its tree and triton, else the "
        "model's, said in one line), sglang (exit 2 if it cannot), model",
    )
    add_baseline_options(p)
    return p


def add_detail_options(p: argparse.ArgumentParser, progress: str = "no progress lines") -> None:
    """``--quiet`` and ``--verbose``: how much of the findings the text shows (``render.Detail``); the JSON
    report, case files and SARIF hold every group whatever is given."""
    p.add_argument(
        "--quiet",
        action="store_true",
        help=f"{progress}; the summary and the root causes only, each group by name and each cause's repro line",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="every group's full block as it is found, call chains whole (default: one block per root cause)",
    )


def add_baseline_options(p: argparse.ArgumentParser) -> None:
    """``--baseline FILE`` (fail only on root causes not in it) and ``--baseline-strict``."""
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="known findings (kvrow-fuzz baseline write): exit 1 only for a root cause not in it; known ones are "
        "listed, entries no cause makes any more reported as fixed",
    )
    p.add_argument(
        "--baseline-strict",
        action="store_true",
        help="with --baseline: an entry no root cause of the run makes (fixed, or unused) exits 1 too",
    )


def read_baseline(args: argparse.Namespace, targets: list[Any]) -> dict[str, Any] | None:
    """The ``--baseline`` entries each target's root causes are judged against (target spec -> a frozenset of
    ``baseline.Entry``; None without one), read once as everywhere (``baseline.load_for``); BadInput (exit 2) for
    a file that is not a baseline, an empty name, or one that does not cover a target."""
    given = getattr(args, "baseline", None)
    if given is None:
        if getattr(args, "baseline_strict", False):
            raise BadInput("--baseline-strict needs --baseline FILE")
        return None
    from fuzz.findings import baseline

    try:
        return baseline.load_for(given, targets)
    except baseline.BaselineError as e:
        raise BadInput(str(e)) from None


def add_shard_option(p: argparse.ArgumentParser, what: str) -> None:
    """``--shard I/N`` (``fuzz.common.shards``), numbered from 1; ``merge`` combines the shards' reports."""
    p.add_argument(
        "--shard", type=parse_shard, metavar="I/N", help=f"run shard I of N (numbered from 1): {what}; see merge"
    )


def campaign_jobs(args: argparse.Namespace, profile: str) -> int:
    """``--jobs`` as given, else every core for the profiles that say so (nightly), else 1."""
    from .profiles import JOBS_EVERY_CORE

    if args.jobs:
        return int(args.jobs)
    return parse_jobs("auto") if profile in JOBS_EVERY_CORE else 1


def parse_pins(items: list[str], targets: Sequence[Any]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; VALUE is JSON when it parses (64, true, null, [1,3]), else a string; each checked by
    the engine of every target (``Engine.check_pins``: its configuration space names the fields)."""
    from fuzz.engines import engine_of

    pins: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"--pin expects NAME=VALUE, got {item!r}")
        name = name.strip()
        if name in pins:
            raise BadInput(f"--pin {name} given twice")
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError):
            value = text
        pins[name] = value
    if not pins:
        return pins
    for engine in {id(e): e for e in map(engine_of, targets)}.values():
        try:
            engine.check_pins(pins)
        except ValueError as e:
            raise BadInput(f"invalid configuration: {e}") from None
    for target in targets:
        refusing = getattr(engine_of(target), "pins_refused", None)  # optional: an engine may not say
        refused = refusing(target, pins) if refusing is not None else None
        if refused is not None:
            raise BadInput(refused)
    return pins


def campaign_settings(args: argparse.Namespace) -> tuple[str, Settings, int | None]:
    """(profile name, Hypothesis settings, seed) from the shared options; prints nothing.

    ``nightly`` without ``--seed`` picks one (printed in the header, so a
    night's run can be repeated).
    """
    from hypothesis import settings as Settings

    from .profiles import default_profile_name, get_profile

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


def add_output_options(p: argparse.ArgumentParser, cases: str = "case files") -> None:
    """``--cases DIR``, ``--json FILE`` and ``--sarif FILE``, as every command that finds things takes them."""
    p.add_argument(
        "--cases", default=DEFAULT_CASES_DIR, metavar="DIR", help=f"where {cases} go (default {DEFAULT_CASES_DIR})"
    )
    p.add_argument("--json", metavar="FILE", help="write a JSON report (fuzz/findings/report.schema.json)")
    p.add_argument(
        "--sarif",
        metavar="FILE",
        help=SARIF_HELP,
    )


def check_outputs(args: argparse.Namespace, *files: str) -> None:
    """``--cases``, ``--json``, ``--sarif`` (and any other output file options named) can be written: checked first."""
    if args.cases is not None and not args.cases.strip():
        raise BadInput("--cases '' names no directory")
    check_output_dir(args.cases, "--cases")
    for flag in ("--json", "--sarif", *files):
        path = getattr(args, flag.lstrip("-").replace("-", "_"))
        if path is not None and not path.strip():  # given empty: never silently write nothing
            raise BadInput(f"{flag} '' names no file")
        if path:
            check_output_file(path, flag)


def campaign_header(what: str, hyp: Settings, seed: int | None) -> str:
    """The first line of a campaign: what runs, and how to run it again."""
    return what + (f", seed {seed}" if seed is not None else ", derandomized" if hyp.derandomize else "")


def default_jobs() -> int:
    return min(2, os.cpu_count() or 1)
