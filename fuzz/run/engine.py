"""The decode campaign: Hypothesis draws decode scenarios, each checked on the target's real tensor.

``check_scenario`` is the one place a scenario meets a target; the
campaign (``campaign``), the replay, the bounded proof's confirmation and
the matrix all go through it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import settings as Settings
from hypothesis import target as hypothesis_target

from allocator_model.config import ConfigError
from allocator_model.scenario import DecodeScenario, ScenarioRun, run_scenario, scenario_problem
from fuzz.campaign.driver import CampaignResult, Progress, Tracker, run_campaign, seeded
from fuzz.findings.kinds import REGIMES, CaseKind, Property, Regime, moved_regime
from fuzz.findings.model import Finding, Violation, sizing_raised
from fuzz.targets.base import Target, TargetCallError
from strategies.scenarios import decode_scenarios

from .coverage import covering_set
from .properties import PROPERTIES, overshoot, violations


def _run(
    target: Target, scenario: DecodeScenario, props: tuple[Property, ...]
) -> tuple[ScenarioRun | None, list[Violation]]:
    try:
        run = run_scenario(scenario, target.sizing, target.revision)
    except TargetCallError as e:
        return None, [sizing_raised(scenario.config, e)]
    if run.skipped:
        return run, []
    return run, violations(run, props)


def without_dcp(scenario: DecodeScenario) -> DecodeScenario | None:
    """The same scenario on the same deployment without decode context parallelism (None: no such deployment)."""
    cfg = scenario.config
    try:
        return DecodeScenario(
            cfg.replace(attn_dcp_size=1),
            scenario.committed_len,
            scenario.num_steps,
            scenario.prior,
            scenario.device_lag,
        )
    except ConfigError:
        return None


def attribute(target: Target, scenario: DecodeScenario, v: Violation) -> Violation:
    """Name a violation for its cause: ``dcp>1`` only when the same case without DCP passes.

    A case that also fails with ``attn_dcp_size=1`` does not fail because of
    DCP; it is grouped by the regime it has without DCP (page 1's gap, say).
    Applied inside ``check_scenario``, so the shrinker (which keeps a case in
    its group) never slides a DCP bug onto a case that fails without DCP.
    """
    if v.group != Regime.DCP.value or v.prop == Property.SIZING_RAISED:
        return v
    other = without_dcp(scenario)
    if other is None or scenario_problem(other, target.revision) is not None:
        return v
    _, found = _run(target, other, (Property(v.prop),))
    same = [w for w in found if w.prop == v.prop]
    code = REGIMES.index(Regime(v.group))
    moved = moved_regime(code, REGIMES.index(Regime(same[0].group)) if same else code, bool(same))
    if moved == code:
        return v
    return replace(
        v,
        group=REGIMES[moved].value,
        details=v.details + [f"cause: fails without DCP too (attn_dcp_size=1: {same[0].headline})"],
    )


def check_scenario(
    target: Target, scenario: DecodeScenario, props: Iterable[Property] = PROPERTIES, *, attributed: bool = True
) -> tuple[ScenarioRun | None, list[Violation]]:
    """Run one scenario on a target and return every property it breaks, each named for its cause."""
    run, found = _run(target, scenario, tuple(props))
    if attributed:
        found = [attribute(target, scenario, v) for v in found]
    return run, found


def decode_finding(target: str, v: Violation, scenario: DecodeScenario, found_at: int = 0) -> Finding:
    return Finding(
        CaseKind.DECODE, target, v, scenario.config, scenario.to_dict(), found_at, reached_by=scenario.reached_by()
    )


class DecodeHunt:
    """The decode properties as a ``Hunt``: a ``@given`` test over decode scenarios."""

    name = "run"

    def __init__(
        self,
        target: Target,
        props: Iterable[Property] = PROPERTIES,
        pins: dict[str, Any] | None = None,
        cover_part: tuple[int, int] = (0, 1),
    ):
        self.target, self.props, self.pins = target, tuple(props), pins
        self.cover_part = cover_part  # (k, K): this worker runs covering cases k, k + K, ... (``fuzz.campaign``)

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        target, props = self.target, self.props

        def test(scenario: DecodeScenario) -> None:
            progress.tick(tracker.groups)
            run, vs = check_scenario(target, scenario, props)
            if run is not None and not run.skipped:
                hypothesis_target(float(overshoot(run)), label="overshoot past the row width")
            for v in vs:
                if not tracker.is_known(v.signature):  # a known group counts as passing: hunt for the next
                    tracker.fail(decode_finding(target.spec, v, scenario, progress.examples))

        # settings applied after seed: the seed's "no database" is overridden on purpose (see the driver)
        wrapped: Callable[[], None] = settings(seeded(given(decode_scenarios(target.revision, self.pins))(test), seed))
        return wrapped

    def cover(self, tracker: Tracker, progress: Progress) -> Iterator[Finding]:
        """The covering set (``coverage``), before any search: the first case of each group it meets, as met."""
        k, parts = self.cover_part
        for scenario in itertools.islice(covering_set(self.target, self.pins), k, None, parts):
            progress.tick(tracker.groups)
            _, vs = check_scenario(self.target, scenario, self.props)
            for v in vs:
                if not tracker.is_known(v.signature):
                    yield decode_finding(self.target.spec, v, scenario, progress.examples)

    def finish(self, f: Finding) -> Finding:
        return f

    def stats(self) -> dict[str, Any]:
        return {}


def campaign(
    target: Target,
    hyp_settings: Settings,
    *,
    props: Iterable[Property] = PROPERTIES,
    pins: dict[str, Any] | None = None,
    cover_part: tuple[int, int] = (0, 1),
    **driver: Any,
) -> CampaignResult:
    """Fuzz ``target``'s decode properties until no new group turns up.

    ``cover_part`` (k, K): worker k of K runs every K-th covering case from the k-th.

    ``driver``: the keywords of ``fuzz.campaign.driver.run_campaign`` (seed,
    max_rounds, on_progress, progress_every, on_finding).
    """
    return run_campaign(target, DecodeHunt(target, props, pins, cover_part), hyp_settings, **driver)
