"""The engine of ``kvrow-fuzz matrix``: every SGLang release's own sizing code, fuzzed side by side.

Release by release: a decode campaign on the release's real sizing module,
the differential fidelity of the model against it, and a check that each
group's minimal case is one the scheduler allows and that passes on the
reference (so a group is the release's own bug).  ``run_matrix`` hands each
release to ``on_release`` as soon as it is complete (the command writes the
table then: ``fuzz.engines.sglang.fidelity.matrix_report``); ``compare_with_expectations``
holds each release's root causes against a baseline of known findings
(``.github/matrix-expected.json``, ``fuzz.findings.baseline``).

Every release runs with the same Hypothesis seed (default 0), so releases
that share semantics explore the same inputs: a difference between two rows
comes from their code, not from luck.  Campaigns run in ``--jobs`` worker
processes while the parent runs the fidelity checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from allocator_model.revisions import REFERENCE
from allocator_model.scenario import scenario_problem
from fuzz.campaign.driver import CampaignResult
from fuzz.common.bounds import MAX_EXPECT_BYTES
from fuzz.common.errors import BadInput
from fuzz.common.heartbeat import heartbeat
from fuzz.common.profiles import get_profile
from fuzz.common.workers import DONE, ERROR, STOPPED, Emit, WorkerPool
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.decode.engine import campaign
from fuzz.engines.sglang.groups import scenario_of
from fuzz.engines.sglang.real.versions import VersionError, known_releases, parse_version, releases_between
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.engines.sglang.targets import model_target
from fuzz.findings import baseline
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Finding
from fuzz.findings.output import save_case
from fuzz.findings.report import Status, status_of
from fuzz.tables import table
from fuzz.tables.case import TableCase
from fuzz.tables.declared import TABLE_CASE
from fuzz.targets.resolve import resolve_target
from fuzz.verdict import PIPELINE

from .differential import FidelityResult, fidelity

DEFAULT_OUT = "fuzz-matrix"
# Examples per round: the page-1 group (#33579) needs a page-1, dcp-1, long-reserve config near
# the limit, about 1 example in 60; 300 per round meets it in every release with room to spare.
DEFAULT_EXAMPLES = 300

Expectations = dict[str, baseline.Expected]  # release -> the baseline's entries there, and its required ones


def parse_releases(text: str | None) -> list[str]:
    """'0.5.16..0.5.23' (known releases in the range), '0.5.18,0.5.19', or None (every known release).

    An empty text names no release: a VersionError, not every release.
    """
    if text is None:
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
    if not releases:
        raise VersionError(f"{text!r} names no release (e.g. 0.5.16..0.5.23 or 0.5.18,0.5.19; omit it for all)")
    return list(dict.fromkeys(releases))


@dataclass(frozen=True)
class MatrixSettings:
    """What every release runs with."""

    profile: str
    max_examples: int | None  # examples per round (None: the profile's)
    seed: int | None
    fidelity_configs: int  # per kind of KV pool the release builds; 0 skips the fidelity check
    write_path_steps: int = 0  # decode steps per kind held to SGLang's own write path (0: not compared)
    page_table_steps: int = 0  # mode builds of each backend's page table held to SGLang's own builders (0: none)


@dataclass
class Row:
    """One release: its target, its campaign, its fidelity, and how each group's case fares on the reference."""

    release: str
    target: SGLangTarget | None = None
    campaign: CampaignResult | None = None
    fidelity: FidelityResult | None = None
    checks: dict[Signature, str] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        """Every finding on the release: the campaign's bug groups, then the fidelity's model-mismatches."""
        return (self.campaign.findings if self.campaign else []) + (self.fidelity.findings if self.fidelity else [])

    @property
    def error(self) -> str | None:
        return self.campaign.error if self.campaign else "not run"

    @property
    def status(self) -> Status:
        interrupted = bool(self.campaign and self.campaign.interrupted)
        return status_of(error=self.error, found=bool(self.findings), interrupted=interrupted)


def _campaign_task(job: tuple[str, str, int | None, int | None], emit: Emit) -> CampaignResult:
    """One release's campaign as a task of the worker pool (``fuzz.common.workers``)."""
    return _campaign_job(*job)


