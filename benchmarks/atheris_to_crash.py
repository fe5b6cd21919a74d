"""Seconds and inputs until the Atheris entry point crashes on the seed bug (0.5.18's #35424, its dcp>1 groups).

    python benchmarks/atheris_to_crash.py [--target sglang==0.5.18] [--seeds 5] [--engine atheris|bytes]

``atheris``: the real libFuzzer loop, ``python -m fuzz.oss.atheris_entry``
(``-seed=N``, a fresh process each time).  A crash of another root cause
(0.5.18 also has the open page-1 gap, #33579, which random inputs meet first
about as often) is what a team would mark known: the crash's root cause
(``fuzz.engines.sglang.causes``, computed here from the crash input) joins a baseline file
(``kvrow-fuzz baseline write``'s format) given as ``--kvrow-baseline`` and
the fuzzer restarts, as one would run it on ClusterFuzzLite with the open
bug in ``KVROW_FUZZ_BASELINE``.  Per seed: the seconds the fuzz loops ran
(first input to crash, summed over restarts, as the entry point reports
them), the wall seconds (process starts, the torch import and
instrumentation included), the inputs and the restarts.  ``bytes``: no
Atheris; the entry point fed random bytes in this process
(``random.Random(seed)``, up to 4096 bytes each), with the same baseline
rule.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SEED_BUG = "#35424"  # the seed bug's root cause, as a cause's label names it
CRASH_LINE = re.compile(r"^kvrow-fuzz: (\S+) on \S+ after (\d+) inputs, ([0-9.]+)s: saved ", re.MULTILINE)
MAX_RESTARTS = 12


@dataclass
class Hunt:
    """One seed's way to the seed bug: the root causes met first (made known), inputs and seconds summed."""

    seed: int
    passed: list[str] = field(default_factory=list)  # the labels of the causes made known, in order
    inputs: int = 0
    fuzz_seconds: float = 0.0
    wall_seconds: float = 0.0
    found: bool = False
    known: list[Any] = field(default_factory=list)  # their causes (fuzz.findings.cause.Cause), the baseline's

    def crashed(self, target: str, finding: Any, work: str) -> None:
        """A crash: the seed bug's cause ends the hunt; another's joins the baseline file in ``work``."""
        from fuzz.findings import baseline
        from fuzz.oss.target import resolved
        from fuzz.verdict import PIPELINE

        causes = PIPELINE.causes(resolved(target), [finding])
        labels = sorted({c.label for c in causes}) or ["unexplained"]
        self.found = SEED_BUG in labels
        if not self.found:
            self.passed.append("+".join(labels))
            self.known += causes
            with open(baseline_path(work), "w") as f:
                f.write(baseline.text(target, self.known))


def baseline_path(work: str) -> str:
    return os.path.join(work, "baseline.json")


def atheris_once(target: str, h: Hunt, seed: int, runs: int, work: str) -> tuple[bytes | None, int, float]:
    """One libFuzzer process: (the input it crashed on or None, inputs, fuzz-loop seconds)."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "KVROW_FUZZ_CASES": os.path.join(work, "cases")}
    argv = [sys.executable, "-m", "fuzz.oss.atheris_entry", f"--kvrow-target={target}"]
    argv += [f"--kvrow-baseline={baseline_path(work)}"] if h.known else []
    argv += [f"-runs={runs}", f"-seed={seed}", f"-artifact_prefix={work}/crash/"]
    os.makedirs(os.path.join(work, "crash"), exist_ok=True)
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    m = CRASH_LINE.search(proc.stderr)
    if m is None:
        if proc.returncode != 0:
            sys.exit(f"the entry point failed without a finding (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        return None, runs, 0.0
    crash_dir = os.path.join(work, "crash")
    (name,) = [n for n in os.listdir(crash_dir) if n.startswith("crash-")]  # libFuzzer's crash-<sha1>: one a process
    with open(os.path.join(crash_dir, name), "rb") as f:
        data = f.read()
    os.remove(os.path.join(crash_dir, name))  # read: the next process's is the only one
    return data, int(m.group(2)), float(m.group(3))


def hunt_atheris(target: str, seed: int, runs: int) -> Hunt:
    from fuzz.oss.target import Entry, FuzzConfig, replay_bytes

    h = Hunt(seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        replayer = Entry(FuzzConfig(target, cases=os.path.join(work, "replayed")), quiet=True)
        for restart in range(MAX_RESTARTS):
            data, inputs, seconds = atheris_once(target, h, seed * 1000 + restart + 1, runs, work)
            h.inputs += inputs
            h.fuzz_seconds += seconds
            finding = replay_bytes(replayer, data) if data is not None else None
            if finding is None:
                break
            h.crashed(target, finding, work)
            if h.found:
                break
    h.wall_seconds = time.perf_counter() - t0
    return h


def hunt_bytes(target: str, seed: int, runs: int) -> Hunt:
    from fuzz.campaign.driver import FindingRaised
    from fuzz.oss.target import Entry, FuzzConfig

    h = Hunt(seed)
    rnd = random.Random(seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        while not h.found and h.inputs < runs and len(h.passed) < MAX_RESTARTS:
            known = baseline_path(work) if h.known else None
            entry = Entry(FuzzConfig.parse(target, None, work, None, known), quiet=True)
            started = time.perf_counter()
            try:
                while h.inputs < runs:
                    h.inputs += 1
                    entry(rnd.randbytes(rnd.randrange(4097)))
            except FindingRaised as e:
                h.fuzz_seconds += time.perf_counter() - started
                h.crashed(target, e.finding, work)
                continue
            h.fuzz_seconds += time.perf_counter() - started
    h.wall_seconds = time.perf_counter() - t0
    return h


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="sglang==0.5.18", help="target spec (default: the real 0.5.18 wheel)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--runs", type=int, default=20_000, help="inputs per process (atheris) or in all (bytes)")
    p.add_argument("--engine", choices=("atheris", "bytes"), default=None, help="default: atheris if installed")
    args = p.parse_args(argv)
    engine = args.engine
    if engine is None:
        try:
            import atheris  # noqa: F401
        except ImportError:
            engine = "bytes"
        else:
            engine = "atheris"
    hunt = hunt_atheris if engine == "atheris" else hunt_bytes
    print(f"engine {engine}, target {args.target}, root cause {SEED_BUG}; {args.seeds} seeds", flush=True)
    print(f"{'seed':>4} {'fuzz s':>8} {'wall s':>8} {'inputs':>7} {'restarts':>8}  root causes made known on the way")
    hunts = []
    for seed in range(args.seeds):
        h = hunt(args.target, seed, args.runs)
        hunts.append(h)
        status = "" if h.found else "  NOT FOUND"
        print(
            f"{seed:>4} {h.fuzz_seconds:>8.2f} {h.wall_seconds:>8.2f} {h.inputs:>7} {len(h.passed):>8}  "
            f"{', '.join(h.passed) or '-'}{status}",
            flush=True,
        )
    found = [h for h in hunts if h.found]
    if not found:
        print("the seed bug was not found")
        return 1
    print(
        f"median over {len(found)}/{len(hunts)} seeds: {statistics.median(h.fuzz_seconds for h in found):.2f} s "
        f"fuzzing, {statistics.median(h.wall_seconds for h in found):.2f} s wall, "
        f"{statistics.median(h.inputs for h in found):.0f} inputs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
