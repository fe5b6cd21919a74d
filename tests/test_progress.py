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


def test_a_traced_prove_announces_its_method_and_counts_its_blocks_first():
    """A real target's sizing is traced (once per path), not called per configuration: nothing to call, but each
    block's launch configurations counted first, the sweep's own count (what the time left weighs)."""
    lines: list[str] = []
    result = prove_on(resolve_target("sglang==0.5.23"), "tiny", algorithm="EAGLE", on_progress=lines.append)
    assert lines[0].endswith("(sizing calls, once per path of each block)") and result.trace is not None
    assert not any("launch configurations to call" in line for line in lines)
    assert lines[1].startswith(f"[sglang==0.5.23] prove: {result.launch_configurations:,} launch configurations in ")


def test_the_time_left_is_what_the_blocks_left_hold_at_what_the_measured_ones_cost(clock):
    """Blocks as sglang==0.5.23's full space has them: a few without speculation, heavy EAGLE blocks, then a
    kind of pool that launches few.  Each costs 5 ms plus 2 us per configuration; the blocks' pace would say
    four times the time left, the measured cost says it exactly."""
    sizes = [16] * 12 + [277_072] * 24 + [5_000] * 108
    lines: list[str] = []
    p = SweepProgress("sglang==0.5.23", blocks=len(sizes), on_line=lines.append, sizes=sizes, clock=clock)
    cost = [0.005 + 2e-6 * n for n in sizes]
    for i, n in enumerate(sizes[:36]):
        if i == 12:
            assert p.seconds_left() is None and p.left() == "estimating the time left"  # one size so far: no rate
        clock.now += cost[i]
        p.block_done(n, called=False)
    left = sum(cost[36:])
    assert p.seconds_left() == pytest.approx(left, rel=1e-6)
    paced = (clock.now - p.started) * (len(sizes) - 36) / 36  # what the blocks' pace says
    assert paced > 4 * left
    assert lines and lines[-1].endswith(f"about {duration(left)} left")


def test_a_long_block_s_noise_does_not_swamp_what_every_block_pays(clock):
    """Each block weighs 1 / its time: one EAGLE block twice as slow as the others (a busy machine) moves the
    estimate for many small blocks left by little."""
    sizes = [16] * 4 + [100_000] * 4 + [16] * 400
    p = SweepProgress("x", blocks=len(sizes), on_line=lambda _: None, sizes=sizes, clock=clock)
    for i, n in enumerate(sizes[:8]):
        clock.now += (0.01 + 1e-6 * n) * (2 if i == 7 else 1)
        p.block_done(n, called=False)
    assert p.seconds_left() == pytest.approx(400 * (0.01 + 16e-6), rel=0.15)


def test_run_names_each_phase_as_it_enters_it():
    """The decode campaign's progress, one line as each phase begins (and none on a timer: no race): the covering
    set, the proof (which runs no example: named, never a stalled search), its witnesses, then the search; a
    target with SGLang's own write path confirms each round's new groups there, and says so."""
    from hypothesis import Phase, settings

    from fuzz.campaign.driver import run_campaign
    from fuzz.engines.sglang.decode.engine import COVERING, PROVING, WITNESSES, DecodeHunt

    lines: list[str] = []
    target = resolve_target("reference")

    def proof(t, part, pins):  # the proof stage: where it ran, among the lines
        lines.append("(the proof ran)")
        return {}, []

    pins = {"speculative_algorithm": "EAGLE", "page_size": 64, "attn_dcp_size": 1, "kv_pool": "standard"}
    hunt = DecodeHunt(target, pins=pins, proof=proof)
    assert hunt.finishing is None  # the model's write path: nothing to confirm on SGLang's code
    hyp = settings(max_examples=3, database=None, derandomize=True, phases=[Phase.generate])
    on_line = lambda p: lines.append(p.line())  # noqa: E731
    run_campaign(target, hunt, hyp, max_rounds=1, on_progress=on_line, progress_every=1e9)
    phases = [line.split("] ", 1)[1].split(":")[0] if line.startswith("[") else line for line in lines]
    assert phases == [COVERING, PROVING, "(the proof ran)", WITNESSES, "searching"], lines
    assert lines[1].startswith("[reference] proving the sizing arithmetic: ") and "/s" not in lines[1]


def test_a_phase_s_pace_is_its_own(clock):
    from fuzz.campaign.driver import Progress

    lines: list[str] = []
    p = Progress("t", clock(), lambda q: lines.append(q.line()), every=2.0, phase="a", clock=clock)
    for _ in range(100):
        p.tick(0)
    clock.now += 10
    p.enter("b")  # said at once: no example in it yet, so no pace
    assert lines == ["[t] b: 100 examples, 0 groups, 10s"]
    clock.now += 2
    p.tick(1)
    assert lines[-1] == "[t] b: 101 examples, 0/s, 1 groups, 12s"
    for _ in range(38):
        p.tick(1)  # within 2 s of the last line: quiet
    clock.now += 2
    p.tick(1)
    assert lines[-1] == "[t] b: 140 examples, 10/s, 1 groups, 14s"  # 40 in b's 4 s, not 140 in 14 s


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
