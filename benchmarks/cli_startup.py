"""Start-up time of the command line: ``--help``, ``run --help`` (light) and ``targets`` (imports torch).

    python benchmarks/cli_startup.py [--repeat 3]

Each figure is the best of ``--repeat`` wall times of ``python -m fuzz ...``
run as a fresh interpreter from the repository root (what a user waits for).
A command's ``--help`` and its usage errors import no torch, numpy or
Hypothesis (``tests/test_cli.py`` checks that, not the time); ``targets``
imports the model, and so torch: the ratio ``run --help`` / ``targets`` is
what the light parsers save (aim: well under 1).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = (["--help"], ["run", "--help"], ["targets"])


def best_seconds(argv: list[str], repeat: int) -> float:
    """The best wall time of ``python -m fuzz *argv`` over ``repeat`` runs (each must exit 0)."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fuzz", *argv], cwd=ROOT, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per command; the best is kept (default 3)")
    args = ap.parse_args(argv)
    seconds = {" ".join(c): best_seconds(c, max(1, args.repeat)) for c in COMMANDS}
    for command, s in seconds.items():
        print(f"python -m fuzz {command:<12} {s:6.3f}s (best of {args.repeat})")
    print(f"ratio run --help / targets: {seconds['run --help'] / seconds['targets']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
