"""Seconds and inputs until the Atheris entry point crashes on the seed bug (0.5.18's ``write-within-row/dcp>1``).

    python benchmarks/atheris_to_crash.py [--target sglang==0.5.18] [--seeds 5] [--engine atheris|bytes]

``atheris``: the real libFuzzer loop, ``python -m fuzz.oss.atheris_entry``
(``-seed=N``, a fresh process each time).  A crash of another group (0.5.18
also has the open page-1 gap, ``write-within-row/alloc-page-1``, which
random inputs meet first about as often) is what a team would mark known:
its signature joins ``KVROW_FUZZ_KNOWN`` and the fuzzer restarts, as one
would run it on ClusterFuzzLite with the open bug listed.  Per seed: the
seconds the fuzz loops ran (first input to crash, summed over restarts, as
the entry point reports them), the wall seconds (process starts, the torch
import and instrumentation included), the inputs and the restarts.
``bytes``: no Atheris; the entry point fed random bytes in this process
(``random.Random(seed)``, up to 4096 bytes each), with the same known-group
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SEED_BUG = "write-within-row/dcp>1"
CRASH_LINE = re.compile(r"^kvrow-fuzz: (\S+) on \S+ after (\d+) inputs, ([0-9.]+)s: saved ", re.MULTILINE)
MAX_RESTARTS = 12


@dataclass
class Hunt:
    """One seed's way to the seed bug: the groups met first (made known), inputs and seconds summed."""

    seed: int
    passed: list[str] = field(default_factory=list)
    inputs: int = 0
    fuzz_seconds: float = 0.0
    wall_seconds: float = 0.0
    found: bool = False


def atheris_once(target: str, known: list[str], seed: int, runs: int, work: str) -> tuple[str | None, int, float]:
    """One libFuzzer process: (the group it crashed on or None, inputs, fuzz-loop seconds)."""
    env = {**os.environ, "PYTHONPATH": ROOT, "KVROW_FUZZ_CASES": os.path.join(work, "cases")}
    argv = [sys.executable, "-m", "fuzz.oss.atheris_entry", f"--kvrow-target={target}"]
    argv += [f"--kvrow-known={','.join(known)}", f"-runs={runs}", f"-seed={seed}", f"-artifact_prefix={work}/"]
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    m = CRASH_LINE.search(proc.stderr)
    if m is None:
        if proc.returncode != 0:
            sys.exit(f"the entry point failed without a finding (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        return None, runs, 0.0
    return m.group(1), int(m.group(2)), float(m.group(3))


def hunt_atheris(target: str, seed: int, runs: int) -> Hunt:
    h = Hunt(seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        for restart in range(MAX_RESTARTS):
            group, inputs, seconds = atheris_once(target, h.passed, seed * 1000 + restart + 1, runs, work)
            h.inputs += inputs
            h.fuzz_seconds += seconds
            if group == SEED_BUG:
                h.found = True
                break
            if group is None:
                break
            h.passed.append(group)
    h.wall_seconds = time.perf_counter() - t0
    return h


def hunt_bytes(target: str, seed: int, runs: int) -> Hunt:
    from fuzz.campaign.driver import FindingRaised
    from fuzz.oss.target import Entry, FuzzConfig, parse_known

    h = Hunt(seed)
    rnd = random.Random(seed)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        while not h.found and h.inputs < runs and len(h.passed) < MAX_RESTARTS:
            entry = Entry(FuzzConfig(target, cases=work, known=parse_known(",".join(h.passed))), quiet=True)
            started = time.perf_counter()
            try:
                while h.inputs < runs:
                    h.inputs += 1
                    entry(rnd.randbytes(rnd.randrange(4097)))
            except FindingRaised as e:
                group = str(e.finding.signature)
                h.found = group == SEED_BUG
                if not h.found:
                    h.passed.append(group)
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
    print(f"engine {engine}, target {args.target}, group {SEED_BUG}; {args.seeds} seeds", flush=True)
    print(f"{'seed':>4} {'fuzz s':>8} {'wall s':>8} {'inputs':>7} {'restarts':>8}  groups made known on the way")
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
