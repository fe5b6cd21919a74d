"""SARIF 2.1.0 (``--sarif FILE``): findings shown by GitHub code scanning on the sizing code they indict.

One SARIF run (one tool, as code scanning wants), one result per root cause
(``fuzz.causes``; a group no cause holds is a result of its own): the cause's
plainest variant stands for it (silent first, then by name), ``ruleId`` is
the property it breaks, the message is the cause (its heading, fix and
variants) above that variant's COUNTEREXAMPLE block with its repro line
(``render.counterexample_block``), and the location is the line of the
sizing function that computes what the variant shows too small:

    the row width    write-within-row, neighbour-rows-untouched, kv-lens-ordered
                     -> get_req_to_token_extra_context_len()  (the headroom past context_len),
                        or, on a pool whose builder sizes its own row (unified Mamba / SWA), that
                        builder in kv_cache_configurator.py (KVCacheConfigurator._init_unified_*;
                        0.5.13-0.5.15: model_runner_kv_cache_mixin.py)
    the reserve      every other property: drafts, page-aligned growth, the slot invariants
                     -> get_alloc_reserve_per_decode()
    the function     model-mismatch/<function>, sizing-raised (the function that raised)

with the other of the two as a related location.  Where the function lives:

    sglang==X.Y.Z, sglang   python/sglang/srt/mem_cache/allocation_sizing.py (its path in SGLang's
                            repository, so code scanning maps it onto SGLang's tree)
    PATH                    the file, relative to the working directory (absolute outside it)
    reference[@REVISION]    the model's function in allocator_model/sizing.py

The line is the function's ``def`` in the target's own source (read again,
parsed with ``ast``; never imported).
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allocator_model.surface import SURFACE
from fuzz.engines.sglang.groups import serving_config
from fuzz.engines.sglang.names import SGLangProperty

from .kinds import Property
from .model import Finding
from .render import counterexample_block
from .report import Command

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "kvrow-fuzz"
FINGERPRINT = "kvrowGroup/v1"  # target + signature: the same bug group is the same alert from run to run
# A root cause's alert: the portable target + the cause's baseline identity (``baseline.identity``): a known fix's
# key, a new cause's function, term and code digest. A new bug in a function with a known one is a new alert.
CAUSE_FINGERPRINT = "kvrowCause/v2"

ROW_WIDTH = "get_req_to_token_extra_context_len"
RESERVE = "get_alloc_reserve_per_decode"
SGLANG_REPO_PATH = "python/"  # where SGLang's repository keeps the package a wheel installs
_ROW_WIDTH_PROPERTIES = frozenset(
    {Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED, SGLangProperty.KV_LENS_ORDERED}
)
_RAISED_IN = re.compile(r"^\s*([A-Za-z_]\w*)\(\)")


@dataclass(frozen=True)
class SourceLine:
    """A line of a sizing source: an artifact URI as code scanning reads it, a 1-based line, the function there."""

    uri: str
    line: int
    function: str

    def to_sarif(self) -> dict[str, Any]:
        return {"physicalLocation": {"artifactLocation": {"uri": self.uri}, "region": {"startLine": self.line}}}


def sizing_functions(f: Finding) -> tuple[str, ...]:
    """SGLang's sizing functions a finding indicts, the one to show first (see the module docstring)."""
    prop = Property(f.violation.prop)
    if prop is Property.MODEL_MISMATCH:
        entry = SURFACE.get(str(f.violation.group))  # the surface entry that disagrees: SGLang's function for it
        if entry is None:
            return ()
        return entry.functions[:1] or (entry.name,)
    if prop is Property.SIZING_RAISED:
        m = _RAISED_IN.match(f.violation.headline)
        raised = (m.group(1),) if m else ()
        return raised + tuple(fn for fn in (RESERVE, ROW_WIDTH) if fn not in raised)
    return (ROW_WIDTH, RESERVE) if prop in _ROW_WIDTH_PROPERTIES else (RESERVE, ROW_WIDTH)


