"""The parser of ``merge``: the command that reads what the others wrote (the shards' reports, their case files).

Light, as every command's parser is (``tests/test_cli.py``): its executor,
``fuzz.merge``, imports the findings model and the engines (torch,
Hypothesis), and is imported only when the command runs.
"""

from __future__ import annotations

from typing import Any

from fuzz.common.options import DEFAULT_CASES_DIR, add_command


def register(subparsers: Any) -> None:
    merge = add_command(
        subparsers,
        "merge",
        "combine the shards' reports (--shard I/N) into one",
        (
            "Combine run, lifecycle or prove reports of the shards of one campaign into one report: findings "
            "deduplicated by group, counts summed, one case file per group. Exit 0: clean; 1: a finding; "
            "2: bad input (a shard that ran nothing or names no target this tool resolves is bad input) or, for "
            "prove, missing shards."
        ),
        "fuzz.merge:cmd_merge",
    )
    merge.add_argument("reports", nargs="+", metavar="REPORT.json", help="the shards' --json reports")
    merge.add_argument(
        "--cases-out",
        default=DEFAULT_CASES_DIR,
        metavar="DIR",
        help=(
            f"where each group's case file is copied, as NAME--DIGEST.json, never over a different file "
            f"(default {DEFAULT_CASES_DIR})"
        ),
    )
    merge.add_argument("--json", metavar="FILE", help="write the merged report")
    merge.add_argument(
        "--markdown",
        metavar="FILE",
        help="write the summary as a Markdown code block no line can leave (for a CI job summary)",
    )
