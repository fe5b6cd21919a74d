"""Case files: the one artifact a finding leaves behind, and its deterministic replay.

Plain JSON with a schema version, independent of the Hypothesis version:
the target spec, the case kind, the property it broke, the configuration
(SGLang argument names) and the case.  Replaying runs the same model code
on the same inputs, so the same file always prints the same story.

Each kind of case is declared by its engine (``kinds.CaseType``): the
fields its case holds, and its replayer, imported the first time a case of
that kind is read, so validating a case never depends on which command
happened to be imported before.
"""

from __future__ import annotations

import importlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fuzz.common.bounds import MAX_CASE_BYTES
from fuzz.common.files import write_atomically
from fuzz.common.jsonfile import JsonFileError, read_json

from .kinds import CaseKind, CaseType, Property, Signature, case_type
from .model import Finding, Violation

SCHEMA = "kvrow-fuzz/case"
SCHEMA_VERSION = 1
# The origin a group's representative case is named by (``TARGET--prod--GROUP.json``): the same group as the
# minimal case's file beside it, at a deployment people run (``model.Search``). Short: a repro line stays whole.
REPRESENTATIVE = "prod"


class CaseFileError(Exception):
    """A case file that cannot be read or does not describe a case."""


# The fields a case file may hold, as ``document`` writes them (``case.schema.json`` says the same, with
# ``additionalProperties: false``; tests/test_schemas.py holds the two equal): an unknown field is refused, not
# carried along, so a case file means exactly what this tool reads from it.  Besides these, the field named after
# the case's engine: what the engine's own code did with the case (``Finding.confirmation``), a string.
REQUIRED_FIELDS = ("schema", "schema_version", "kind", "target", "property", "config", "case")
TEXT_FIELDS = ("message", "reached_by")  # strings when present
FIELDS = frozenset((*REQUIRED_FIELDS, "signature", *TEXT_FIELDS, "revision"))


@dataclass(frozen=True)
class Replay:
    """A replay's verdict: whether the case's failure reproduced, as which group, and the story to print."""

    reproduced: bool
    lines: tuple[str, ...]
    failed_as: Signature | None = None  # the group the case failed as on this replay (None: it passes)
    headline: str = ""  # the first line of that failure
    also: tuple[str, ...] = ()  # the other failures the replay met (of the case's other properties)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def signature(self) -> str | None:
        return None if self.failed_as is None else str(self.failed_as)


def verdict(
    story: list[str], prop: str, target: str, failed: Violation | None, at: str = "", also: list[str] | None = None
) -> Replay:
    """The verdict of a replay whose story so far is ``story``: ``failed`` is the violation of the case's
    property it met (``at``: where, e.g. " at step 4"), None if it passes; ``also``: other failures met."""
    lines = list(story)
    if failed is not None:
        lines += [f"FAILS {failed.signature}{at}", failed.describe()]
    else:
        lines.append(f"passes: {prop} no longer fails on {target}")
    lines += also or []
    if failed is None:
        return Replay(False, tuple(lines), also=tuple(also or ()))
    return Replay(True, tuple(lines), failed.signature, failed.headline, tuple(also or ()))


# (the case, where it came from, the target the command line names or None) -> the replay
Replayer = Callable[[dict[str, Any], str, str | None], Replay]


def replayer(kind: CaseKind) -> Replayer:
    module, _, name = case_type(kind).replayer.partition(":")
    fn: Replayer = getattr(importlib.import_module(module), name)
    return fn


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")


def document(f: Finding) -> dict[str, Any]:
    """The envelope every case file shares: schema, kind, target, what broke, the config and the case."""
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": f.kind.value,
        "target": f.target,
        "property": f.violation.prop.value,
        "signature": str(f.signature),
        "config": f.config.to_dict(),
        "case": f.case,
        "message": f.violation.describe(),
    }
    if f.revision is not None:
        doc["revision"] = f.revision.to_dict()  # the whole revision: replay rebuilds exactly what was compared
    if f.reached_by is not None:
        doc["reached_by"] = f.reached_by
    if f.confirmation is not None:
        if f.engine in FIELDS:
            raise ValueError(f"engine {f.engine!r} is named as a field of a case file")
        doc[f.engine] = f.confirmation  # what the engine's own code did with it (informational: replay runs it again)
    return doc


def kind_part(kind: str) -> str:
    """``KIND--`` in a case file's name, for a kind named apart from its engine's main kind; else nothing."""
    return f"{kind}--" if case_type(kind).named_apart else ""


def case_file_name(doc: dict[str, Any], origin: str | None = None) -> str:
    """TARGET--SIGNATURE.json for a decode case; other kinds (and ``origin``, e.g. prove's witnesses) named apart."""
    kind = kind_part(doc["kind"])
    prefix = f"{origin}--" if origin else ""
    return f"{slug(doc['target'])}--{prefix}{kind}{slug(doc['signature'])}.json"


