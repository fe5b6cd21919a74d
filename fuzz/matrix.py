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
from allocator_model.scenario import scenario_problem

from . import casefile
from .catalog import CATALOG
from .differential import DEFAULT_CONFIGS, FidelityResult, fidelity
from .harness import CampaignResult, campaign, check_scenario
from .profiles import PROFILES, get_profile
from .properties import regime
from .sglang.versions import VersionError, known_releases, parse_version, releases_between
from .targets import Target, TargetError, model_target, resolve_target

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
            sig = f"{bug.prop}/{regime(cfg, allocator_page_size(cfg))}"
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
        for f in c.failures if c else []:
            groups.append({**f.to_json(), "catalog": known.get(f.signature, []), "on_reference": self.checks.get(f.signature)})
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
    for f in row.campaign.failures:
        problem = scenario_problem(f.scenario, row.target.revision)
        if problem:
            row.checks[f.signature] = f"outside the bound: {problem}"
            continue
        _, found = check_scenario(reference, f.scenario)
        row.checks[f.signature] = "passes" if not found else "fails too: " + ", ".join(v.signature for v in found)


def _case_text(f) -> str:
    s = f.scenario
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
        failures = c.failures if c else []
        if not failures:
            lines.append("| " + " | ".join(first + ["-", "-", c.error if c and c.error else "-"] + tail) + " |")
        for i, f in enumerate(failures):
            cells = (first if i == 0 else ["", "", ""]) + [
                f"`{f.signature}`", ", ".join(known.get(f.signature, [])) or "not catalogued",
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
                say(f"[{row.release}] {row.campaign.status}: {len(row.campaign.failures)} group(s), {row.campaign.seconds:.1f}s")
        else:
            for done in futures.as_completed(pending):
                row = pending[done]
                row.campaign = done.result()
                say(f"[{row.release}] {row.campaign.status}: {len(row.campaign.failures)} group(s), {row.campaign.seconds:.1f}s")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    for row in rows:
        for f in row.campaign.failures:
            f.case_path = casefile.save_document(casefile.decode_document(row.target.spec, f), cases_dir)
        for m in row.fidelity.mismatches if row.fidelity else []:
            m.case_path = casefile.save_document(m.document(), cases_dir)
        _reference_check(row)
    return rows


def register(subparsers) -> None:
    from .cli import _positive_int, _seed

    p = subparsers.add_parser("matrix", help="fuzz every SGLang release's own sizing code, one table", description=(
        "Fuzz each release's allocation_sizing.py (wheels fetched with pip into the cache, see `python -m fuzz "
        "targets`) and check the model's fidelity to it. Writes DIR/matrix.md, DIR/matrix.json and DIR/cases/. "
        "Exit 0: every release clean and faithful; 1: a bug group or a model-mismatch; 2: bad input."))
    p.add_argument("--releases", metavar="RANGE", help="e.g. 0.5.16..0.5.23 or 0.5.18,0.5.19 (default: every modeled release)")
    p.add_argument("--profile", choices=PROFILES, default="ci", help="Hypothesis profile (default ci: deterministic)")
    p.add_argument("--max-examples", type=_positive_int, default=DEFAULT_EXAMPLES, metavar="N",
                   help=f"examples per round (default {DEFAULT_EXAMPLES}; 500 also meets #35265 in 0.5.16-0.5.18)")
    p.add_argument("--seed", type=_seed, default=0, metavar="N", help="the seed every release runs with (default 0)")
    p.add_argument("--fidelity-configs", type=int, default=DEFAULT_CONFIGS, metavar="N",
                   help=f"distinct configurations for the fidelity check (default {DEFAULT_CONFIGS}; 0 skips it)")
    p.add_argument("--jobs", type=_positive_int, default=min(2, os.cpu_count() or 1), metavar="N",
                   help="worker processes for the campaigns (default: 2, or 1 on one core)")
    p.add_argument("--out", default=DEFAULT_OUT, metavar="DIR", help=f"where matrix.md, matrix.json and cases/ go (default {DEFAULT_OUT})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--expect", metavar="FILE", help=(
        "JSON {release: {\"required\": [signatures], \"allowed\": [signatures]}}: exit 0 when every release finds "
        "its required groups and nothing outside required + allowed, 1 otherwise (CI: the tool still finds the known "
        "upstream bugs, and a new one fails the job)"))
    p.set_defaults(func=cmd_matrix)


def cmd_matrix(args) -> int:
    from .cli import EXIT_BAD_INPUT, EXIT_CLEAN, EXIT_FOUND, BadInput

    try:
        releases = parse_releases(args.releases)
    except VersionError as e:
        raise BadInput(f"--releases: {e}") from None
    if args.fidelity_configs < 0:
        raise BadInput("--fidelity-configs must be >= 0")
    expected = load_expectations(args.expect, releases) if args.expect else None
    started = time.monotonic()
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        rows = run_matrix(releases, profile=args.profile, max_examples=args.max_examples, seed=args.seed,
                          fidelity_configs=args.fidelity_configs, jobs=args.jobs, out=args.out, progress=progress)
    except TargetError as e:
        raise BadInput(str(e)) from None
    total = time.monotonic() - started
    known = catalog_ids()
    examples = args.max_examples
    header = (f"# SGLang release matrix\n\nprofile {args.profile} ({examples} examples per round), seed {args.seed}, "
              f"fidelity over {args.fidelity_configs} configurations, {total:.1f}s in all")
    text = markdown(rows, known, header)
    casefile.write_atomically(os.path.join(args.out, "matrix.md"), text)
    report = {"profile": args.profile, "seed": args.seed, "fidelity_configs": args.fidelity_configs,
              "seconds": round(total, 3), "releases": [r.to_json(known) for r in rows]}
    casefile.write_atomically(os.path.join(args.out, "matrix.json"), json.dumps(report, indent=2) + "\n")
    print(text, end="")
    print(f"\nwritten: {os.path.join(args.out, 'matrix.md')}, {os.path.join(args.out, 'matrix.json')}, "
          f"{os.path.join(args.out, 'cases')}/")
    if any(r.campaign.error for r in rows):
        return EXIT_BAD_INPUT
    if expected is not None:
        surprises = compare_with_expectations(rows, expected)
        for line in surprises:
            print(line)
        print("expectations: " + ("met" if not surprises else f"{len(surprises)} difference(s)"))
        return EXIT_FOUND if surprises else EXIT_CLEAN
    if any(r.campaign.failures for r in rows) or any(r.fidelity and r.fidelity.mismatches for r in rows):
        return EXIT_FOUND
    return EXIT_CLEAN


def load_expectations(path: str, releases: list[str]) -> dict[str, dict[str, set[str]]]:
    """The groups each release must show (required) and may show (allowed)."""
    from .cli import BadInput

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
        found = {f.signature for f in row.campaign.failures}
        want = expected[row.release]
        for sig in sorted(want["required"] - found):
            lines.append(f"MISSING {row.release}: {sig} was not found (expected upstream bug)")
        for sig in sorted(found - want["required"] - want["allowed"]):
            lines.append(f"NEW {row.release}: {sig} (not in the expectations: a new finding)")
        for m in row.fidelity.mismatches if row.fidelity else []:
            lines.append(f"MISMATCH {row.release}: {m.signature} (the model disagrees with the release)")
    return lines
