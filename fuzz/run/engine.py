"""The decode campaign: Hypothesis draws decode scenarios, each checked on the target's real tensor.

``check_scenario`` is the one place a scenario meets a target; the
campaign (``campaign``), the replay, the bounded proof's confirmation and
the matrix all go through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import given
from hypothesis import settings as Settings
from hypothesis import target as hypothesis_target

from allocator_model.scenario import DecodeScenario, ScenarioRun, run_scenario
from strategies.scenarios import decode_scenarios

from fuzz.campaign.driver import MAX_ROUNDS, CampaignResult, Progress, Tracker, run_campaign, seeded
from fuzz.findings.kinds import CaseKind, Property
from fuzz.findings.model import Finding, Violation, sizing_raised
from fuzz.targets.base import Target, TargetCallError

from .properties import PROPERTIES, overshoot, violations


def check_scenario(target: Target, scenario: DecodeScenario,
                   props: Iterable[Property] = PROPERTIES) -> tuple[ScenarioRun | None, list[Violation]]:
    """Run one scenario on a target and return every property it breaks."""
    props = tuple(props)
    try:
        run = run_scenario(scenario, target.sizing, target.revision)
    except TargetCallError as e:
        return None, [sizing_raised(scenario.config, e)]
    if run.skipped:
        return run, []
    return run, violations(run, props)


def decode_finding(target: str, v: Violation, scenario: DecodeScenario, found_at: int = 0) -> Finding:
    return Finding(CaseKind.DECODE, target, v, scenario.config, scenario.to_dict(), found_at)


class DecodeHunt:
    """The decode properties as a ``Hunt``: a ``@given`` test over decode scenarios."""

    name = "run"

    def __init__(self, target: Target, props: Iterable[Property] = PROPERTIES, pins: dict[str, Any] | None = None):
        self.target, self.props, self.pins = target, tuple(props), pins

    def round_test(self, settings: Settings, seed: int | None, tracker: Tracker,
                   progress: Progress) -> Callable[[], None]:
        target, props = self.target, self.props

        def test(scenario: DecodeScenario) -> None:
            progress.tick(tracker.groups)
            run, vs = check_scenario(target, scenario, props)
            if run is not None and not run.skipped:
                hypothesis_target(float(overshoot(run)), label="overshoot past the row width")
            for v in vs:
                if not tracker.is_known(v.signature):  # a known group counts as passing: hunt for the next
                    tracker.report(decode_finding(target.spec, v, scenario, progress.examples))

        # settings applied after seed: the seed's "no database" is overridden on purpose (see the driver)
        wrapped: Callable[[], None] = settings(seeded(given(decode_scenarios(target.revision, self.pins))(test), seed))
        return wrapped

    def finish(self, f: Finding) -> Finding:
        return f

    def stats(self) -> dict[str, Any]:
        return {}


def campaign(
    target: Target,
    hyp_settings: Settings,
    *,
    props: Iterable[Property] = PROPERTIES,
    seed: int | None = None,
    max_rounds: int = MAX_ROUNDS,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: float = 2.0,
    pins: dict[str, Any] | None = None,
    on_finding: Callable[[Finding], None] | None = None,
) -> CampaignResult:
    """Fuzz ``target``'s decode properties until no new group turns up (or ``max_rounds``)."""
    return run_campaign(target, DecodeHunt(target, props, pins), hyp_settings, seed=seed, max_rounds=max_rounds,
                        on_progress=on_progress, progress_every=progress_every, on_finding=on_finding)
