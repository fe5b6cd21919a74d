"""The matrix as a reader sees it: the markdown table, the report's target entries, and both files.

``DIR/matrix.md`` is one table, release by release: its status, each bug
group found (property / regime) with the known bug it matches in the
catalog and its minimal case, examples and seconds, and the fidelity of the
model against that release.  ``DIR/matrix.json`` is the report every
command writes (``fuzz.findings.report``, command ``matrix``): one target
entry per release, with the release's own keys beside the shared ones.
Both are rewritten after each release completes, so an interrupted matrix
keeps its finished rows.
"""

from __future__ import annotations

import json
import os
from typing import Any

from allocator_model.allocator import allocator_page_size
from allocator_model.pools import KVPool
from allocator_model.regimes import regime
from fuzz.common.files import write_atomically
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.catalog import CATALOG
from fuzz.engines.sglang.groups import scenario_of, serving_config
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.cause import Cause
from fuzz.findings.kinds import Property, Signature, group_name
from fuzz.findings.model import Finding
from fuzz.findings.report import Command, write_report
from fuzz.tables.declared import TABLE_CASE

from .matrix import MatrixSettings, Row

MATRIX_MD = "matrix.md"
MATRIX_JSON = "matrix.json"
CASES_DIR = "cases"

Catalog = dict[Signature, list[str]]


def catalog_ids() -> Catalog:
    """Signature -> the catalog's bug ids that show as it (derived from the catalog's scenarios)."""
    ids: Catalog = {}
    for bug in CATALOG:
        if bug.prop is not None:
            cfg = bug.scenario.config
            sig = Signature(
                Property(bug.prop), group_name(regime(cfg, allocator_page_size(cfg)).value, cfg.kv_pool.variant)
            )
            ids.setdefault(sig, [])
            if bug.bug not in ids[sig]:
                ids[sig].append(bug.bug)
    return ids


def case_text(f: Finding) -> str:
    """A decode finding's minimal case on one line: the config, the committed length and what else it sets (a
    checked table's case: the config, the table and its data)."""
    if f.kind is TABLE_CASE:
        return f"{serving_config(f).short()}; {f.case['table']} {json.dumps(f.case['data'], sort_keys=True)}"
    s = scenario_of(f)
    text = f"{s.config.short()}; committed_len={s.committed_len}"
    if s.num_steps is not None:
        text += f" num_steps={s.num_steps}"
    if s.device_lag:
        text += f" device_lag={s.device_lag}"
    if s.prior is not None:
        steps = f", num_steps={s.prior.num_steps}" if s.prior.num_steps is not None else ""
        text += f" prior(accepted={s.prior.accepted}{steps})"
    return text


def api_name(target: SGLangTarget | None) -> str | None:
    """The API generation of a release's sizing module (``accessors``, ``alloc-page``, ``uno``...)."""
    return target.sizing.api_generation() if target else None


def header(settings: MatrixSettings, seconds: float, done: int, total: int) -> str:
    """The table's heading: how the releases ran, and (while some are still running) how many are done."""
    examples = settings.max_examples if settings.max_examples else "the profile's"
    timing = f"{seconds:.1f}s in all" if done == total else f"{seconds:.1f}s so far, {done} of {total} releases done"
    return (
        f"# SGLang release matrix\n\nprofile {settings.profile} ({examples} examples per round), "
        f"seed {settings.seed}, fidelity over {settings.fidelity_configs} configurations per KV pool kind, {timing}"
    )


def markdown(rows: list[Row], known: Catalog, heading: str) -> str:
    """The table: one line per bug group (a clean release: one line), the fidelity in its last column."""
    lines = [
        heading,
        "",
        "| release | API | status | KV pool | bug group | outcome | root cause | minimal case | examples | seconds "
        "| fidelity |",
        "|---|---|---|---|---|---|---|---|---:|---:|---|",
    ]
    for row in rows:
        c, fid = row.campaign, row.fidelity
        first = [row.release, api_name(row.target) or "-", str(row.status)]
        tail = [str(c.examples if c else 0), f"{c.seconds:.1f}" if c else "-", fid.summary() if fid else "not run"]
        failures = by_pool(c.findings if c else [])
        cause_of = causes_by_group(c.causes if c else [])
        if not failures:
            lines.append("| " + " | ".join(first + ["-", "-", "-", "-", row.error or "-"] + tail) + " |")
        for i, f in enumerate(failures):
            cells = (
                (first if i == 0 else ["", "", ""])
                + [
                    serving_config(f).kv_pool.value,
                    f"`{f.signature}`",
                    str(f.violation.outcome),
                    cause_of.get(f.signature) or ", ".join(known.get(f.signature, [])) or "not catalogued",
                    f"{case_text(f)} ([case]({CASES_DIR}/{os.path.basename(f.case_path or '')}))",
                ]
                + (tail if i == 0 else ["", "", ""])
            )
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    odd = [f"{r.release} {sig}: {how}" for r in rows for sig, how in r.checks.items() if how != "passes"]
    lines += [
        "",
        "Every minimal case is at a committed length the scheduler allows and passes on `reference`"
        if not odd
        else "Cases that do not pass on `reference` (or are outside the bound): " + "; ".join(odd),
    ]
    return "\n".join(lines) + "\n"


