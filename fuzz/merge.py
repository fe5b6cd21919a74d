"""``kvrow-fuzz merge REPORT.json...``: the shards' reports (``--shard I/N``) as one report, one summary.

Per target: counts summed (``max_*`` the maximum, per-function call counts
per key), one finding per bug group (its ``group``, else its ``signature``;
the first shard's, in the order the
reports are given; for ``prove`` the group's configurations summed and the
worst shard's witness kept), each group's case file copied once into
``--cases-out`` and its repro line pointed there.  The shards of a target
must agree on N and appear once each; for ``prove`` they must also cover
the space (every shard 1..N present, one space), or the verdict is not a
proof: which shards are missing is said.  Exit 1: a finding; 0: clean;
2: bad input, an error in a shard, or a proof whose shards are missing;
130: a shard was interrupted with nothing found.  Its parser: ``fuzz.report_commands``.

No clean without work: a report with no target entries, an entry that ran
nothing (no examples, no lifecycle steps, no configurations or no space
swept) unless it is a shard's error, or one that names no target this tool
resolves is bad input, never "clean"; every field merge reads is checked
against ``fuzz.findings.report``'s table of fields (types, finite bounds)
and only those fields reach the merged report.  Nothing a shard wrote is
printed in a command: a repro line names merge's own copy and, where the
case needs a target, a spec the tool recognises (``target_class``) or the
placeholder ``YOUR_CHECKOUT``, the target the shard named said on a line of
its own.  A copy is named from the validated case (its target only where
the tool recognises it) and a digest of the full target, kind and group,
so no two targets share one, and an existing different file is never
overwritten.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import Any

from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.files import check_output_dir, check_output_file, write_atomically
from fuzz.common.jsonfile import JsonFileError, read_json
from fuzz.common.shards import WHOLE, Shard, parse_shard
from fuzz.common.text import markdown_block, printable
from fuzz.findings.kinds import CaseKind, Property, Signature
from fuzz.findings.report import (
    REPORT_SCHEMA,
    REPORT_SCHEMA_VERSION,
    TRACE_FIELDS,
    Command,
    Field,
    Status,
    entry_fields,
    finding_fields,
    status_of,
    write_report,
)
from fuzz.merge_cases import MAX_TARGET_CHARS, PLACEHOLDER, copy_case, target_class
from fuzz.targets.base import TargetKind

MAX_REPORT_BYTES = 64 << 20
MAX_TARGETS = 1024  # target entries in one report (a run names a few targets; matrix, not merged, a dozen)
MAX_DEPTH = 8  # how deep a value of a target entry may nest (this tool writes at most 3)
MERGED = (Command.RUN, Command.LIFECYCLE, Command.PROVE)
# A shard's own: never combined (``causes`` and anything not in ENTRY_FIELDS never even read: merge decides the
# root causes again from the copied, validated case files, ``merged_causes``).
OWN = ("target", "status", "seconds", "findings", "shard", "interrupted", "error", "space", "method")
# What a target entry must count above zero to have done any work (a shard's error excepted: it says why).
WORK: dict[Command, tuple[str, ...]] = {
    Command.RUN: ("examples",),
    Command.LIFECYCLE: ("examples", "steps"),
    Command.PROVE: ("configurations",),
}


@dataclass
class Part:
    """One target's entry in one shard's report."""

    report: str
    shard: Shard
    entry: dict[str, Any]


@dataclass
class Merged:
    """One target's entry merged from its shards, and what is missing."""

    entry: dict[str, Any]
    missing: list[Shard] = field(default_factory=list)
    note: str | None = None  # why its root causes were not decided here