def def_lines(source: str) -> dict[str, int]:
    """Top-level ``def NAME`` -> its line, in a Python source (empty if it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    return {n.name: n.lineno for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def artifact_uri(path: str, cwd: str | None = None) -> str:
    """A local file as code scanning wants it: relative to the working directory, else an absolute file URI."""
    p = Path(os.path.abspath(path))
    base = Path(os.path.abspath(cwd or os.getcwd()))
    if p == base or base in p.parents:
        return p.relative_to(base).as_posix()
    return p.as_uri()


def target_source(target: Any, cwd: str | None = None) -> tuple[str, str, bool]:
    """(artifact URI, source text, model?) of a target's sizing code; the source is "" when it cannot be read."""
    from fuzz.targets.base import TargetKind
    from fuzz.targets.sglang import wheels
    from fuzz.targets.sglang.resolve import _split_version

    if target.kind is TargetKind.MODEL:
        import allocator_model.sizing as model

        path = model.__file__ or ""
        uri = Path(path).relative_to(Path(path).parent.parent).as_posix()  # allocator_model/sizing.py
        return uri, Path(path).read_text(encoding="utf-8"), True
    try:
        if target.kind is TargetKind.RELEASE:
            source, member = wheels.read_sizing_from_wheel(wheels.release_wheel(target.spec.split("==", 1)[1]))
            return SGLANG_REPO_PATH + member, source, False  # common.py before 0.5.16
        if target.kind is TargetKind.INSTALLED:
            return SGLANG_REPO_PATH + wheels.SIZING_MODULE, wheels.installed_sizing()[0], False
        source, path = wheels.read_file(_split_version(target.spec)[0])
        return artifact_uri(path, cwd), source, False
    except wheels.SourceError:
        path = _split_version(target.spec)[0]
        uri = SGLANG_REPO_PATH + wheels.SIZING_MODULE if target.kind is not TargetKind.FILE else artifact_uri(path, cwd)
        return uri, "", False


def locate(target: Any, functions: Sequence[str], cwd: str | None = None) -> list[SourceLine]:
    """Where each of ``functions`` is defined in the target's sizing code (line 1 of the file if nowhere)."""
    uri, source, model = target_source(target, cwd)
    lines = def_lines(source)
    found = []
    for fn in functions:
        name = fn.removeprefix("get_") if model else fn  # the model names its functions without get_
        if name in lines:
            found.append(SourceLine(uri, lines[name], name))
    return found or [SourceLine(uri, 1, functions[0] if functions else "")]


def builder_location(target: Any, f: Finding, cwd: str | None = None) -> SourceLine | None:
    """Where the row of the finding's kind of pool is sized when its own builder sizes it (None: the headroom).

    A unified pool's row is ``C + extra_max_context_len`` of its builder in
    ``kv_cache_configurator.py`` (``fuzz.targets.sglang.builders``), not the
    sizing file's headroom; a model target's is ``pools.unified_row_extra``.
    """
    from allocator_model.pools import KVPool
    from fuzz.targets.base import TargetKind
    from fuzz.targets.sglang import wheels

    kind = serving_config(f).kv_pool
    if kind is KVPool.STANDARD or Property(f.violation.prop) not in _ROW_WIDTH_PROPERTIES:
        return None
    if target.kind is TargetKind.MODEL:
        if kind not in target.revision.narrow_rows:
            return None
        import allocator_model.pools as pools

        path = pools.__file__ or ""
        line = def_lines(Path(path).read_text(encoding="utf-8")).get("unified_row_extra", 1)
        return SourceLine(Path(path).relative_to(Path(path).parent.parent).as_posix(), line, "unified_row_extra")
    found = target.sizing.builder_location(kind)
    if found is None:
        return None
    origin, function, line = found
    if target.kind is TargetKind.FILE:
        uri = artifact_uri(origin, cwd)
    else:  # a release or the installed package: its path in SGLang's repository (0.5.13-0.5.15: the mixin)
        member = wheels.MIXIN_MODULE if origin.endswith(wheels.MIXIN_MODULE) else wheels.CONFIGURATOR_MODULE
        uri = SGLANG_REPO_PATH + member
    return SourceLine(uri, line, function)


Located = tuple[Finding, Any, Any]  # (a finding, its Target or None, the Cause it stands for or None)


