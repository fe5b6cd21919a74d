"""Long commands say where they are: ``prove`` with the time left, ``fidelity`` while it compares.

``prove --target sglang==0.5.23 --space full`` calls the release's sizing
functions for about 13 million launch configurations (hours); it used to
print nothing until the end.  The estimate is checked on a fake clock, the
count it divides by on a real (tiny) sweep.
"""

from __future__ import annotations

import threading

import pytest

from fuzz.cli import main
from fuzz.common.heartbeat import heartbeat
from fuzz.engines.sglang.prove.sweep import prove_on
from fuzz.prove.progress import SweepProgress, duration
from fuzz.targets.resolve import resolve_target


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return Clock()


def test_a_called_sweep_says_how_far_it_is_and_the_time_left(clock):
    lines: list[str] = []
    p = SweepProgress("sglang==0.5.23", blocks=4, on_line=lines.append, configs_total=1000, clock=clock)
    p.tick(100)  # no time has passed: no line yet
    assert lines == []
    clock.now += 10
    p.tick(150)  # 250 of 1000 in 10 s: 30 s left at that pace
    assert lines == ["[sglang==0.5.23] prove: 250 of 1,000 launch configurations (25.0%), 25/s, 10s, about 30s left"]
    clock.now += 1
    p.tick(1)  # within two seconds of the last line: quiet
    assert len(lines) == 1


def test_a_vectorized_sweep_counts_blocks(clock):
    lines: list[str] = []
    p = SweepProgress("reference", blocks=108, on_line=lines.append, clock=clock)
    clock.now += 3
    p.block_done(5000, called=False)
    assert lines == ["[reference] prove: block 1 of 108, 5,000 launch configurations, 3s, about 5m21s left"]


@pytest.mark.parametrize("seconds, text", [(0.4, "0s"), (45, "45s"), (725, "12m05s"), (8460, "2h21m")])
def test_durations_read_short(seconds, text):
    assert duration(seconds) == text


def test_prove_announces_the_sweep_and_counts_what_it_will_call():
    lines: list[str] = []
    result = prove_on(resolve_target("reference"), "tiny", algorithm="EAGLE", calls=True, on_progress=lines.append)
    first = lines[0]
    assert first.startswith("[reference] prove: space tiny, ") and "x 5 page sizes" in first
    assert first.endswith("(sizing calls per configuration)")
    assert f"[reference] prove: {result.launch_configurations:,} launch configurations to call" in lines


def test_a_traced_prove_announces_its_method_and_counts_nothing_first():
    """A real target's sizing is traced (once per path), not called per configuration: no count beforehand."""
    lines: list[str] = []
    result = prove_on(resolve_target("sglang==0.5.23"), "tiny", algorithm="EAGLE", on_progress=lines.append)
    assert lines[0].endswith("(sizing calls, once per path of each block)") and result.trace is not None
    assert not any("launch configurations to call" in line for line in lines)


def test_prove_prints_progress_on_stderr_unless_quiet(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["prove", "--target", "reference", "--space", "tiny", "--algorithm", "none", "--cases", "c"]) == 0
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("[reference] prove: space tiny, ") and first.endswith("(vectorized model)")
    main(["prove", "--target", "reference", "--space", "tiny", "--algorithm", "none", "--quiet", "--cases", "c"])
    assert capsys.readouterr().err == ""


def test_a_heartbeat_speaks_while_its_block_runs_and_stops_with_it():
    said: list[float] = []
    twice = threading.Event()

    def say(seconds: float) -> None:
        said.append(seconds)
        if len(said) >= 2:
            twice.set()

    with heartbeat(say, every=0.01):
        assert twice.wait(30)
    assert said == sorted(said) and not [t for t in threading.enumerate() if t.name == "kvrow-heartbeat"]
    with heartbeat(None):  # quiet: no thread at all
        assert not [t for t in threading.enumerate() if t.name == "kvrow-heartbeat"]


def test_fidelity_says_what_it_compares_before_it_starts(capsys, tmp_path):
    assert main(["fidelity", "--target", "sglang==0.5.23", "--configs", "3", "--cases", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == "[sglang==0.5.23] fidelity: 3 configurations against model sglang-0.5.23"
