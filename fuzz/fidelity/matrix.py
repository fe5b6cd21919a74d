"""``python -m fuzz matrix``: every SGLang release's own sizing code, fuzzed side by side.

One table, release by release: its status, each bug group found (property /
regime) with the known bug it matches in the catalog and its minimal case,
examples and seconds, and the differential fidelity of the model against
that release.  Written as markdown and JSON, with one case file per group
that ``python -m fuzz repro`` replays.

Every release runs with the same Hypothesis seed (default 0), so releases
that share semantics explore the same inputs: a difference between two rows
comes from their code, not from luck.  Campaigns run in ``--jobs`` worker
processes while the parent runs the fidelity checks.
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from allocator_model.allocator import allocator_page_size
from allocator_model.revisions import REFERENCE
from allocator_model.scenario import DecodeScenario, scenario_problem

from fuzz.campaign.driver import CampaignResult
from fuzz.catalog import CATALOG
from fuzz.common.errors import BadInput
from fuzz.common.profiles import get_profile
from fuzz.findings import casefile
from fuzz.findings.kinds import regime
from fuzz.run.engine import campaign, check_scenario
from fuzz.targets.base import Target, model_target
from fuzz.targets.resolve import resolve_target
from fuzz.targets.sglang.versions import VersionError, known_releases, parse_version, releases_between

from .differential import FidelityResult, fidelity

DEFAULT_OUT = "fuzz-matrix"
# Examples per round: the page-1 group (#33579) needs a page-1, dcp-1, long-reserve config near
# the limit, about 1 example in 60; 300 per round meets it in every release with room to spare.
DEFAULT_EXAMPLES = 300


def parse_releases(text: str | None) -> list[str]:
    """'0.5.16..0.5.23' (known releases in the range), '0.5.18,0.5.19', or None (every known release)."""
    if not text:
        return known_releases()
    releases: list[str] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if ".." in part:
            first, _, last = part.partition("..")
            found = releases_between(first.strip(), last.strip())
            if not found:
                raise VersionError(f"no modeled release in {part} (known: {', '.join(known_releases())})")
            releases += found
        else:
            parse_version(part)
            releases.append(part)
    return list(dict.fromkeys(releases))


def catalog_ids() -> dict[str, list[str]]:
    """Signature -> the catalog's bug ids that show as it (derived from the catalog's scenarios)."""
    ids: dict[str, list[str]] = {}
    for bug in CATALOG:
        if bug.prop is not None:
            cfg = bug.scenario.config
            sig = f"{bug.prop.value}/{regime(cfg, allocator_page_size(cfg)).value}"
            ids.setdefault(sig, [])
            if bug.bug not in ids[sig]:
                ids[sig].append(bug.bug)
    return ids


@dataclass
class Row:
    release: str
    target: Target | None = None
    campaign: CampaignResult | None = None
    fidelity: FidelityResult | None = None
    checks: dict[str, str] = field(default_factory=dict)  # signature -> how the case fares on the reference

    def to_json(self, known: dict[str, list[str]]) -> dict[str, Any]:
        c = self.campaign
        groups = []
        for f in c.findings if c else []:
            groups.append({**f.to_json(), "catalog": known.get(str(f.signature), []), "on_reference": self.checks.get(str(f.signature))})
        return {
            "release": self.release,
            "target": self.target.spec if self.target else f"sglang=={self.release}",
            "api": self.target.sizing.generation.name if self.target else None,
            "semantics": self.target.revision.name if self.target else None,
            "status": c.status if c else "error",
            "examples": c.examples if c else 0,
            "seconds": round(c.seconds, 3) if c else 0.0,
            "groups": groups,
            "error": c.error if c else None,
            "fidelity": self.fidelity.to_json() if self.fidelity else None,
        }


def _campaign_job(spec: str, profile: str, max_examples: int | None, seed: int | None) -> CampaignResult:
    """One release's campaign, in a worker process (targets resolve from the warm cache)."""
    from hypothesis import settings as Settings

    hyp = get_profile(profile)
    if max_examples:
        hyp = Settings(hyp, max_examples=max_examples)
    return campaign(resolve_target(spec), hyp, seed=seed)


def _reference_check(row: Row) -> None:
    """Each group's minimal case must be one the scheduler allows, and must pass on the reference.

    So a reported group is the release's own sizing bug, not a case the
    committed-length bound rules out (which would fail the reference too).
    """
    reference = model_target(REFERENCE)
    for f in row.campaign.findings:
        scenario = DecodeScenario.from_dict(f.config, f.case)
        problem = scenario_problem(scenario, row.target.revision)
        if problem:
            row.checks[str(f.signature)] = f"outside the bound: {problem}"
            continue
        _, found = check_scenario(reference, scenario)
        row.checks[str(f.signature)] = "passes" if not found else "fails too: " + ", ".join(str(v.signature) for v in found)


