"""``kvrow-fuzz from-crash CRASHFILE``: a crash input of the Atheris entry point, found anywhere, as a case file.

ClusterFuzzLite and OSS-Fuzz keep what crashed a fuzzer as raw bytes (the
``crash-<sha1>`` artifact).  Replayed through the same fuzz target
(``fuzz.oss.target``: the bytes alone decide the scenario) they give the
finding back, saved as a case file ``repro`` replays.  Exit 1: the input
fails the property (case file written); 0: it does not (fixed, or read
differently by another kvrow-fuzz/Hypothesis version); 2: bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.options import DEFAULT_CASES_DIR, SGLANG_VERSION_HELP, add_command

from .settings import DEFAULT_PROPERTY, DEFAULT_TARGET

MAX_CRASH_BYTES = 1 << 20  # libFuzzer's inputs are a few kilobytes (-max_len); Hypothesis reads at most 8 KiB of one


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "from-crash",
        "turn a crash input of the Atheris fuzzers (ClusterFuzzLite, OSS-Fuzz) into a case file",
        (
            "Replay a libFuzzer crash input (raw bytes, e.g. a ClusterFuzzLite crash-<sha1> artifact) through the "
            "Atheris entry point's fuzz target and write its case file. Exit 1: it fails the property (case file "
            "written); 0: it does not; 2: bad input."
        ),
        cmd_from_crash,
    )
    p.add_argument("crash", metavar="CRASHFILE")
    p.add_argument(
        "--property",
        default=DEFAULT_PROPERTY,
        metavar="NAME",
        help=f"the decode property the fuzzer checked (default {DEFAULT_PROPERTY})",
    )
    p.add_argument(
        "--target", default=DEFAULT_TARGET, metavar="SPEC", help=f"the target it fuzzed (default {DEFAULT_TARGET})"
    )
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    p.add_argument(
        "--cases",
        default=DEFAULT_CASES_DIR,
        metavar="DIR",
        help=f"where the case file goes (default {DEFAULT_CASES_DIR})",
    )


def read_crash(path: str) -> bytes:
    """The crash input's bytes: a regular file of at most ``MAX_CRASH_BYTES``; BadInput otherwise."""
    from fuzz.common.jsonfile import JsonFileError, read_bytes

    try:
        return read_bytes(path, MAX_CRASH_BYTES, "crash input")
    except JsonFileError as e:
        raise BadInput(str(e)) from None


def cmd_from_crash(args: argparse.Namespace) -> ExitCode:
    from fuzz.common.files import check_output_dir

    check_output_dir(args.cases, "--cases")
    data = read_crash(args.crash)
    from fuzz.findings.render import counterexample_block
    from fuzz.targets.resolve import resolve_targets

    from .target import Entry, FuzzConfig, fuzz_property, replay_bytes

    prop = fuzz_property(args.property)
    target = resolve_targets([args.target], args.sglang_version)[0]
    finding = replay_bytes(Entry(FuzzConfig(target.spec, prop, args.cases), target, quiet=True), data)
    if finding is None:
        print(f"passes: {args.crash} does not fail {prop.value} on {target.spec}")
        return ExitCode.CLEAN
    print(counterexample_block(finding))
    return ExitCode.FOUND
