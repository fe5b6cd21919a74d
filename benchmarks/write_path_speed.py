"""Decode steps per second on SGLang's own write path against the model's, and what the real path costs ``run``.

    python benchmarks/write_path_speed.py [--release 0.5.23] [--scenarios 200] [--no-run]

Both paths run the same decode scenarios (the covering set's cells of the
release: every kind of pool and algorithm, near the limit), one after the
other in this process; SGLang's path twice more, with triton's interpreter
remembering launches and without (``interpreter._launches_remembered``),
alternating, each from an empty memory; then ``run --profile ci`` on the
release, in a fresh interpreter, once with the write path and once with
``--write-path model`` (``--no-run``: not).
Figures are measured in this run (this machine is noisy: compare the ratios).
Needs the release's wheel in the cache and triton.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from allocator_model.scenario import run_scenario  # noqa: E402
from fuzz.engines.sglang.decode.coverage import covering_set  # noqa: E402
from fuzz.engines.sglang.own_path import has_sglang_path, on_sglang  # noqa: E402
from fuzz.targets.base import resolve_target  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--release", default="0.5.23")
    p.add_argument("--scenarios", type=int, default=200)
    p.add_argument("--no-run", action="store_true", help="skip the two run --profile ci campaigns")
    args = p.parse_args()
    spec = f"sglang=={args.release}"
    target = resolve_target(spec)
    if not has_sglang_path(target):
        raise SystemExit(f"{spec} has no SGLang write path here: {'; '.join(target.sizing.modeled())}")
    started = time.perf_counter()
    on_sglang(target, next(iter(covering_set(target))))  # the release's modules loaded (once per process)
    load = time.perf_counter() - started
    cells = list(itertools.islice(covering_set(target), 0, None, max(1, len(covering_set(target)) // args.scenarios)))
    t0 = time.perf_counter()
    model_steps = sum(len(run_scenario(s, target.sizing, target.revision).writes) for s in cells)
    model_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    real_steps = sum(len(on_sglang(target, s).run.writes) for s in cells)
    real_s = time.perf_counter() - t0
    print(f"{spec}: {len(cells)} scenarios; loading the write path {load:.2f} s")
    print(f"  model:            {model_steps} decode steps in {model_s:.2f} s = {model_steps / model_s:,.0f} steps/s")
    print(f"  SGLang's own path: {real_steps} decode steps in {real_s:.2f} s = {real_steps / real_s:,.0f} steps/s")
    print(f"  ratio: the model is {(model_steps / model_s) / (real_steps / real_s):.1f}x faster per step")
    remembered_launches(target, cells)
    for mode in () if args.no_run else ("auto", "model"):
        with tempfile.TemporaryDirectory() as d:
            argv = [sys.executable, "-m", "fuzz", "run", "--target", spec, "--profile", "ci", "--quiet"]
            argv += ["--write-path", mode, "--json", os.path.join(d, "r.json"), "--cases", os.path.join(d, "c")]
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=False)
            wall = time.perf_counter() - t0
            (entry,) = json.load(open(os.path.join(d, "r.json")))["targets"]
        sglang = entry.get("sglang_seconds", 0.0)
        print(
            f"  run --profile ci --write-path {mode}: {wall:.1f} s wall, campaign {entry['seconds']:.1f} s "
            f"({entry['examples']} examples; {sglang:.1f} s of it on SGLang's path, "
            f"{entry.get('sglang_decode_steps', 0)} steps), {len(entry['findings'])} groups"
        )


def remembered_launches(target, cells) -> None:  # noqa: ANN001
    """SGLang's path over ``cells`` with remembered launches and without, alternating, process CPU time."""
    from triton.runtime import interpreter

    remembered = interpreter.GridExecutor.__call__
    launches = remembered.launches
    times: dict[str, list[float]] = {"remembered": [], "every launch run": []}
    for _ in range(2):
        for mode, call in (("every launch run", remembered.unremembered), ("remembered", remembered)):
            launches.forget()
            interpreter.GridExecutor.__call__ = call
            t0 = time.process_time()
            for s in cells:
                on_sglang(target, s)
            times[mode].append(time.process_time() - t0)
            if mode == "remembered":
                hits, runs = launches.hits, launches.runs
    interpreter.GridExecutor.__call__ = remembered
    best = {m: min(t) for m, t in times.items()}
    print(
        f"  launches remembered: {hits} of {hits + runs} in one pass; CPU "
        + ", ".join(f"{m} {'/'.join(f'{x:.2f}' for x in t)} s" for m, t in times.items())
        + f"; ratio (best of 2) {best['every launch run'] / best['remembered']:.2f}x"
    )


if __name__ == "__main__":
    main()
