"""``python -m fuzz merge REPORT.json...``: the shards' reports (``--shard I/N``) as one report, one summary.

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
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from typing import Any

from fuzz.common.bounds import MAX_CASE_BYTES
from fuzz.common.errors import BadInput, ExitCode
from fuzz.common.files import check_output_dir, check_output_file, write_atomically
from fuzz.common.jsonfile import JsonFileError, read_bytes, read_json
from fuzz.common.shards import WHOLE, Shard, parse_shard
from fuzz.common.text import markdown_block, printable
from fuzz.findings import casefile
from fuzz.findings.kinds import Signature
from fuzz.findings.render import repro_line
from fuzz.findings.report import REPORT_SCHEMA, REPORT_SCHEMA_VERSION, Command, Status, status_of, write_report
from fuzz.targets.base import runs_named_code

MAX_REPORT_BYTES = 64 << 20
MAX_TARGET_CHARS = 4096  # a target spec: a path and a version
MAX_DEPTH = 8  # how deep a value of a target entry may nest (this tool writes at most 3)
MERGED = (Command.RUN, Command.LIFECYCLE, Command.PROVE)
# A shard's own: never combined. Its ``causes`` are text a shard wrote: merge decides them again from the copied,
# validated case files (``merged_causes``), never from what a report says.
OWN = ("target", "status", "seconds", "findings", "shard", "interrupted", "error", "space", "method", "causes")


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
    if doc.get("schema_version") != REPORT_SCHEMA_VERSION:
        raise BadInput(f"{path} has schema_version {doc.get('schema_version')!r}; this tool reads 1")
    if doc.get("command") not in [c.value for c in MERGED]:
        raise BadInput(f"{path} is a {doc.get('command')!r} report; merge takes run, lifecycle and prove reports")
    targets = doc.get("targets")
    if not isinstance(targets, list) or not all(
        isinstance(t, dict) and isinstance(t.get("target"), str) and isinstance(t.get("findings"), list)
        for t in targets
    ):
        raise BadInput(f'{path}: "targets" must be a list of target entries, each with "target" and "findings"')
    for entry in targets:
        check_entry(entry, path)
    return doc


COUNTS = ("examples", "configurations", "launch_configurations", "decode_shapes", "violations")
FINDING_COUNTS = ("worst", "first_at", "configurations", "found_at")


def _number(value: Any, integer: bool = True) -> bool:
    kinds = int if integer else int | float
    return isinstance(value, kinds) and not isinstance(value, bool) and 0 <= value < float("inf")  # NaN fails too


def _depth(value: Any, limit: int = 64) -> int:
    """How deep JSON ``value`` nests (a scalar is 0), counted no further than ``limit``."""
    if limit <= 0 or not isinstance(value, dict | list):
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(v, limit - 1) for v in children), default=0)


def check_entry(entry: dict[str, Any], path: str) -> None:
    """The fields ``merge`` adds up or prints have the types the report schema gives them; BadInput if not.

    (``jsonschema`` is a test dependency; these are the fields merge reads.)
    """
    if len(entry["target"]) > MAX_TARGET_CHARS:
        raise BadInput(f"{path}: a target spec of {len(entry['target'])} characters (at most {MAX_TARGET_CHARS})")
    where = f"{path}: target {printable(entry['target'], 200)}"
    for key, value in entry.items():
        if _depth(value) > MAX_DEPTH:
            raise BadInput(f'{where}: "{printable(key, 80)}" is nested deeper than {MAX_DEPTH} levels')
    if "seconds" in entry and not _number(entry["seconds"], integer=False):
        raise BadInput(f'{where}: "seconds" must be a number >= 0, got {entry["seconds"]!r}')
    for key in COUNTS:
        if entry.get(key) is not None and not _number(entry[key]):
            raise BadInput(f'{where}: "{key}" must be an integer >= 0, got {entry[key]!r}')
    if entry.get("status") is not None and entry["status"] not in [s.value for s in Status]:
        raise BadInput(f'{where}: "status" {entry["status"]!r} is not one of {", ".join(s.value for s in Status)}')
    for key, kind in (("error", str), ("shard", str), ("interrupted", bool)):
        if entry.get(key) is not None and not isinstance(entry[key], kind):
            raise BadInput(f'{where}: "{key}" must be a {kind.__name__}, got {entry[key]!r}')
    for f in entry["findings"]:
        if not isinstance(f, dict) or not isinstance(f.get("signature"), str):
            raise BadInput(f'{where}: a finding has no "signature"')
        for key in ("signature", "group"):  # parsed against the known names: never free text
            if f.get(key) is not None:
                try:
                    Signature.parse(f[key])
                except ValueError as e:
                    raise BadInput(f'{where}: a finding\'s "{key}" is not one this tool writes ({e})') from None
        if f.get("repro") is not None and not isinstance(f["repro"], str):
            raise BadInput(f'{where}: finding {f["signature"]}: "repro" must be text')
        for key in FINDING_COUNTS:
            if f.get(key) is not None and not _number(f[key]):
                raise BadInput(f'{where}: finding {f["signature"]}: "{key}" must be an integer >= 0, got {f[key]!r}')


def shard_of(entry: dict[str, Any], path: str) -> Shard:
    """The shard a target entry says it is (``"shard": "I/N"``); an entry without one is the whole."""
    text = entry.get("shard")
    if text is None:
        return WHOLE
    try:
        return parse_shard(str(text))
    except argparse.ArgumentTypeError as e:
        raise BadInput(f"{path}: target {entry['target']}: shard {e}") from None


def check_shards(target: str, parts: list[Part]) -> list[Shard]:
    """The shards missing from ``parts`` (BadInput: counts that differ, a shard given twice)."""
    counts = {p.shard.count for p in parts}
    if len(counts) > 1:
        raise BadInput(f"target {target}: shards of different counts ({', '.join(map(str, sorted(counts)))})")
    seen: dict[int, str] = {}
    for p in parts:
        if p.shard.index in seen:
            raise BadInput(f"target {target}: shard {p.shard} given twice ({seen[p.shard.index]}, {p.report})")
        seen[p.shard.index] = p.report
    n = counts.pop()
    return [Shard(i, n) for i in range(1, n + 1) if i not in seen]


def combine(key: str, values: list[Any]) -> Any:
    """Several shards' values of one count: numbers summed (``max_*``: the maximum), dicts per key, lists
    joined, None ignored, anything else the first shard's."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    first = present[0]
    if isinstance(first, bool) or not isinstance(first, int | float | dict | list):
        return first
    if isinstance(first, dict):
        keys = list(dict.fromkeys(k for v in present if isinstance(v, dict) for k in v))
        return {k: combine(k, [v.get(k) for v in present if isinstance(v, dict)]) for k in keys}
    if isinstance(first, list):
        return [x for v in present if isinstance(v, list) for x in v]
    numbers = [v for v in present if isinstance(v, int | float) and not isinstance(v, bool)]
    return max(numbers) if key.startswith("max_") else sum(numbers)


