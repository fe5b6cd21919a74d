"""``merge``'s case copies and the targets it recognises: what a shard wrote is never trusted to name a file,
a copy or a command.

A case file is looked for only inside its report's directory and copied
only once it validates as that finding's case, under a name made from the
validated case (its target only where the tool recognises it) and a digest
of the full target, kind and group: no two targets share a copy, and an
existing different file is never overwritten.  A repro line names merge's
own copy and, where the case needs a target, a spec the tool recognises
(``target_class``, its engine's reading) or the placeholder ``YOUR_CHECKOUT``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
from typing import Any

from fuzz.common.bounds import MAX_CASE_BYTES
from fuzz.common.errors import BadInput, TargetError
from fuzz.common.files import write_atomically
from fuzz.common.jsonfile import JsonFileError, parse_json, read_bytes
from fuzz.common.text import printable
from fuzz.engines import engine_for
from fuzz.findings import casefile
from fuzz.findings.kinds import Signature
from fuzz.findings.report import Command
from fuzz.findings.repro import PLACEHOLDER, repro_line
from fuzz.targets.base import TargetKind

MAX_READABLE = 120  # characters of a copy's readable name, before its digest

MAX_TARGET_CHARS = 4096  # a target spec: a path and a version


DIGEST_CHARS = 12


NEEDS_TARGET = (TargetKind.INSTALLED, TargetKind.FILE)  # ``runs_named_code``: a case file never runs code it names


def needs_target(kind: TargetKind) -> bool:
    """Whether a case of a target of ``kind`` replays only with ``--target`` (it would run code its spec names)."""
    return kind in NEEDS_TARGET


def target_class(spec: str) -> TargetKind | None:
    """The kind of a shard's target spec, as the engine that claims it reads the text; None: no target this tool
    resolves (empty, text around it, a control character, or a spec its engine does not recognise).

    Decided from the text alone (a shard ran elsewhere: its path need not exist here), and strictly: the
    spec is the canonical one a report records, so ``"reference "`` is not ``"reference"``.
    """
    if (
        not spec
        or len(spec) > MAX_TARGET_CHARS
        or spec != spec.strip()
        or printable(spec, MAX_TARGET_CHARS + 1) != spec
    ):
        return None
    try:
        return engine_for(spec).target_class(spec)
    except TargetError:  # no engine that could claim it loads
        return None


def printed_target(kind: TargetKind, spec: str) -> str | None:
    """What a repro line gives as ``--target`` for a case on ``spec``: nothing where the case replays on its own
    target; else what its engine recognises in every character, or ``PLACEHOLDER`` (a path a shard named is never
    printed in a command: pasting it would run that file)."""
    if not needs_target(kind):
        return None
    try:
        return engine_for(spec).printed_target(kind, spec)
    except TargetError:
        return PLACEHOLDER


def case_path(finding: dict[str, Any], report: str) -> str | None:
    """The case file of a finding, inside its report's directory; None: the finding names none.

    Of the shard's repro line only the path after ``repro`` is read, and
    only as a name to look for below the report's directory (the path
    itself, then its trailing parts: ``cases/x.json``, ``x.json``); what it
    resolves to must stay inside that directory (no ``..``, no absolute
    path, no link out) and be a regular ``.json`` file.  Nothing else of the
    line is kept: merge writes its own (``copy_case``).
    """
    repro = finding.get("repro")
    if not repro:
        return None
    sig = printable(finding["signature"], 200)
    try:
        words = shlex.split(repro)
        named = words[words.index("repro") + 1]
    except (ValueError, IndexError):
        raise BadInput(f"{report}: the repro line of {sig} names no case file") from None
    if not named.endswith(".json"):
        raise BadInput(f"{report}: the repro line of {sig} names {printable(named, 200)!r}, not a case file")
    base = os.path.realpath(os.path.dirname(os.path.abspath(report)))
    parts = [p for p in named.replace(os.sep, "/").split("/") if p not in ("", ".")]
    for i in range(len(parts)):
        tail = parts[i:]
        if ".." in tail:
            continue
        candidate = os.path.realpath(os.path.join(base, *tail))
        if os.path.commonpath([base, candidate]) == base and os.path.isfile(candidate):
            return candidate
    raise BadInput(f"{report}: the case file of {sig} is not in the report's directory ({printable(named, 200)})")


def copy_name(doc: dict[str, Any], command: str, target: str, group: str) -> str:
    """``READABLE--DIGEST.json``: the copy of a validated case ``doc`` of ``group`` on ``target``.

    The readable part is the case's target where the tool recognises it (a model or a release: ``local``
    for a path, never text a shard chose), its kind and its signature (a known name); the digest, of the
    command, the FULL target, the kind and the group, tells apart what folds alike (``a_b`` and ``a-b``,
    a trailing space), so one shard's case can never take another's name.
    """
    cls = target_class(target)
    spec = casefile.slug(target) if cls in (TargetKind.MODEL, TargetKind.RELEASE) else "local"
    kind = casefile.kind_part(doc["kind"])
    readable = f"{spec}--{kind}{casefile.slug(str(Signature.parse(doc['signature'])))}"[:MAX_READABLE]
    key = "\0".join((command, target, doc["kind"], group)).encode()
    return f"{readable}--{hashlib.sha256(key).hexdigest()[:DIGEST_CHARS]}.json"


def _holds(path: str, data: bytes) -> bool:
    """Whether ``path`` is a regular file (not a link) whose bytes are ``data``."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        return read_bytes(path, len(data), "case file") == data
    except (OSError, JsonFileError):
        return False


