"""The SGLang engine's own commands: ``fidelity`` and ``matrix`` (``fidelity.cli``), ``advisory`` and ``judge-fix``.

What the registry names (``fuzz.engines.BUILTIN_COMMANDS``): ``fuzz.cli``
calls ``register`` as it calls a core command module's, and where the
engine's code cannot be loaded answers each of these commands with the one
line that names it. Light, as every command's parser is
(``tests/test_cli.py``): each executor (``fidelity.cli``'s handlers,
``causes.commands``) imports the model and SGLang's code, and is imported
only when its command runs.
"""

from __future__ import annotations

from typing import Any

from fuzz.common.options import add_command

from .fidelity import cli as fidelity_cli


def register(subparsers: Any) -> None:
    fidelity_cli.register(subparsers)
    register_advisory(subparsers)
    register_judge_fix(subparsers)


FIX_HELP = (
    "[LABEL=]PATH: a checkout directory with the fix, or a unified diff (git diff) applied to a copy of the tree the "
    "cases ran on (python/sglang/ only; a hunk that does not apply is bad input); LABEL names it (default: its name)"
)


def register_advisory(subparsers: Any) -> None:
    advisory = add_command(
        subparsers,
        "advisory",
        "write an upstream-ready issue (Markdown) per root cause of case files or reports",
        "Write one Markdown advisory per root cause found in case files, directories of them, or JSON reports. "
        "Exit 0: written; 1: no case reproduces; 2: bad input.",
        "fuzz.engines.sglang.causes.commands:cmd_advisory",
    )
    advisory.add_argument(
        "inputs", nargs="+", metavar="CASE-or-REPORT", help="case files, directories of them, reports"
    )
    advisory.add_argument(
        "--out", default="advisories", metavar="DIR", help="where DIR/<cause>.md go (default advisories)"
    )
    advisory.add_argument(
        "--target",
        metavar="SPEC",
        help="replay every case on SPEC (sglang==X.Y.Z, sglang, a checkout PATH[@X.Y.Z]) instead of the target "
        "each names; a case never runs code it names, and a model target (reference[@REVISION]) gets no advisory",
    )
    advisory.add_argument(
        "--fix",
        action="append",
        metavar="[LABEL=]PATCH_OR_CHECKOUT",
        help=f"a proposed fix, judged on every case of each cause (as judge-fix does) and its verdict written into the "
        f"cause's advisory; repeatable. {FIX_HELP}",
    )
    advisory.add_argument(
        "--cases", default="fuzz-cases", metavar="DIR", help="where a --fix's left cases without a case file go"
    )


def register_judge_fix(subparsers: Any) -> None:
    judge = add_command(
        subparsers,
        "judge-fix",
        "judge a proposed fix: replay every case of a root cause on the fixed code",
        "Replay every case of each root cause in case files, directories of them, or JSON reports on the code with "
        "a proposed fix (a second checkout, or a patch applied to a copy of the cases' tree), then the cause's "
        "covering set where its table has one; list every case the fix leaves, with its repro line. Exit 0: the fix "
        "closes every case; 1: it leaves some; 2: bad input.",
        "fuzz.engines.sglang.causes.commands:cmd_judge_fix",
    )
    judge.add_argument("inputs", nargs="+", metavar="CASE-or-REPORT", help="case files, directories of them, reports")
    judge.add_argument("--fix", required=True, metavar="[LABEL=]PATCH_OR_CHECKOUT", help=FIX_HELP)
    judge.add_argument(
        "--target",
        metavar="SPEC",
        help="the code without the fix (sglang==X.Y.Z, sglang, a checkout PATH[@X.Y.Z]): every case replayed there "
        "first, and the tree a patch is applied to (default: the one target the cases name)",
    )
    judge.add_argument(
        "--cause", metavar="KEY", help="judge only the cases of this root cause (e.g. fa3_page_table-width)"
    )
    judge.add_argument(
        "--tree",
        metavar="DIR",
        help="a new or empty directory the patched copy is written to and kept (the repro lines name it); default: "
        "a temporary one, removed at the end (the repro lines then name YOUR_CHECKOUT)",
    )
    judge.add_argument(
        "--cases", default="fuzz-cases", metavar="DIR", help="where a left case without a case file is written"
    )