def _case_text(f) -> str:
    s = DecodeScenario.from_dict(f.config, f.case)
    text = f"{s.config.short()}; committed_len={s.committed_len}"
    if s.num_steps is not None:
        text += f" num_steps={s.num_steps}"
    if s.device_lag:
        text += f" device_lag={s.device_lag}"
    if s.prior is not None:
        text += f" prior(accepted={s.prior.accepted}" + (f", num_steps={s.prior.num_steps}" if s.prior.num_steps is not None else "") + ")"
    return text


def markdown(rows: list[Row], known: dict[str, list[str]], header: str) -> str:
    lines = [header, "",
             "| release | API | status | bug group | known as | minimal case | examples | seconds | fidelity |",
             "|---|---|---|---|---|---|---:|---:|---|"]
    for row in rows:
        c, fid = row.campaign, row.fidelity
        first = [row.release, row.target.sizing.generation.name if row.target else "-", c.status if c else "error"]
        tail = [str(c.examples if c else 0), f"{c.seconds:.1f}" if c else "-", fid.summary() if fid else "not run"]
        failures = c.findings if c else []
        if not failures:
            lines.append("| " + " | ".join(first + ["-", "-", c.error if c and c.error else "-"] + tail) + " |")
        for i, f in enumerate(failures):
            cells = (first if i == 0 else ["", "", ""]) + [
                f"`{f.signature}`", ", ".join(known.get(str(f.signature), [])) or "not catalogued",
                f"{_case_text(f)} ([case](cases/{os.path.basename(f.case_path or '')}))"] + (tail if i == 0 else ["", "", ""])
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    odd = [f"{r.release} {sig}: {how}" for r in rows for sig, how in r.checks.items() if how != "passes"]
    lines += ["", "Every minimal case is at a committed length the scheduler allows and passes on `reference`"
              if not odd else "Cases that do not pass on `reference` (or are outside the bound): " + "; ".join(odd)]
    return "\n".join(lines) + "\n"


def run_matrix(releases: list[str], *, profile: str, max_examples: int | None, seed: int | None,
               fidelity_configs: int, jobs: int, out: str, progress=None) -> list[Row]:
    rows = [Row(r) for r in releases]
    for row in rows:  # resolve (and fetch) every release first: bad input stops before any fuzzing
        row.target = resolve_target(f"sglang=={row.release}")
    say = progress or (lambda line: None)
    cases_dir = os.path.join(out, "cases")
    if jobs > 1:
        pool = futures.ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
        pending = {pool.submit(_campaign_job, r.target.spec, profile, max_examples, seed): r for r in rows}
    else:
        pool, pending = None, {}
    try:
        if fidelity_configs:
            for row in rows:  # the parent's share while the workers fuzz
                row.fidelity = fidelity(row.target, configs=fidelity_configs)
                say(f"[{row.release}] fidelity: {row.fidelity.summary()} ({row.fidelity.seconds:.1f}s)")
        if pool is None:
            for row in rows:
                row.campaign = _campaign_job(row.target.spec, profile, max_examples, seed)
                say(f"[{row.release}] {row.campaign.status}: {len(row.campaign.findings)} group(s), {row.campaign.seconds:.1f}s")
        else:
            for done in futures.as_completed(pending):
                row = pending[done]
                row.campaign = done.result()
                say(f"[{row.release}] {row.campaign.status}: {len(row.campaign.findings)} group(s), {row.campaign.seconds:.1f}s")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    for row in rows:
        for f in row.campaign.findings:
            casefile.save(f, cases_dir)
        for m in row.fidelity.mismatches if row.fidelity else []:
            m.case_path = casefile.save_document(m.document(), cases_dir)
        _reference_check(row)
    return rows


def load_expectations(path: str, releases: list[str]) -> dict[str, dict[str, set[str]]]:
    """The groups each release must show (required) and may show (allowed)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise BadInput(f"--expect {path}: {e}") from None
    if not isinstance(data, dict):
        raise BadInput(f"--expect {path}: expected an object of releases")
    out = {}
    for release in releases:
        entry = data.get(release)
        if not isinstance(entry, dict):
            raise BadInput(f"--expect {path}: no entry for release {release}")
        out[release] = {k: set(entry.get(k, [])) for k in ("required", "allowed")}
    return out


def compare_with_expectations(rows: list[Row], expected: dict[str, dict[str, set[str]]]) -> list[str]:
    """One line per difference: a required group not found (the tool regressed), a group not expected (news)."""
    lines = []
    for row in rows:
        found = {str(f.signature) for f in row.campaign.findings}
        want = expected[row.release]
        for sig in sorted(want["required"] - found):
            lines.append(f"MISSING {row.release}: {sig} was not found (expected upstream bug)")
        for sig in sorted(found - want["required"] - want["allowed"]):
            lines.append(f"NEW {row.release}: {sig} (not in the expectations: a new finding)")
        for m in row.fidelity.mismatches if row.fidelity else []:
            lines.append(f"MISMATCH {row.release}: {m.signature} (the model disagrees with the release)")
    return lines
