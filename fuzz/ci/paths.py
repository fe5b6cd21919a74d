"""``python -m fuzz paths --target SPEC``: every SGLang file a target reads, as SGLang's repository names them.

The sizing module (``allocation_sizing.py``; ``mem_cache/common.py`` before
0.5.16), the file its pool builders and allocator pages are read from
(``kv_cache_configurator.py``; the ModelRunner mixin before 0.5.16), and,
where the target has its tree, every module of its release's decode write
path (``runtime/releases.py``). A CI workflow's ``paths:`` filter is this
list: docs/ci.md's example is generated from it and ``tests/test_ci.py``
holds the two equal. Exit 0: listed; 2: bad input (a model target reads no
SGLang file).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.options import SGLANG_VERSION_HELP, TARGETS_HELP, add_command
from fuzz.common.text import printable

if TYPE_CHECKING:
    from fuzz.targets.base import Target


def register(subparsers: Any) -> None:
    p = add_command(
        subparsers,
        "paths",
        "list every SGLang file a target reads (a CI workflow's paths: filter)",
        "List every SGLang file a target reads, as SGLang's repository names them. Exit 0: listed; 2: bad input.",
        cmd_paths,
    )
    p.add_argument("--target", required=True, metavar="SPEC", help=TARGETS_HELP)
    p.add_argument("--sglang-version", metavar="X.Y.Z", help=SGLANG_VERSION_HELP)
    p.add_argument("--workflow", action="store_true", help="print them as a workflow's paths: line (JSON list)")


def read_paths(target: Target) -> list[str]:
    """The repository paths of every SGLang file ``target`` reads (sizing, builders, write path), in that order."""
    from fuzz.engines.sglang.real.real import RealSizing
    from fuzz.engines.sglang.real.runtime.releases import release_for
    from fuzz.engines.sglang.real.runtime.tree import open_tree
    from fuzz.engines.sglang.real.wheels import repository_path

    if not isinstance(target.sizing, RealSizing):
        raise BadInput(f"{target.spec} is a model target: it reads no SGLang file")
    module = target.sizing.module
    out = [repository_path(module.filename)]
    if module.builders_origin:
        out.append(repository_path(module.builders_origin))
    if module.tree_source:
        release = release_for(open_tree(module.tree_source).version)
        out += [f"python/{dotted.replace('.', '/')}.py" for dotted in release.modules]
    return list(dict.fromkeys(out))


def cmd_paths(args: argparse.Namespace) -> ExitCode:
    from fuzz.targets.resolve import resolve_targets

    (target,) = resolve_targets([args.target], args.sglang_version)
    paths = read_paths(target)
    # A local target's files are named as the user's tree names them: each shown as one escaped line (the JSON
    # list escapes as JSON does).
    print(f"paths: {json.dumps(paths)}" if args.workflow else "\n".join(map(printable, paths)))
    return ExitCode.CLEAN
