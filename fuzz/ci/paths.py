"""``kvrow-fuzz paths --target SPEC``: every file of the engine's code a target reads, as the engine's
repository names them (``Engine.code_paths``; SGLang's: ``fuzz.engines.sglang.real.paths``).

A CI workflow's ``paths:`` filter is this list: docs/ci.md's example is
generated from it and ``tests/test_ci.py`` holds the two equal. Exit 0:
listed; 2: bad input (a model target reads no engine file).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from fuzz.common.errors import ExitCode
from fuzz.common.options import SGLANG_VERSION_HELP, TARGETS_HELP, add_command
from fuzz.common.text import printable


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "paths",
        "list every file of its engine's code a target reads (a CI workflow's paths: filter)",
        "List every file of its engine's code a target reads (SGLang's: as SGLang's repository names them). "
        "Exit 0: listed; 2: bad input.",
        cmd_paths,
    )
    p.add_argument("--target", required=True, metavar="SPEC", help=TARGETS_HELP)
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    p.add_argument("--workflow", action="store_true", help="print them as a workflow's paths: line (JSON list)")


def cmd_paths(args: argparse.Namespace) -> ExitCode:
    from fuzz.engines import engine_of
    from fuzz.targets.resolve import resolve_targets

    (target,) = resolve_targets([args.target], args.sglang_version)
    paths = engine_of(target).code_paths(target)
    # A local target's files are named as the user's tree names them: each shown as one escaped line (the JSON
    # list escapes as JSON does).
    print(f"paths: {json.dumps(paths)}" if args.workflow else "\n".join(map(printable, paths)))
    return ExitCode.CLEAN
