"""The one JSON report every command writes (``--json FILE``; ``matrix`` writes DIR/matrix.json).

    {"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run",
     "targets": [{"target": ..., "status": ..., "seconds": ..., "findings": [Finding.to_json(), ...], ...}],
     ...command-wide fields}

Each target entry carries the command's own counts beside those four
fields (examples, runs and steps, configurations, releases' fidelity);
every finding has the shape of ``Finding.to_json``.  ``report.schema.json``
beside this module is the published schema; the tests validate every
command's report against it.
"""

from __future__ import annotations

import json
import os
from typing import Any

from allocator_model.compat import StrEnum
from fuzz.common.files import write_atomically

REPORT_SCHEMA = "kvrow-fuzz/report"
REPORT_SCHEMA_VERSION = 1
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.schema.json")


class Command(StrEnum):
    RUN = "run"
    LIFECYCLE = "lifecycle"
    PROVE = "prove"
    FIDELITY = "fidelity"
    MATRIX = "matrix"


class Status(StrEnum):
    """A target's outcome in a report."""

    CLEAN = "clean"
    COUNTEREXAMPLE = "counterexample"
    INTERRUPTED = "interrupted"  # stopped before its end with nothing found
    ERROR = "error"


def status_of(*, error: str | None, found: bool, interrupted: bool) -> Status:
    """A target's status: an error first, then findings (an interrupted run keeps them), then how it ended."""
    if error:
        return Status.ERROR
    if found:
        return Status.COUNTEREXAMPLE
    return Status.INTERRUPTED if interrupted else Status.CLEAN


def report_document(command: Command, targets: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {
        "schema": REPORT_SCHEMA,
        "schema_version": REPORT_SCHEMA_VERSION,
        "command": command.value,
        **fields,
        "targets": targets,
    }


def write_report(path: str, command: Command, targets: list[dict[str, Any]], **fields: Any) -> None:
    write_atomically(path, json.dumps(report_document(command, targets, **fields), indent=2) + "\n")
