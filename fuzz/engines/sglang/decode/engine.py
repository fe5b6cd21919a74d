"""The decode campaign: Hypothesis draws decode scenarios, each judged by the verdict pipeline
(``fuzz.verdict.PIPELINE``) on the target's real tensor."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from hypothesis import given
from hypothesis import settings as Settings
from hypothesis import target as hypothesis_target

from allocator_model.scenario import DecodeScenario, ScenarioRun
from fuzz.campaign.driver import CampaignResult, Progress, Tracker, run_campaign, seeded
from fuzz.engines.sglang.groups import scenario_of
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding
from fuzz.tables.hunt import with_tables
from fuzz.verdict import PIPELINE, CaseVerdict
from strategies.scenarios import decode_scenarios

from ..own_path import WritePathMode, compared, has_sglang_path
from ..representative import search, without_needless_dcp
from .check import DecodeCase, decode_finding
from .coverage import covering_set
from .properties import PROPERTIES, overshoot


def sglang_key(scenario: DecodeScenario) -> tuple[Any, ...]:
    """The covering cells run on SGLang's own path: one per (pool, algorithm, page class, overlap)."""
    cfg = scenario.config
    return cfg.kv_pool, cfg.speculative_algorithm, cfg.page_size > 1, cfg.attn_dcp_size > 1, cfg.enable_overlap


# One search example in this many is also run on SGLang's own path and held to the model's run.
SGLANG_SAMPLE_EVERY = 64

# The hunt's phases as its progress names them (the search between them is the driver's, ``driver.SEARCHING``).
COVERING = "checking the covering set"
PROVING = "proving the sizing arithmetic"
WITNESSES = "checking the proof's witnesses"
CONFIRMING = "confirming on SGLang's code"  # a round's new groups replayed on SGLang's own write path (``finish``)

# A proof stage (``.prove.quick.proof_stage``, handed in by ``SGLangEngine.hunt`` where ``run`` asks for one):
# (target, cover_part, pins) -> (its report fields, each proved group's worst witness as a decode finding).
ProofStage = Callable[[SGLangTarget, tuple[int, int], dict[str, Any]], tuple[dict[str, Any], list[Finding]]]