def merge_findings(parts: list[Part], prove: bool) -> list[dict[str, Any]]:
    """One finding per group: the first shard's; for prove, configurations summed and the worst witness kept."""
    groups: dict[str, dict[str, Any]] = {}
    for p in parts:
        for f in p.entry["findings"]:
            if not isinstance(f, dict) or not isinstance(f.get("signature"), str):
                raise BadInput(f'{p.report}: a finding of {p.entry["target"]} has no "signature"')
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
            raise BadInput(f"target {target}: shards swept different spaces or methods ({sorted(map(str, spaces))})")
    findings = merge_findings(parts, command is Command.PROVE)
    errors = [f"shard {p.shard}: {p.entry['error']}" for p in parts if p.entry.get("error")]
    errors += [
        f"shard {p.shard}: error" for p in parts if p.entry.get("status") == Status.ERROR and not p.entry.get("error")
    ]
    interrupted = any(e.get("interrupted") or e.get("status") == Status.INTERRUPTED for e in entries)
    counts = list(dict.fromkeys(k for e in entries for k in e if k not in OWN))
    entry: dict[str, Any] = {
        "target": target,
        "status": status_of(error="; ".join(errors) or None, found=bool(findings), interrupted=interrupted).value,
        "seconds": round(sum(float(e.get("seconds") or 0) for e in entries), 3),
        **{k: entries[0][k] for k in ("space", "method") if k in entries[0]},
        **{k: combine(k, [e.get(k) for e in entries]) for k in counts},
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


def copy_case(finding: dict[str, Any], report: str, target: str, out_dir: str) -> None:
    """Copy the group's case file into ``out_dir`` (atomically), checked as a case of this finding, and give the
    finding a repro line of merge's own making: this tool's command, the copy, the target only where needed."""
    source = case_path(finding, report)
    if source is None:
        finding.pop("repro", None)
        return
    sig = printable(finding["signature"], 200)
    try:
        text = read_bytes(source, MAX_CASE_BYTES, "case file").decode()
        doc = casefile.validate_document(json.loads(text), source)
    except (JsonFileError, UnicodeDecodeError, ValueError, casefile.CaseFileError) as e:
        raise BadInput(f"{source}: not a case file ({printable(str(e).splitlines()[0], 300)})") from None
    if doc.get("signature") != finding["signature"] or doc.get("target") != target:
        raise BadInput(f"{source}: not the case file of {sig} on {printable(target, 200)} (named in {report})")
    copy = os.path.join(out_dir, os.path.basename(source))
    write_atomically(copy, text)
    finding["repro"] = repro_line(copy, target if runs_named_code(target) else None)
    finding["_case"] = doc


def merged_causes(m: Merged) -> str | None:
    """The target's root causes, decided here from its validated case files (``fuzz.causes``): each replayed on
    the target and its cause found by counterfactual; None when the target resolves, else why not."""
    from fuzz.causes.advisory import causes_of_cases

    docs = [f.pop("_case") for f in m.entry["findings"] if "_case" in f]
    try:
        causes = causes_of_cases(docs)
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
            copy_case(f, f.pop("_report"), m.entry["target"], args.cases_out)
        m.note = merged_causes(m)
    if args.json:
        write_report(args.json, command, [m.entry for m in merged])
    lines = summary_lines(command, merged)
    if args.markdown:
        write_atomically(args.markdown, markdown_block(lines))
    print("\n".join(lines))
    found = any(m.entry["findings"] for m in merged)
    if any(m.missing for m in merged):  # a lost shard may be the one that found something: never "clean"
        gaps = "; ".join(f"{m.entry['target']}: {', '.join(map(str, m.missing))}" for m in merged if m.missing)
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
