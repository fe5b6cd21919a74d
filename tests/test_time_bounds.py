"""The time bound on a call into SGLang's code leaves the process's own SIGALRM handler and timer as they were."""

from __future__ import annotations

import signal

import pytest

from fuzz.engines.sglang.real.boundary import bounded_call, depth
from fuzz.engines.sglang.real.runtime.bounds import SGLangTimeout, bounded


def test_an_earlier_handler_and_timer_are_put_back_after_the_block_and_after_a_raise() -> None:
    def mine(signum, frame):  # type: ignore[no-untyped-def]
        raise AssertionError("the earlier timer fired during the test")

    previous = signal.signal(signal.SIGALRM, mine)
    signal.setitimer(signal.ITIMER_REAL, 100.0)
    try:
        with bounded("a call", 5.0, lambda name: None):
            assert signal.getsignal(signal.SIGALRM) is not mine
            assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 5.0
        assert signal.getsignal(signal.SIGALRM) is mine and 90 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100
        with pytest.raises(KeyError), bounded("a call", 5.0, lambda name: None):
            raise KeyError("raised inside")
        assert signal.getsignal(signal.SIGALRM) is mine and 90 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_no_timer_is_left_running_and_the_default_handler_is_back() -> None:
    before = signal.getsignal(signal.SIGALRM)
    with bounded("a call", 5.0, lambda name: None):
        pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) == before


def test_a_call_past_its_bound_is_named_and_the_depth_is_back_to_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fuzz.engines.sglang.real.boundary.SIZING_SECONDS", 0.05)
    with pytest.raises(SGLangTimeout, match=r"get_x\(\) ran past its 0.05s bound, in .*the harness"):
        with bounded_call(lambda: "get_x()", "sizing.py"):
            assert depth() == 1
            while True:
                pass
    assert depth() == 0 and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