def load_report(path: str) -> dict[str, Any]:
    """A report read within its bound and checked to be one ``merge`` combines; BadInput otherwise."""
    try:
        doc = read_json(path, MAX_REPORT_BYTES, "report")
    except JsonFileError as e:
        raise BadInput(str(e)) from None
    if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
        raise BadInput(f'{path} is not a kvrow-fuzz report (no "schema": "{REPORT_SCHEMA}")')
    version = doc.get("schema_version")
    if type(version) is not int or version != REPORT_SCHEMA_VERSION:
        raise BadInput(f"{path} has schema_version {printable(repr(version), 40)}; this tool reads 1")
    if doc.get("command") not in [c.value for c in MERGED]:
        shown = printable(repr(doc.get("command")), 40)
        raise BadInput(f"{path} is a {shown} report; merge takes run, lifecycle and prove reports")
    targets = doc.get("targets")
    if not isinstance(targets, list) or not all(
        isinstance(t, dict) and isinstance(t.get("target"), str) and isinstance(t.get("findings"), list)
        for t in targets
    ):
        raise BadInput(f'{path}: "targets" must be a list of target entries, each with "target" and "findings"')
    if not targets:  # a shard that crashed before its first target, or a report of nothing: never "clean"
        raise BadInput(f"{path} has no target entries: the shard ran nothing")
    if len(targets) > MAX_TARGETS:
        raise BadInput(f"{path} has {len(targets):,} target entries (at most {MAX_TARGETS:,})")
    command = Command(doc["command"])
    for entry in targets:
        check_entry(entry, path, command)
    return doc


def _shown(value: Any) -> str:
    """A value a shard gave, as an error message shows it: its repr, escaped and short."""
    return printable(repr(value), 80)


def check_entry(entry: dict[str, Any], path: str, command: Command) -> None:
    """The target entry names a target this tool resolves, did work, and every field ``merge`` reads has its kind
    (``fuzz.findings.report``: types, finite numbers, bounds); BadInput if not.

    (``jsonschema`` is a test dependency; these are the fields merge reads.)
    """
    target = entry["target"]
    where = f"{path}: target {printable(target, 200)}"
    if len(target) > MAX_TARGET_CHARS:
        raise BadInput(f"{path}: a target spec of {len(target)} characters (at most {MAX_TARGET_CHARS})")
    if target_class(target) is None:
        raise BadInput(f"{where} names no target this tool resolves (`kvrow-fuzz targets` lists them)")
    for key, value in entry.items():
        if _depth(value) > MAX_DEPTH:
            raise BadInput(f'{where}: "{printable(key, 80)}" is nested deeper than {MAX_DEPTH} levels')
    if entry.get("status") not in [s.value for s in Status]:
        shown = ", ".join(s.value for s in Status)
        raise BadInput(f'{where}: "status" must be one of {shown}, got {_shown(entry.get("status"))}')
    own = {"seconds": Field.SECONDS, "error": Field.TEXT, "shard": Field.LABEL, "interrupted": Field.FLAG}
    fields = {**own, **entry_fields(command, entry["target"])}
    for key, kind in fields.items():
        if not kind.holds(entry.get(key)):
            raise BadInput(f'{where}: "{key}" must be {kind.value}, got {_shown(entry[key])}')
    if entry["status"] == Status.COUNTEREXAMPLE and not entry["findings"]:
        raise BadInput(f"{where} says {Status.COUNTEREXAMPLE.value} and lists no finding")
    if entry["status"] != Status.ERROR:  # an error says why nothing ran; anything else that ran nothing is no verdict
        check_work(entry, where, command)
    for f in entry["findings"]:
        check_finding(f, where)


def check_work(entry: dict[str, Any], where: str, command: Command) -> None:
    """BadInput unless the entry counts the work its command does (``WORK``; prove: a space too): a shard that
    crashed, or a report written by hand, that ran nothing is never read as clean."""
    for key in WORK[command]:
        if entry.get(key) is None:
            raise BadInput(f'{where} has no "{key}": the shard ran nothing this report can show')
        if entry[key] == 0:
            raise BadInput(f'{where} has "{key}" 0: the shard ran nothing')
    if command is Command.PROVE and (entry.get("space") is None or entry.get("method") is None):
        raise BadInput(f'{where} names no "space" or "method": the shard swept no space')


