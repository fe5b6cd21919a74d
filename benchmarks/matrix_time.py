"""How long `python -m fuzz matrix` takes: wall clock, CPU, and each release's share.

The target is under 3 minutes on 2 cores with a warm wheel cache (run it once
first to fill the cache).  CPU seconds are printed beside the wall clock
because a shared machine stretches the wall clock; CPU / cores is what an
idle machine of that many cores would need at least.

    python benchmarks/matrix_time.py [--releases 0.5.16..0.5.23] [any other matrix option]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="matrix-time-") as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "fuzz", "matrix", "--quiet", "--out", out, *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1):
            print(done.stderr.strip(), file=sys.stderr)
            return done.returncode
        report = json.loads(open(os.path.join(out, "matrix.json")).read())
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    load = os.getloadavg()[0]
    print(
        f"matrix over {len(report['targets'])} releases: {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"(CPU / 2 cores = {cpu / 2:.1f} s), load average {load:.1f} at the end, exit {done.returncode}"
    )
    print(f"{'release':<8} {'examples':>8} {'campaign s':>10} {'fidelity s':>10}  groups")
    for r in report["targets"]:  # one entry per release (fuzz.engines.sglang.fidelity.matrix_report.target_entry)
        fid = r["fidelity"]["seconds"] if r["fidelity"] else 0.0
        groups = ", ".join(f["signature"] for f in r["findings"]) or "-"
        print(f"{r['release']:<8} {r['examples']:>8} {r['seconds']:>10.1f} {fid:>10.1f}  {groups}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
