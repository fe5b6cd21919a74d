"""What every advisory is made of: one root cause's cases, grouped (``Advisory``), and the Markdown it is written in.

Shared by the advisory of a ``req_to_token`` cause (``advisory``), that of a
table checked on its own (``table_advisory``) and the fix judge's section
(``fixjudge``): every value from outside made printable, every code block
fenced and every code span delimited so nothing inside can close it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fuzz.common.errors import BadInput
from fuzz.common.text import MAX_SHOWN, markdown_block, printable
from fuzz.findings import casefile
from fuzz.findings.cause import Cause
from fuzz.findings.model import Finding
from fuzz.findings.regression import emit_test
from fuzz.targets.base import Target


@dataclass
class Advisory:
    """One root cause across the inputs' targets."""

    cause: Cause
    findings: dict[str, list[Finding]] = field(default_factory=dict)  # target spec -> its variants' findings
    where: dict[str, list[str]] = field(default_factory=dict)  # target spec -> the code the cause lives in
    targets: dict[str, Target] = field(default_factory=dict)
    cases: list[tuple[str, Finding]] = field(default_factory=list)  # (where the input came from, its finding)


def fenced(lines: list[str], language: str = "") -> str:
    """``markdown_block`` (each line made printable, a fence no line can close) with its language, and the blank
    line after it. Code (a ``language`` given) is printable ASCII already (``emit_test``, ``standalone_test``) and
    must come through unchanged: a line ``printable`` would shorten is refused (BadInput), never cut."""
    block = markdown_block(lines)
    fence, _, rest = block.partition("\n")
    if language and rest.splitlines()[:-1] != lines:
        raise BadInput(f"a line of the {language} code to embed is past {MAX_SHOWN} characters: not shown cut")
    return f"{fence}{language}\n{rest}"


def code(value: object) -> str:
    """``value`` as a Markdown code span: made printable, delimited by more backticks than any run inside."""
    text = printable(value, 300)
    ticks = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def regression_section(f: Finding, reads: str) -> list[str]:
    """The advisory's regression test: what ``repro --emit-test`` writes for ``f``; ``reads``: what it reads of the
    checkout it is pointed at, and what it needs."""
    return [
        "",
        "## Regression test",
        "",
        "Fails on the affected release, passes once fixed: `pytest test_kv_row_regression.py "
        f"--kvrow-target=CHECKOUT` (the root of an SGLang checkout: {reads}):",
        "",
        fenced(emit_test(casefile.document(f)).rstrip().splitlines(), "python"),
    ]