def check_finding(f: Any, where: str) -> None:
    """A finding's fields have their kinds (``FINDING_FIELDS``), its signature and group are known names
    (``Signature.parse``), its kind and class the enums'; BadInput otherwise."""
    if not isinstance(f, dict) or not isinstance(f.get("signature"), str):
        raise BadInput(f'{where}: a finding has no "signature"')
    for key in ("signature", "group"):  # parsed against the known names: never free text
        if f.get(key) is not None:
            try:
                Signature.parse(f[key])
            except ValueError as e:
                raise BadInput(f'{where}: a finding\'s "{key}" is not one this tool writes ({e})') from None
    sig = f["signature"]
    if f.get("repro") is not None and not isinstance(f["repro"], str):
        raise BadInput(f'{where}: finding {sig}: "repro" must be text')
    for key, enum in (("kind", CaseKind), ("class", Property)):
        if f.get(key) is not None and f[key] not in [e.value for e in enum]:
            raise BadInput(f'{where}: finding {sig}: "{key}" {_shown(f[key])} is not one this tool writes')
    for key, kind in finding_fields(f).items():
        if not kind.holds(f.get(key)):
            raise BadInput(f'{where}: finding {sig}: "{key}" must be {kind.value}, got {_shown(f[key])}')


def _depth(value: Any, limit: int = 64) -> int:
    """How deep JSON ``value`` nests (a scalar is 0), counted no further than ``limit``."""
    if limit <= 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in children), default=0)


def shard_of(entry: dict[str, Any], path: str) -> Shard:
    """The shard a target entry says it is (``"shard": "I/N"``); an entry without one is the whole."""
    text = entry.get("shard")
    if text is None:
        return WHOLE
    try:
        return parse_shard(str(text))
    except argparse.ArgumentTypeError as e:
        raise BadInput(f"{path}: target {printable(entry['target'], 200)}: shard {e}") from None


def check_shards(target: str, parts: list[Part]) -> list[Shard]:
    """The shards missing from ``parts`` (BadInput: counts that differ, a shard given twice)."""
    shown = printable(target, 200)
    counts = {p.shard.count for p in parts}
    if len(counts) > 1:
        raise BadInput(f"target {shown}: shards of different counts ({', '.join(map(str, sorted(counts)))})")
    seen: dict[int, str] = {}
    for p in parts:
        if p.shard.index in seen:
            raise BadInput(f"target {shown}: shard {p.shard} given twice ({seen[p.shard.index]}, {p.report})")
        seen[p.shard.index] = p.report
    n = counts.pop()
    return [Shard(i, n) for i in range(1, n + 1) if i not in seen]


def combine(kind: Field, values: list[Any]) -> Any:
    """Several shards' values of one field, by its kind: counts and times summed, a ``max_*`` level the greatest,
    lists joined, tallies per name, anything else the first shard's; None (a shard without it) ignored."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    if kind in (Field.COUNT, Field.SECONDS):
        return sum(present)
    if kind is Field.LEVEL:
        return max(present)
    if kind in (Field.LABELS, Field.SEEDS):
        return [x for v in present for x in v]
    if kind is Field.TABLES:  # a table is judged where every shard judged it (a shard without the field did not)
        names = list(dict.fromkeys(n for v in present for n in v))
        return {n: combine_judgement([v[n] for v in present if n in v], len(values)) for n in names}
    if kind in (Field.TALLY, Field.TRACE):
        kinds = TRACE_FIELDS if kind is Field.TRACE else {}
        keys = list(dict.fromkeys(k for v in present for k in v))
        return {k: combine(kinds.get(k, Field.COUNT), [v.get(k) for v in present]) for k in keys}
    return present[0]


def combine_judgement(shards: list[dict[str, Any]], of: int) -> dict[str, Any]:
    """One table's judgement over ``of`` shards: judged where each of them judged it (then as the first says),
    else the first shard's reason it was not."""
    if len(shards) == of and all(j["judged"] for j in shards):
        return shards[0]
    return next((j for j in shards if not j["judged"]), {"judged": False, "by": "not judged by every shard"})