def save_document(doc: dict[str, Any], directory: str, origin: str | None = None) -> str:
    path = os.path.join(directory, case_file_name(doc, origin))
    write_atomically(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return path


def save(f: Finding, directory: str, origin: str | None = None) -> str:
    """Write the finding's case file and remember where (``f.case_path``)."""
    f.case_path = save_document(document(f), directory, origin)
    return f.case_path


def load_document(path: str) -> dict[str, Any]:
    """A case file read within ``MAX_CASE_BYTES`` (``fuzz.common.jsonfile``), then validated."""
    try:
        doc = read_json(path, MAX_CASE_BYTES, "case file")
    except JsonFileError as e:
        raise CaseFileError(str(e)) from None
    return validate_document(doc, path)


def validate_document(doc: Any, where: str) -> dict[str, Any]:
    """``doc`` itself if it is a case file this tool reads, field by field as ``case.schema.json`` states it
    (no unknown field, exact types: ``schema_version`` the integer 1, never ``true``); CaseFileError otherwise."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise CaseFileError(f'{where} is not a kvrow-fuzz case file (no "schema": "{SCHEMA}")')
    version = doc.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise CaseFileError(f"{where} has schema_version {version!r:.40}; this tool reads {SCHEMA_VERSION}")
    for key in REQUIRED_FIELDS:
        if key not in doc:
            raise CaseFileError(f"{where} is missing the field {key!r}")
    kind = case_kind(doc)
    if kind is None:
        raise CaseFileError(
            f"{where} has unknown kind {doc['kind']!r:.60} (known: {', '.join(k.value for k in CaseKind)})"
        )
    known = FIELDS | ({engine} if (engine := _engine_field(case_type(kind), doc.get("case"))) else set())
    unknown = sorted(k for k in doc if k not in known)
    if unknown:
        raise CaseFileError(f"{where} has unknown field {unknown[0]!r:.60} (known: {', '.join(sorted(known))})")
    if not isinstance(doc["target"], str) or not doc["target"].strip():
        raise CaseFileError(f'{where}: "target" must be a target spec string, got {doc["target"]!r}')
    for key in (*TEXT_FIELDS, *known - FIELDS):
        if key in doc and not isinstance(doc[key], str):
            raise CaseFileError(f'{where}: "{key}" must be a string, got {doc[key]!r:.60}')
    if "revision" in doc and not case_type(kind).carries_revision:
        raise CaseFileError(f'{where}: "revision" belongs to a fidelity case, not a {kind.value} case')
    try:
        Property(doc["property"])
    except (ValueError, TypeError):
        raise CaseFileError(
            f"{where} has unknown property {doc['property']!r:.60} (known: {', '.join(p.value for p in Property)})"
        ) from None
    if "signature" in doc:
        try:
            sig = Signature.parse(doc["signature"])
        except ValueError:
            sig = None
        if sig is None or sig.prop != doc["property"]:
            raise CaseFileError(f"{where} has signature {doc['signature']!r}, not {doc['property']}/GROUP")
    if not isinstance(doc["config"], dict) or not isinstance(doc["case"], dict):
        raise CaseFileError(f'{where}: "config" and "case" must be JSON objects')
    ct = case_type(kind)
    problem = stray_field(doc["case"], ct.fields, f'a {kind.value} "case"') or ct.nested_problem(doc["case"])
    if problem:
        raise CaseFileError(f"{where}: {problem}")
    return doc


def _engine_field(ct: CaseType, case: Any) -> str:
    """The engine whose confirmation field a case file may carry: the declaring engine's, or for a core kind (a table
    case) the case's own engine (``CaseType.engine_of``) where its case object names one this tool knows; else none."""
    if ct.engine or ct.case_engine is None or not isinstance(case, dict) or ct.nested_problem(case) is not None:
        return ct.engine
    return ct.engine_of(case)


def stray_field(obj: dict[str, Any], known: frozenset[str], what: str) -> str | None:
    """``unknown field 'x' in WHAT (known: ...)`` for the first field of ``obj`` not in ``known``; None if none."""
    stray = sorted(k for k in obj if k not in known)
    return f"unknown field {stray[0]!r:.60} in {what} (known: {', '.join(sorted(known))})" if stray else None


def case_kind(doc: dict[str, Any]) -> CaseKind | None:
    kind = doc.get("kind")
    try:
        return CaseKind(kind) if isinstance(kind, str) else None
    except ValueError:
        return None


def replay(path: str, target: str | None = None) -> Replay:
    doc = load_document(path)
    return replay_document(doc, path, target)


def replay_document(doc: dict[str, Any], where: str = "the case", target: str | None = None) -> Replay:
    """Replay a case given as a dict (an emitted regression test embeds one).

    ``target``: the target the command line names; the case's own target is
    used only if it runs no code it names (``fuzz.targets.resolve.resolve_case_target``).
    """
    validate_document(doc, where)
    kind = case_kind(doc)
    assert kind is not None
    return replayer(kind)(doc, where, target)