def _campaign_job(spec: str, profile: str, max_examples: int | None, seed: int | None) -> CampaignResult:
    """One release's campaign (targets resolve from the warm cache)."""
    from hypothesis import settings as Settings

    hyp = get_profile(profile)
    if max_examples:
        hyp = Settings(hyp, max_examples=max_examples)
    return campaign(resolve_target(spec), hyp, seed=seed)


def reference_check(row: Row) -> None:
    """Each group's minimal case must be one the scheduler allows, and must pass on the reference.

    So a reported group is the release's own sizing bug, not a case the
    committed-length bound rules out (which would fail the reference too).
    """
    reference = model_target(REFERENCE)
    assert row.target is not None
    for f in row.campaign.findings if row.campaign else []:
        if f.kind is TABLE_CASE:  # a checked table's case: judged on the reference through its own table
            row.checks[f.signature] = _table_case_on_reference(reference, f)
            continue
        scenario = scenario_of(f)
        problem = scenario_problem(scenario, row.target.revision)
        if problem:
            row.checks[f.signature] = f"outside the bound: {problem}"
            continue
        _, found = check_scenario(reference, scenario)
        row.checks[f.signature] = "passes" if not found else "fails too: " + ", ".join(str(v.signature) for v in found)


def _table_case_on_reference(reference: SGLangTarget, f: Finding) -> str:
    """What the reference makes of a table case: the table's own observation of it (a scenario the reference's
    scheduler rules out is a ``ValueError`` there: outside the bound)."""
    case = TableCase(table(f.case["table"]), f.config, f.case["data"])
    try:
        found = PIPELINE.case(reference, case, confirm=False).findings
    except ValueError as e:
        return f"outside the bound: {e}"
    return "passes" if not found else "fails too: " + ", ".join(str(x.signature) for x in found)


def _finish(row: Row, cases_dir: str) -> None:
    """A complete release: a case file per finding (decode and fidelity), the reference check, the root causes."""
    for f in row.findings:
        save_case(f, cases_dir)
    reference_check(row)
    if row.campaign is not None and row.campaign.findings and row.target is not None:
        row.campaign.causes = PIPELINE.causes(row.target, row.campaign.findings)


class MatrixInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a matrix: ``finished`` holds the releases complete by then (rows and case files
    on disk; the workers are stopped)."""

    def __init__(self, finished: list[Row]):
        super().__init__()
        self.finished = finished


def run_matrix(
    releases: list[str],
    settings: MatrixSettings,
    *,
    jobs: int,
    cases_dir: str,
    on_release: Callable[[Row, list[Row]], None] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Row]:
    """Fuzz and check every release; ``on_release(row, finished rows in release order)`` as each completes.

    Every target is resolved (and fetched) first: bad input stops before
    any fuzzing.  ``progress`` gets a line per fidelity check (and every few
    seconds while one runs).  On Ctrl-C or SIGTERM (a campaign in this
    process takes it at its next example) the workers are stopped and
    ``MatrixInterrupted`` carries the finished releases, whose rows and case
    files are on disk.
    """
    rows = [Row(r) for r in releases]
    for row in rows:
        row.target = resolve_target(f"sglang=={row.release}")
    finished: list[Row] = []
    try:
        _run_rows(rows, settings, jobs, cases_dir, finished, on_release, progress)
    except KeyboardInterrupt:
        raise MatrixInterrupted(finished) from None
    return rows


def _run_rows(
    rows: list[Row],
    settings: MatrixSettings,
    jobs: int,
    cases_dir: str,
    finished: list[Row],
    on_release: Callable[[Row, list[Row]], None] | None,
    progress: Callable[[str], None] | None,
) -> None:
    say = progress or (lambda line: None)
    releases = [r.release for r in rows]

    def flush() -> None:
        """Finish every release whose campaign and fidelity are both in, in release order."""
        for row in rows:
            if any(r is row for r in finished) or row.campaign is None:
                continue
            if settings.fidelity_configs and row.fidelity is None:
                continue
            _finish(row, cases_dir)
            finished.append(row)
            finished.sort(key=lambda r: releases.index(r.release))
            if on_release:
                on_release(row, list(finished))

    def check_fidelity(row: Row) -> None:
        if settings.fidelity_configs:
            assert row.target is not None
            beat = (lambda s: say(f"[{row.release}] fidelity: comparing, {s:.0f}s")) if progress else None
            with heartbeat(beat):
                row.fidelity = fidelity(
                    row.target,
                    per_kind=settings.fidelity_configs,
                    write_path_steps=settings.write_path_steps,
                    page_table_steps=settings.page_table_steps,
                )
            say(f"[{row.release}] fidelity: {row.fidelity.summary()} ({row.fidelity.seconds:.1f}s)")
            if row.fidelity.interrupted:  # it took the signal between two comparisons: the matrix stops here
                raise KeyboardInterrupt

    def job(row: Row) -> tuple[str, str, int | None, int | None]:
        assert row.target is not None
        return row.target.spec, settings.profile, settings.max_examples, settings.seed

    if jobs <= 1:
        for row in rows:
            check_fidelity(row)
            row.campaign = _campaign_job(*job(row))
            if row.campaign.interrupted:  # the campaign took the signal at an example: keep what it met
                for f in row.campaign.findings:
                    save_case(f, cases_dir)
                raise KeyboardInterrupt
            flush()
        return
    with WorkerPool(_campaign_task, [job(row) for row in rows], jobs, name="kvrow-fuzz-matrix") as pool:

        def harvest(timeout: float) -> None:
            for i, kind, payload in pool.poll(timeout):
                if kind == DONE:
                    rows[i].campaign = payload
                elif kind in (ERROR, STOPPED):  # the release's error, in its row (never a lost row)
                    spec = job(rows[i])[0]
                    rows[i].campaign = CampaignResult(spec, error=payload or "stopped", interrupted=kind == STOPPED)
            flush()

        try:
            for row in rows:  # the parent's share while the workers fuzz
                check_fidelity(row)
                harvest(0)
            while not pool.done:
                harvest(POLL_SECONDS)
        except KeyboardInterrupt:
            pool.interrupt()
            pool.interrupt()  # a matrix stops at once: what finished is on disk
            raise


POLL_SECONDS = 0.5  # how often the parent looks at finished workers


def load_expectations(path: str, releases: list[str]) -> Expectations:
    """What each release must show (required entries) and may show, from a baseline (``fuzz.findings.baseline``).

    Read within ``MAX_EXPECT_BYTES`` and checked as ``run --baseline`` checks
    one; the document must cover every release asked for (a release it does
    not name would make every cause there new).  Anything else is BadInput,
    one line.
    """
    try:
        known = baseline.load(path, "--expect", MAX_EXPECT_BYTES)
    except baseline.BaselineError as e:
        raise BadInput(str(e)) from None
    expected = {r: known.scope(f"sglang=={r}", r) for r in releases}
    missing = [r for r, e in expected.items() if e is None]
    if missing:
        covered = ", ".join(known.releases) or "none"
        raise BadInput(f"--expect {path}: no entry for release {missing[0]} (the baseline covers: {covered})")
    return {r: e for r, e in expected.items() if e is not None}


def compare_with_expectations(rows: list[Row], expected: Expectations) -> list[str]:
    """One line per difference, by root cause (the baseline's identity: a known fix's key, a new cause's function,
    term and code digest), release by release.

    NEW: a cause making an entry not expected on its release (a new finding);
    MISSING: a required entry no cause of the release makes (the tool
    regressed); MISMATCH: a model-mismatch, always (the model must agree with
    every release).
    """
    lines = []
    for row in rows:
        want = expected[row.release]
        causes = row.campaign.causes if row.campaign else []
        for c in causes:
            if not baseline.is_known(c, want.entries):
                unknown = "; ".join(str(e) for e in sorted(baseline.entries_of(c) - want.entries)) or "no code"
                groups = ", ".join(sorted(map(str, c.groups))[:3]) + (", ..." if len(c.groups) > 3 else "")
                lines.append(f"NEW {row.release}: {c.label} ({groups}): {unknown} not in the baseline (a new finding)")
        for e in sorted(want.required - baseline.used(causes, want.entries)):  # an alias counts
            lines.append(f"MISSING {row.release}: {e} was not found (a required known finding: the tool regressed)")
        for f in row.fidelity.findings if row.fidelity else []:
            lines.append(f"MISMATCH {row.release}: {f.signature} (the model disagrees with the release)")
    return lines