def merge_findings(parts: list[Part], prove: bool) -> list[dict[str, Any]]:
    """One finding per group: the first shard's; for prove, configurations summed and the worst witness kept."""
    groups: dict[str, dict[str, Any]] = {}
    for p in parts:
        for found in p.entry["findings"]:
            if not isinstance(found, dict) or not isinstance(found.get("signature"), str):
                raise BadInput(f'{p.report}: a finding of {printable(p.entry["target"], 200)} has no "signature"')
            fields = finding_fields(found)
            f = {k: v for k, v in found.items() if k in fields}  # never a field merge does not check
            sig = str(f.get("group") or f["signature"])  # prove: the group's full signature
            prior = groups.get(sig)
            if prior is None:
                groups[sig] = {**f, "_report": p.report}
            elif prove:
                worse = (f.get("worst") or 0) > (prior.get("worst") or 0)
                kept = {**f, "_report": p.report} if worse else prior
                kept["configurations"] = (prior.get("configurations") or 0) + (f.get("configurations") or 0)
                firsts = [x for x in (prior.get("first_at"), f.get("first_at")) if x is not None]
                kept["first_at"] = min(firsts) if firsts else None
                groups[sig] = kept
    return [groups[s] for s in sorted(groups)]


def merge_target(target: str, parts: list[Part], command: Command) -> Merged:
    """The target's merged entry; prove's shards must sweep one space."""
    missing = check_shards(target, parts)
    entries = [p.entry for p in parts]
    if command is Command.PROVE:
        spaces = {(e.get("space"), e.get("method")) for e in entries}
        if len(spaces) > 1:
            shown = printable(sorted(map(str, spaces)), 300)
            raise BadInput(f"target {printable(target, 200)}: shards swept different spaces or methods ({shown})")
    findings = merge_findings(parts, command is Command.PROVE)
    errors = [f"shard {p.shard}: {p.entry['error']}" for p in parts if p.entry.get("error")]
    errors += [
        f"shard {p.shard}: error" for p in parts if p.entry.get("status") == Status.ERROR and not p.entry.get("error")
    ]
    interrupted = any(e.get("interrupted") or e.get("status") == Status.INTERRUPTED for e in entries)
    fields = entry_fields(command, target)  # the only fields carried over: each checked (``check_entry``)
    counts = list(dict.fromkeys(k for e in entries for k in e if k in fields and k not in OWN))
    entry: dict[str, Any] = {
        "target": target,
        "status": status_of(error="; ".join(errors) or None, found=bool(findings), interrupted=interrupted).value,
        "seconds": round(sum(float(e.get("seconds") or 0) for e in entries), 3),
        **{k: entries[0][k] for k in ("space", "method") if k in entries[0]},
        **{k: combine(fields[k], [e.get(k) for e in entries]) for k in counts},
        "interrupted": interrupted,
        "shards": [str(p.shard) for p in sorted(parts, key=lambda p: p.shard.index)],
        "findings": findings,
    }
    if command is Command.PROVE:
        entry["violations"] = sum(int(f.get("configurations") or 0) for f in findings)
    if missing:
        entry["missing_shards"] = [str(s) for s in missing]
    if errors:
        entry["error"] = "; ".join(errors)
    return Merged(entry, missing)


def merged_causes(m: Merged) -> str | None:
    """The target's root causes, decided here from its validated case files, each replayed by the target's engine
    (``Engine.replayed``), as the verdict pipeline finds them; None when the target resolves, else why not."""
    from fuzz.engines import engine_for
    from fuzz.verdict import PIPELINE

    docs = [f.pop("_case") for f in m.entry["findings"] if "_case" in f]
    try:
        engine = engine_for(m.entry["target"])
        rebuilt = [r for r in (engine.replayed(d) for d in docs) if r is not None]
        causes = PIPELINE.causes(rebuilt[0][0], [f for _, f in rebuilt]) if rebuilt else []
    except Exception as e:  # noqa: BLE001 - a target this machine cannot resolve (no wheel, no network)
        return f"root causes not decided here: {printable(str(e).splitlines()[0], 200)}"
    if causes:
        m.entry["causes"] = [c.to_json() for c in causes]
    return None