def by_cause(pairs: list[tuple[Finding, Any]], causes: dict[str, list[Any]]) -> list[Located]:
    """One entry per root cause (its plainest variant's finding stands for it), then each group no cause of
    its target holds."""
    out: list[Located] = []
    held: set[tuple[str, str]] = set()
    for spec, found in causes.items():
        mine = [(f, t) for f, t in pairs if f.target == spec]
        for cause in found:
            groups = cause.groups
            members = [(f, t) for f, t in mine if f.signature in groups]
            if not members:
                continue
            f, t = min(members, key=lambda p: (p[0].signature.outcome.rank, str(p[0].signature)))
            out.append((f, t, cause))
            held |= {(spec, str(m.signature)) for m, _ in members}
    out += [(f, t, None) for f, t in pairs if (f.target, str(f.signature)) not in held]
    return out


def sarif_result(
    f: Finding, target: Any, rule_index: dict[Property, int], cwd: str | None = None, cause: Any = None
) -> dict[str, Any]:
    """One root cause (or one bug group) as a SARIF result, located at the code it indicts (a pool's builder
    first), its variants named."""
    prop = Property(f.violation.prop)
    where = locate(target, sizing_functions(f), cwd) if target is not None else []
    builder = builder_location(target, f, cwd) if target is not None else None
    if builder is not None:
        where = [builder, *where]
    result: dict[str, Any] = {
        "ruleId": prop.value,
        "ruleIndex": rule_index[prop],
        "level": "error",
        "message": {"text": counterexample_block(f)},
        "locations": [where[0].to_sarif()] if where else [],
        "partialFingerprints": {FINGERPRINT: f"{f.target}|{f.signature}"},
        "properties": {
            "signature": str(f.signature),
            "target": f.target,
            "function": where[0].function if where else None,
            "repro": f.repro,
            "caseFile": f.case_path,
        },
    }
    if cause is not None:
        groups = sorted(cause.groups)
        result["message"]["text"] = (
            f"ROOT CAUSE {cause.heading()}\nfix: {cause.fix}\nvariants ({len(groups)}): "
            + ", ".join(str(s) for s in groups)
            + "\n\n"
            + counterexample_block(f)
        )
        result["partialFingerprints"] = cause_fingerprint(f, target, cause)
        result["properties"].update(rootCause=cause.label, variants=[str(s) for s in groups])
        if cause.baseline_state:
            result["baselineState"] = cause.baseline_state
    if len(where) > 1:
        result["relatedLocations"] = [
            {"id": i, **w.to_sarif(), "message": {"text": f"{w.function}()"}} for i, w in enumerate(where[1:], 1)
        ]
    return result


def cause_fingerprint(f: Finding, target: Any, cause: Any) -> dict[str, str]:
    """A root cause's partial fingerprint: its identity on the target as a baseline names both (a cause without
    identity, unexplained: its plainest group's, as a group's own alert)."""
    from .baseline import identity, portable_target

    ident = identity(cause)
    if ident is None:
        return {FINGERPRINT: f"{f.target}|{f.signature}"}
    return {CAUSE_FINGERPRINT: f"{portable_target(target) if target is not None else f.target}|{ident}"}


def sarif_log(command: Command, findings: Iterable[Any], cwd: str | None = None) -> dict[str, Any]:
    """The SARIF log of a command: ``findings`` are (finding, its resolved Target or None[, its Cause]), one
    result each."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool_version = version("kvrow-fuzz")
    except PackageNotFoundError:
        tool_version = "0"
    props = list(Property)
    rule_index = {p: i for i, p in enumerate(props)}
    rules = [
        {
            "id": p.value,
            "name": p.name.title().replace("_", ""),
            "shortDescription": {"text": p.rule},
            "defaultConfiguration": {"level": "error"},
        }
        for p in props
    ]
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "version": tool_version,
                        "semanticVersion": tool_version,
                        "rules": rules,
                    }
                },
                "automationDetails": {"id": f"{TOOL_NAME}/{command.value}/"},
                "results": [
                    sarif_result(entry[0], entry[1], rule_index, cwd, entry[2] if len(entry) > 2 else None)
                    for entry in findings
                ],
            }
        ],
    }


def sarif_text(command: Command, findings: Iterable[Any]) -> str:
    """The command's SARIF log as the text ``fuzz.findings.output`` writes."""
    return json.dumps(sarif_log(command, findings), indent=2) + "\n"


def with_targets(findings: Iterable[Finding], targets: Iterable[Any]) -> list[tuple[Finding, Any]]:
    """Each finding with the resolved target it was found on (matched by spec), for ``sarif_text``."""
    by_spec = {t.spec: t for t in targets}
    return [(f, by_spec.get(f.target)) for f in findings]