def causes_by_group(causes: list[Cause]) -> dict[Signature, str]:
    """Each group's root cause as the table names it (``#33579``; ``needs both: #33579 + new``)."""
    out: dict[Signature, str] = {}
    for c in causes:
        for s in c.variants:
            out[s] = c.label
        for other, sigs in c.needs_both.items():
            for s in sigs:
                out.setdefault(s, f"needs both: {c.label} + {other}")
    return out


def by_pool(findings: list[Finding]) -> list[Finding]:
    """Groups per deployment kind (the standard pool first), silent groups first within a kind."""
    kinds = list(KVPool)
    return sorted(findings, key=lambda f: (kinds.index(serving_config(f).kv_pool), *f.signature.sort_key))


def finding_entry(f: Finding, row: Row, known: Catalog) -> dict[str, Any]:
    """A finding as the report shows it, with the catalog's ids for its group and how its case fares on the reference.

    A fidelity finding has no catalog ids and is not run on the reference (``on_reference`` null).
    """
    decode = f.kind is not SGLangCase.FIDELITY
    return {
        **f.to_json(),
        "catalog": known.get(f.signature, []) if decode else [],
        "on_reference": row.checks.get(f.signature) if decode else None,
    }


def target_entry(row: Row, known: Catalog) -> dict[str, Any]:
    """One release's entry in ``matrix.json``: the shared keys, then the release's own.

    ``seconds`` and ``examples`` are the campaign's; ``fidelity`` summarizes
    the fidelity check (its findings are in ``findings``, kind ``fidelity-case``).
    """
    c, t, fid = row.campaign, row.target, row.fidelity
    entry: dict[str, Any] = {
        "target": t.spec if t else f"sglang=={row.release}",
        "status": row.status.value,
        "seconds": round(c.seconds, 3) if c else 0.0,
        "findings": [finding_entry(f, row, known) for f in row.findings],
        "release": row.release,
        "api": api_name(t),
        "semantics": t.revision.name if t else None,
        "examples": c.examples if c else 0,
        "error": row.error,
        "fidelity": None,
    }
    if c is not None and c.causes:
        entry["causes"] = [cause.to_json() for cause in c.causes]
    if fid is not None:
        entry["fidelity"] = {
            "status": fid.status.value,
            "revision": fid.revision.name,
            "configs": fid.configs,
            "per_kind": fid.per_kind,
            "kinds": {k.value: t.to_json() for k, t in fid.kinds.items()},
            "write_path": {k.value: t.to_json() for k, t in fid.write_path.items()},
            "page_tables": {name: t.to_json() for name, t in fid.page_tables.items()},
            "functions": fid.functions,
            "seconds": round(fid.seconds, 3),
            "signatures": [str(f.signature) for f in fid.findings],
        }
    return entry


def write_matrix(
    out: str,
    rows: list[Row],
    settings: MatrixSettings,
    *,
    requested: list[str],
    seconds: float,
    known: Catalog | None = None,
) -> str:
    """Write ``out/matrix.md`` and ``out/matrix.json`` for the finished ``rows``; the markdown written."""
    known = catalog_ids() if known is None else known
    text = markdown(rows, known, header(settings, seconds, len(rows), len(requested)))
    write_atomically(os.path.join(out, MATRIX_MD), text)
    write_report(
        os.path.join(out, MATRIX_JSON),
        Command.MATRIX,
        [target_entry(r, known) for r in rows],
        profile=settings.profile,
        seed=settings.seed,
        max_examples=settings.max_examples,
        fidelity_configs=settings.fidelity_configs,
        seconds=round(seconds, 3),
        requested=requested,
        complete=len(rows) == len(requested),
    )
    return text