def summary_lines(command: Command, merged: list[Merged]) -> list[str]:
    """The one summary: per target its status, counts, shards and groups."""
    lines = [f"merged {command.value}: {len(merged)} target(s)"]
    for m in merged:
        e = m.entry
        count = (
            f"{e.get('configurations') or 0:,} configurations"
            if command is Command.PROVE
            else f"{e.get('examples') or 0:,} examples"
        )
        lines.append(f"{printable(e['target'])}: {e['status']}, {count}, shards {', '.join(e['shards'])}")
        if m.missing:
            lines.append(f"  missing shards: {', '.join(map(str, m.missing))}")
        lines += [
            f"  {printable(f['signature'])}" + (f"  {printable(f['repro'])}" if f.get("repro") else "")
            for f in e["findings"]
        ]
        cls = target_class(e["target"])
        if cls is TargetKind.FILE and any(f.get("repro") for f in e["findings"]):  # said apart, never in a command
            lines.append(f"  {PLACEHOLDER}: the shard named the target {printable(e['target'])}; give your own copy")
        for c in e.get("causes", []):  # decided by merge itself (``merged_causes``): its own text
            label = c["bug"] if c["kind"] == "known" and c["bug"] != "new" else f"new: {c['key']}"
            groups = len(c["variants"]) + sum(len(v) for v in c["needs_both"].values())
            lines.append(f"  root cause {label}: {c['title']} ({groups} group(s))")
        if m.note:
            lines.append(f"  {m.note}")
    return lines


def cmd_merge(args: argparse.Namespace) -> ExitCode:
    check_output_dir(args.cases_out, "--cases-out")
    for option in ("json", "markdown"):
        if getattr(args, option):
            check_output_file(getattr(args, option), f"--{option}")
    docs = [(path, load_report(path)) for path in args.reports]
    commands = {doc["command"] for _, doc in docs}
    if len(commands) > 1:
        raise BadInput(f"the reports are of different commands ({', '.join(sorted(commands))})")
    command = Command(commands.pop())
    parts: dict[str, list[Part]] = {}
    for path, doc in docs:
        for entry in doc["targets"]:
            parts.setdefault(entry["target"], []).append(Part(path, shard_of(entry, path), entry))
    merged = [merge_target(target, ps, command) for target, ps in parts.items()]
    for m in merged:  # case files first: a merged report names only copies that exist
        for f in m.entry["findings"]:
            copy_case(f, f.pop("_report"), m.entry["target"], args.cases_out, command)
        m.note = merged_causes(m)
    if args.json:
        write_report(args.json, command, [m.entry for m in merged])
    lines = summary_lines(command, merged)
    if args.markdown:
        write_atomically(args.markdown, markdown_block(lines))
    print("\n".join(lines))
    found = any(m.entry["findings"] for m in merged)
    if any(m.missing for m in merged):  # a lost shard may be the one that found something: never "clean"
        gaps = "; ".join(
            f"{printable(m.entry['target'], 200)}: {', '.join(map(str, m.missing))}" for m in merged if m.missing
        )
        what = "the prove shards do not cover the space" if command is Command.PROVE else "shards are missing"
        if not found:
            raise BadInput(f"{what}, missing {gaps}")
        print(f"fuzz: {what}, missing {gaps}", file=sys.stderr)
    statuses = {m.entry["status"] for m in merged}
    if found:
        return ExitCode.FOUND
    if Status.ERROR in statuses:
        return ExitCode.BAD_INPUT
    return ExitCode.INTERRUPTED if Status.INTERRUPTED in statuses else ExitCode.CLEAN