def place_copy(out_dir: str, name: str, text: str) -> str:
    """The path of ``text``'s copy in ``out_dir``: ``name`` if free or already holding the same bytes (reused),
    else ``name`` with a digest of the text; an existing different file is never overwritten (BadInput when
    both names are taken by other content)."""
    data = text.encode()
    stem = name.removesuffix(".json")
    for candidate in (name, f"{stem}-{hashlib.sha256(data).hexdigest()[:DIGEST_CHARS]}.json"):
        path = os.path.join(out_dir, candidate)
        if _holds(path, data):
            return path
        if not os.path.lexists(path):
            write_atomically(path, text)
            return path
    raise BadInput(f"{os.path.join(out_dir, name)} and its alternative hold other cases: give an empty --cases-out")


def copy_case(finding: dict[str, Any], report: str, target: str, out_dir: str, command: Command) -> None:
    """Copy the group's case file into ``out_dir`` (atomically, ``copy_name``), checked as a case of this finding,
    and give the finding a repro line of merge's own making: this tool's command, the copy, and where the case
    needs one a target the tool recognises or the placeholder (``printed_target``)."""
    source = case_path(finding, report)
    if source is None:
        finding.pop("repro", None)
        return
    sig = printable(finding["signature"], 200)
    try:
        data = read_bytes(source, MAX_CASE_BYTES, "case file")
        doc = casefile.validate_document(parse_json(data, source, "case file"), source)
        text = data.decode()
    except (JsonFileError, UnicodeDecodeError, ValueError, casefile.CaseFileError) as e:
        raise BadInput(f"{source}: not a case file ({printable(str(e).splitlines()[0], 300)})") from None
    if doc.get("signature") != finding["signature"] or doc.get("target") != target:
        raise BadInput(f"{source}: not the case file of {sig} on {printable(target, 200)} (named in {report})")
    group = str(finding.get("group") or finding["signature"])
    copy = place_copy(out_dir, copy_name(doc, command.value, target, group), text)
    cls = target_class(target)  # never None here: ``check_entry`` refused the target otherwise
    finding["repro"] = repro_line(copy, printed_target(cls, target) if cls else PLACEHOLDER)
    finding["_case"] = doc
