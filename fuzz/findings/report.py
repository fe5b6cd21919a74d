"""The one JSON report every command writes (``--json FILE``; ``matrix`` writes DIR/matrix.json).

    {"schema": "kvrow-fuzz/report", "schema_version": 1, "command": "run",
     "targets": [{"target": ..., "status": ..., "seconds": ..., "findings": [Finding.to_json(), ...], ...}],
     ...command-wide fields}

Each target entry carries the command's own counts beside those four
fields (examples, runs and steps, configurations, releases' fidelity);
every finding has the shape of ``Finding.to_json``.  ``report.schema.json``
beside this module is the published schema; the tests validate every
command's report against it.  ``ENTRY_FIELDS`` and ``FINDING_FIELDS`` name
every field a command writes beside those, with its ``Field`` kind: what
``merge`` checks in a shard's report (and the only fields it carries over).
"""

from __future__ import annotations

import json
import math
import os
import re
from enum import Enum
from typing import Any

from fuzz.common.compat import StrEnum
from fuzz.common.errors import TargetError
from fuzz.common.files import write_atomically
from fuzz.common.text import printable
from fuzz.engines import engine_for

from .kinds import CaseKind, case_type

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


MAX_COUNT = 1 << 53  # a count JSON carries exactly (a full proof sweeps billions; a shard sums a few)
MAX_SECONDS = 1e9  # the schema's bound on a time
MAX_LABEL_CHARS = 200  # a space's, a method's or a release's name
MAX_TEXT_CHARS = 1 << 20  # a finding's message, its story of SGLang's path
MAX_SEED = 1 << 64


class Field(Enum):
    """The kind of one field of a report's target entry or finding: the value it may hold (None always may:
    a field a shard did not fill)."""

    COUNT = "an integer >= 0"
    LEVEL = "an integer"  # a ``max_*`` figure (may be negative)
    SECONDS = "a number >= 0"
    LABEL = "one short printable line of text"
    TEXT = "text"
    FLAG = "true or false"
    OBJECT = "an object"
    LABELS = "a list of short printable lines"
    SEEDS = "a list of integer seeds"
    TALLY = "an object of integers >= 0"
    TRACE = "prove's tracing figures"
    TABLES = "each table's judgement: an object of table names, each {judged: bool, by: text}"

    def holds(self, value: Any) -> bool:
        """Whether ``value`` is one of this kind (or None); never true for NaN, an infinity or a bool as a number."""
        if value is None:
            return True
        return _HOLDS[self](value)