class DecodeHunt:
    """The decode properties as a ``Hunt``: a ``@given`` test over decode scenarios.

    On a target whose write path is SGLang's own (``sglang.has_sglang_path``), the covering set runs one cell
    of each ``sglang_key`` there too, and one search example in ``SGLANG_SAMPLE_EVERY``: what SGLang's run
    breaks that the model's does not is a finding of its own, a difference between the runs is
    ``model-mismatch/decode_step``, and every finding's case is replayed there (``finish``).
    """

    name = "run"

    def __init__(
        self,
        target: SGLangTarget,
        props: Iterable[Property] = PROPERTIES,
        pins: dict[str, Any] | None = None,
        cover_part: tuple[int, int] = (0, 1),
        write_path: WritePathMode = WritePathMode.AUTO,
        proof: ProofStage | None = None,
        representative: bool = False,
    ):
        self.target, self.props, self.pins = target, tuple(props), pins
        self.representative = representative  # each group's representative case searched for (``finish``)
        self.proof, self.proof_stats = proof, dict[str, Any]()
        self.cover_part = cover_part  # (k, K): this worker runs covering cases k, k + K, ... (``fuzz.campaign``)
        self.sglang = has_sglang_path(target, write_path)
        self.finishing = CONFIRMING if self.sglang else None  # the driver's phase for ``finish``
        self.counts = {"sglang_scenarios": 0, "sglang_decode_steps": 0, "sglang_seconds": 0.0}

    def _on_sglang(
        self, scenario: DecodeScenario, model: ScenarioRun | None, seen: list[Finding], at: int
    ) -> Iterator[Finding]:
        """The findings SGLang's own run of ``scenario`` adds to the model's (``seen``)."""
        started = time.monotonic()
        check = compared(self.target, scenario, model)
        self.counts["sglang_scenarios"] += 1
        self.counts["sglang_decode_steps"] += len(check.run.writes)
        self.counts["sglang_seconds"] += time.monotonic() - started
        known = {f.signature for f in seen}
        for v in check.violations:
            if v.signature not in known:
                v = PIPELINE.attribute(self.target, DecodeCase(scenario), v, own=True)
                f = decode_finding(self.target.spec, v, scenario, at)
                f.confirmed, f.confirmation = (
                    True,
                    f"found on sglang {check.version}'s own write path (the model's run passes)",
                )
                yield f
        if check.mismatch is not None:
            yield decode_finding(self.target.spec, check.mismatch, scenario, at)

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        target, props = self.target, self.props

        def test(scenario: DecodeScenario) -> None:
            progress.tick(tracker.groups)
            verdict = PIPELINE.case(target, DecodeCase(scenario), props, confirm=False, found_at=progress.examples)
            run = verdict.run
            if run is not None and not run.skipped:
                hypothesis_target(float(overshoot(run)), label="overshoot past the row width")
            for f in verdict.findings:
                if not tracker.is_known(f.signature):  # a known group counts as passing: hunt for the next
                    tracker.fail(f)
            if self.sglang and run is not None and progress.examples % SGLANG_SAMPLE_EVERY == 0:
                for f in self._on_sglang(scenario, run, verdict.findings, progress.examples):
                    if not tracker.is_known(f.signature):
                        tracker.fail(f)

        # settings applied after seed: the seed's "no database" is overridden on purpose (see the driver)
        wrapped: Callable[[], None] = settings(seeded(given(decode_scenarios(target.revision, self.pins))(test), seed))
        return wrapped

    def cover(self, tracker: Tracker, progress: Progress) -> Iterator[Finding]:
        """The covering set (``coverage``), before any search: the first case of each group it meets, as met."""
        k, parts = self.cover_part
        on_sglang: set[tuple[Any, ...]] = set()
        progress.enter(COVERING)
        for scenario in itertools.islice(covering_set(self.target, self.pins), k, None, parts):
            progress.tick(tracker.groups)
            verdict = self.judged(DecodeCase(scenario), progress.examples)
            for f in verdict.findings:
                if not tracker.is_known(f.signature):
                    yield self.finish(f)
            if self.sglang and sglang_key(scenario) not in on_sglang:
                on_sglang.add(sglang_key(scenario))
                for f in self._on_sglang(scenario, verdict.run, verdict.findings, progress.examples):
                    if not tracker.is_known(f.signature):
                        yield self.finish(f)
        if self.proof is not None:
            progress.enter(PROVING)  # runs no example: named, or its seconds read as a stalled search
            self.proof_stats, witnesses = self.proof(self.target, self.cover_part, self.pins or {})
            progress.enter(WITNESSES)
            yield from self.proved(witnesses, tracker, progress)

    def proved(self, witnesses: list[Finding], tracker: Tracker, progress: Progress) -> Iterator[Finding]:
        """Each proved group's worst witness, checked like a covering case; a group the checks do not show
        (a sizing function that raised, a growth rule no closed form reads) is the witness itself."""
        for w in witnesses:
            progress.tick(tracker.groups)
            found = self.judged(DecodeCase(scenario_of(w))).findings
            for f in found:
                if not tracker.is_known(f.signature):
                    yield self.finish(f)
            if not tracker.is_known(w.signature) and w.signature not in {f.signature for f in found}:
                w.found_at = progress.examples
                yield self.finish(w)

    def judged(self, case: DecodeCase, at: int = 0) -> CaseVerdict:
        """``case`` through the verdict pipeline, confirmation left to ``finish`` (only a new group's is run)."""
        return PIPELINE.case(self.target, case, self.props, confirm=False, found_at=at)

    def finish(self, f: Finding) -> Finding:
        """A group's final case: without a DCP size its group does not need (``without_needless_dcp``), replayed on
        SGLang's own path where the hunt runs it (the pipeline's ``confirm``), and where the hunt searches for one,
        its representative case beside it (``representative.search``, confirmed the same way)."""
        f = without_needless_dcp(self.target, f)
        f = PIPELINE.confirm(self.target, f) if self.sglang else f
        if self.representative:
            f.search = search(self.target, f, self.sglang)
        return f

    def stats(self) -> dict[str, Any]:
        if not self.sglang:
            return {"write_path": "model", **self.proof_stats}
        return {"write_path": "sglang", **{k: round(v, 3) for k, v in self.counts.items()}, **self.proof_stats}


def campaign(
    target: SGLangTarget,
    hyp_settings: Settings,
    *,
    props: Iterable[Property] = PROPERTIES,
    pins: dict[str, Any] | None = None,
    cover_part: tuple[int, int] = (0, 1),
    write_path: WritePathMode = WritePathMode.AUTO,
    proof: ProofStage | None = None,
    **driver: Any,
) -> CampaignResult:
    """Fuzz ``target``'s decode properties, and its engine's tables checked on their own, until no new group turns up.

    ``cover_part`` (k, K): worker k of K runs every K-th covering case from the k-th.
    ``proof``: the bounded proof run after the covering set (``..prove.quick``), its witnesses checked as
    covering cases; worker k of K proves the k-th K-th of its blocks.

    ``driver``: the keywords of ``fuzz.campaign.driver.run_campaign`` (seed,
    max_rounds, on_progress, progress_every, on_finding).
    """
    hunt = DecodeHunt(target, props, pins, cover_part, WritePathMode(write_path), proof)
    every = tuple(props) == tuple(PROPERTIES)
    return run_campaign(target, with_tables(hunt, target, pins, None if every else props), hyp_settings, **driver)


def run_lines(stats: dict[str, Any]) -> list[str]:
    """What ``run``'s verdict proved and what it sampled, and where its decode steps ran (``Engine.campaign_lines``)."""
    from fuzz.engines.sglang.prove.quick import proved_line

    lines = [line] if (line := proved_line(stats)) else []
    if stats.get("write_path") == "sglang":
        lines.append(
            f"   write path: {stats.get('sglang_decode_steps', 0):,} decode steps of "
            f"{stats.get('sglang_scenarios', 0):,} scenarios ran on SGLang's own code "
            f"({stats.get('sglang_seconds', 0.0):.1f}s); every example ran on the model's"
        )
    from fuzz.engines.sglang.page_tables import cover_line

    return lines + ([line] if (line := cover_line(stats)) else [])
