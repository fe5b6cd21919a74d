"""A signal during a campaign is never lost: it is taken at the next example, where it always propagates."""

from __future__ import annotations

import signal

import pytest

from fuzz.common import interrupts


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