def _integer(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _label(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_LABEL_CHARS and printable(value) == value


def _tables(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(name, str)
        and re.fullmatch(TABLE_NAME, name) is not None
        and isinstance(j, dict)
        and set(j) == {"judged", "by"}
        and type(j["judged"]) is bool
        and _label(j["by"])
        for name, j in value.items()
    )


def _trace(value: Any) -> bool:
    return isinstance(value, dict) and all(k in TRACE_FIELDS and TRACE_FIELDS[k].holds(v) for k, v in value.items())


_HOLDS = {
    Field.COUNT: lambda v: _integer(v, 0, MAX_COUNT),
    Field.LEVEL: lambda v: _integer(v, -MAX_COUNT, MAX_COUNT),
    Field.SECONDS: lambda v: type(v) in (int, float) and math.isfinite(v) and 0 <= v <= MAX_SECONDS,
    Field.LABEL: _label,
    Field.TEXT: lambda v: isinstance(v, str) and len(v) <= MAX_TEXT_CHARS,
    Field.FLAG: lambda v: type(v) is bool,
    Field.OBJECT: lambda v: isinstance(v, dict),
    Field.LABELS: lambda v: isinstance(v, list) and all(_label(x) for x in v),
    Field.SEEDS: lambda v: isinstance(v, list) and all(_integer(x, -MAX_SEED, MAX_SEED) for x in v),
    Field.TALLY: lambda v: isinstance(v, dict) and all(_label(k) and _integer(x, 0, MAX_COUNT) for k, x in v.items()),
    Field.TRACE: _trace,
    Field.TABLES: _tables,
}

TRACE_FIELDS = {  # ``fuzz.engines.sglang.prove.result.TraceStats``
    "blocks": Field.COUNT,
    "configs_traced": Field.COUNT,
    "configs_called": Field.COUNT,
    "paths": Field.COUNT,
    "diverged": Field.LABELS,
}
TABLE_NAME = r"[a-z][a-z0-9_]{0,63}"  # a table's name, as ``fuzz.tables.declare_table`` takes it
# ``fuzz.campaign``; every command that judges tables says which (``fuzz.tables.judged``)
_CAMPAIGN = {"examples": Field.COUNT, "jobs": Field.COUNT, "seeds": Field.SEEDS, "tables": Field.TABLES}
# The counts each command writes beside target, status, seconds, findings, interrupted, error and shard; a
# target's engine adds its own (``Engine.report_fields``: what its own code did, SGLang's write path say).
ENTRY_FIELDS: dict[Command, dict[str, Field]] = {
    Command.RUN: {
        **_CAMPAIGN,
        "proof_space": Field.LABEL,  # ``fuzz.engines.sglang.prove.quick`` stats
        "proved_configurations": Field.COUNT,
        "proof_seconds": Field.SECONDS,
        "proof_groups": Field.COUNT,
        "proof_skipped": Field.LABEL,
        "steps": Field.COUNT,  # decode steps, where a campaign counts them
    },
    Command.LIFECYCLE: {
        **_CAMPAIGN,
        "kind": Field.LABEL,  # ``fuzz.engines.sglang.lifecycle.machine`` stats
        "runs": Field.COUNT,
        "runs_started": Field.COUNT,
        "steps": Field.COUNT,
        "max_committed_len_minus_bound": Field.LEVEL,
    },
    Command.PROVE: {  # ``fuzz.engines.sglang.prove.result.ProveResult.to_json``
        "space": Field.LABEL,
        "method": Field.LABEL,
        "launch_configurations": Field.COUNT,
        "decode_shapes": Field.COUNT,
        "configurations": Field.COUNT,
        "violations": Field.COUNT,
        "sizing_calls": Field.TALLY,
        "trace": Field.TRACE,
        "tables": Field.TABLES,
    },
}
# A finding's fields (``Finding.to_json``; prove's groups add their counts); signature and group are parsed
# against the known names (``Signature.parse``), kind and class against their enums, by the reader.  Besides
# these, what the engine's own code did with the case: text under the name of the engine whose kind of case it is
# (``CONFIRMATION``, ``Finding.engine``).
FINDING_FIELDS: dict[str, Field] = {
    "kind": Field.LABEL,
    "class": Field.LABEL,
    "signature": Field.LABEL,
    "group": Field.LABEL,
    "cause": Field.LABEL,
    "outcome": Field.LABEL,
    "config": Field.OBJECT,
    "case": Field.OBJECT,
    "message": Field.TEXT,
    "found_at": Field.COUNT,
    "repro": Field.TEXT,
    "revision": Field.LABEL,
    "reached_by": Field.TEXT,
    "confirmed": Field.FLAG,
    "configurations": Field.COUNT,
    "worst": Field.COUNT,
    "first_at": Field.COUNT,
    "mismatch": Field.TEXT,
}
CONFIRMATION = Field.TEXT


def entry_fields(command: Command, target: str) -> dict[str, Field]:
    """The counts a ``command``'s entry for ``target`` has: ``ENTRY_FIELDS``, and those of the engine that claims
    the target (``Engine.report_fields``; none where no engine can)."""
    try:
        own = engine_for(target).report_fields.get(command, {})
    except TargetError:
        own = {}
    return {**ENTRY_FIELDS[command], **own}


def finding_fields(f: dict[str, Any]) -> dict[str, Field]:
    """The fields a finding of its kind has: ``FINDING_FIELDS``, and the confirmation of the engine whose kind of
    case it is, under that engine's name (a kind nobody declared has none)."""
    kind = f.get("kind")
    if not isinstance(kind, str) or kind not in [k.value for k in CaseKind]:
        return FINDING_FIELDS
    return {**FINDING_FIELDS, case_type(kind).engine: CONFIRMATION}


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
