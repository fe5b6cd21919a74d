"""A signal during a campaign is never lost: it is taken at the next example, where it always propagates."""

from __future__ import annotations

import os
import signal

import pytest
from hypothesis import settings

from fuzz.campaign.driver import Progress
from fuzz.common import interrupts
from fuzz.common.profiles import get_profile
from fuzz.engines.sglang.decode.engine import campaign
from fuzz.targets.resolve import resolve_target


def test_a_signal_during_a_campaign_waits_for_the_next_safe_point():
    with interrupts.deferred():
        interrupts.handler(signal.SIGINT, None)  # lands anywhere (say, in a gc callback): only a flag
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_if_requested()  # the next example
        interrupts.raise_if_requested()  # taken once


def test_a_second_signal_interrupts_at_once():
    with interrupts.deferred():
        interrupts.handler(signal.SIGTERM, None)
        with pytest.raises(KeyboardInterrupt):
            interrupts.handler(signal.SIGTERM, None)
    interrupts.raise_if_requested()  # nothing left pending after the campaign


def test_outside_a_campaign_a_signal_interrupts_at_once():
    with pytest.raises(KeyboardInterrupt):
        interrupts.handler(signal.SIGINT, None)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_real_signal_after_n_examples_stops_the_campaign_at_the_next_example(sig):
    """Deterministic: a fixed seed, and the signal sent by the progress hook at example N, not after a clock.

    The campaign stops exactly there, reports itself interrupted, and keeps every group found by then.
    """
    n = 40
    at_signal: list[int] = []

    def on_progress(p: Progress) -> None:  # progress_every=0: called at every example
        if p.examples == n and not at_signal:
            at_signal.append(p.groups)
            os.kill(os.getpid(), sig)  # a real signal, to this process

    previous = signal.signal(sig, interrupts.handler)
    try:
        result = campaign(
            resolve_target("reference@pre-26972"),
            settings(get_profile("ci"), max_examples=100_000),
            seed=1,
            on_progress=on_progress,
            progress_every=0,
        )
    finally:
        signal.signal(sig, previous)
    assert at_signal and result.interrupted and result.examples == n, (at_signal, result.examples)
    assert at_signal[0] >= 1 and len(result.findings) >= at_signal[0]  # the groups met by then, none lost
    assert result.status.value == "counterexample" and result.error is None
    interrupts.raise_if_requested()  # nothing left pending
