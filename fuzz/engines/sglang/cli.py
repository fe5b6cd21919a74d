"""The SGLang engine's own commands: ``fidelity`` and ``matrix`` (``fidelity.cli``), ``advisory`` (here).

What the registry names (``fuzz.engines.BUILTIN_COMMANDS``): ``fuzz.cli``
calls ``register`` as it calls a core command module's, and where the
engine's code cannot be loaded answers each of these commands with the one
line that names it. Light, as every command's parser is
(``tests/test_cli.py``): each executor (``fidelity.cli``'s handlers,
``causes.advisory``) imports the model and SGLang's code, and is imported
only when its command runs.
"""

from __future__ import annotations

from typing import Any

from fuzz.common.options import add_command

from .fidelity import cli as fidelity_cli


def register(subparsers: Any) -> None:
    fidelity_cli.register(subparsers)
    register_advisory(subparsers)


def register_advisory(subparsers: Any) -> None:
    advisory = add_command(
        subparsers,
        "advisory",
        "write an upstream-ready issue (Markdown) per root cause of case files or reports",
        "Write one Markdown advisory per root cause found in case files, directories of them, or JSON reports. "
        "Exit 0: written; 1: no case reproduces; 2: bad input.",
        "fuzz.engines.sglang.causes.advisory:cmd_advisory",
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
