"""The inputs of ``advisory`` and ``judge-fix``: case files, directories of them, and JSON reports, as case documents.

A case file is held to what ``repro`` reads (``casefile.load_document``); a
report's findings of a replayable kind become the case documents they store,
each validated as a case file is; more than ``MAX_CASES`` cases is refused,
never cut silently.
"""

from __future__ import annotations

import os
from typing import Any

from fuzz.common.bounds import MAX_CASE_BYTES
from fuzz.common.errors import BadInput
from fuzz.common.jsonfile import JsonFileError, read_json
from fuzz.common.text import printable
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.findings import casefile
from fuzz.tables.declared import TABLE_CASE

MAX_INPUT_BYTES = 64 << 20
MAX_CASES = 2000

REPLAYED = (SGLangCase.DECODE.value, SGLangCase.LIFECYCLE.value, TABLE_CASE.value)  # the kinds read from a report


def documents(path: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, case document) of one input: a case file, a directory of them, or a report. A case file is held to
    what ``repro`` reads (``casefile.load_document``: ``MAX_CASE_BYTES``, every field checked); more than
    ``MAX_CASES`` cases is refused, never cut silently."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".json"))
        check_count(len(names), path)
        return [doc for n in names for doc in documents(os.path.join(path, n))]
    try:
        data = read_json(path, MAX_INPUT_BYTES, "input")
    except JsonFileError as e:
        raise BadInput(str(e)) from None
    if isinstance(data, dict) and "targets" in data:  # a report: each finding as the case document it stores
        out = []
        for entry in data["targets"] if isinstance(data["targets"], list) else []:
            for i, f in enumerate(entry.get("findings", []) if isinstance(entry, dict) else []):
                where = f"{path}: {printable(entry.get('target'), 200)!r} finding {i + 1}"
                searched = f.get("representative") if isinstance(f, dict) else None
                found = searched.get("finding") if isinstance(searched, dict) else None
                for what, g in ((where, f), (f"{where}'s representative case", found)):
                    doc = from_report(entry, g) if g is not None else None
                    if doc is not None:
                        out.append((what, doc))
        check_count(len(out), path)
        return out
    try:
        if os.path.getsize(path) > MAX_CASE_BYTES:  # refused as repro refuses it, with its words
            casefile.load_document(path)
        return [(path, casefile.validate_document(data, path))]
    except (OSError, casefile.CaseFileError) as e:
        raise BadInput(str(e)) from None


def check_count(count: int, where: str) -> None:
    if count > MAX_CASES:
        raise BadInput(f"{where} holds {count} cases, past this tool's limit of {MAX_CASES} per advisory run")


def from_report(entry: dict[str, Any], f: Any) -> dict[str, Any] | None:
    """A report finding as a case document (None: not a replayable kind); validated like a case file."""
    if not isinstance(f, dict) or f.get("kind") not in REPLAYED:
        return None
    doc = {
        "schema": casefile.SCHEMA,
        "schema_version": casefile.SCHEMA_VERSION,
        "kind": f.get("kind"),
        "target": entry.get("target"),
        "property": f.get("class"),
        "signature": f.get("group") or f.get("signature"),
        "config": f.get("config"),
        "case": f.get("case"),
    }
    try:
        return casefile.validate_document(doc, "a report finding")
    except casefile.CaseFileError as e:
        raise BadInput(str(e)) from None
