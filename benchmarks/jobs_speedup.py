"""Examples per second of ``run --jobs 1`` and ``run --jobs 2`` on the same target, measured in one run.

    python benchmarks/jobs_speedup.py [--target reference] [--max-examples 4000] [--jobs 2]

Each campaign is ``python -m fuzz run --profile ci`` (derandomized, no
example database) called in this process, the project already imported, so
``--jobs 1`` pays no start-up and ``--jobs N`` pays its workers' (each a
spawned interpreter importing torch and the project): examples per second
are the report's examples over the wall time of the whole command.  The
ratio is the figure of issue 13 (aim: at least 1.7 with 2 jobs on 2 idle
cores); on a shared machine it says as much about the neighbours.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time

from fuzz.campaign.driver import load_project_modules
from fuzz.cli import main as fuzz_main


def measure(target: str, max_examples: int, jobs: int, workdir: str) -> tuple[int, float, int]:
    """(examples, wall seconds, exit status) of one ``run`` campaign with ``jobs`` workers."""
    report = os.path.join(workdir, f"jobs{jobs}.json")
    argv = ["run", "--target", target, "--profile", "ci", "--max-examples", str(max_examples), "--jobs", str(jobs)]
    argv += ["--quiet", "--json", report, "--cases", os.path.join(workdir, f"cases{jobs}")]
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()):
        status = fuzz_main(argv)
    seconds = time.monotonic() - started
    with open(report) as f:
        examples = sum(t["examples"] for t in json.load(f)["targets"])
    return examples, seconds, status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--target", default="reference")
    ap.add_argument("--max-examples", type=int, default=4000)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    load_project_modules()
    print(f"cores: {os.cpu_count()}, load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rates = {}
    with tempfile.TemporaryDirectory() as workdir:
        for jobs in (1, args.jobs):
            examples, seconds, status = measure(args.target, args.max_examples, jobs, workdir)
            rates[jobs] = examples / seconds
            print(f"--jobs {jobs}: {examples} examples in {seconds:.1f}s = {rates[jobs]:.0f}/s (exit {status})")
    ratio = rates[args.jobs] / rates[1]
    print(f"speed-up --jobs {args.jobs} / --jobs 1: {ratio:.2f}x (aim >= 1.7 for 2 jobs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
