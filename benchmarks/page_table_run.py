"""What the backends' page tables cost ``run``: ``run --profile ci`` on a release with them judged, and without.

    python benchmarks/page_table_run.py [--target sglang==0.5.23] [--budget 45]

Both runs are fresh interpreters from the repository root, one after the other on this machine: the run as
shipped (every table: ``req_to_token`` and each backend's page table, SGLang's own builders executed) and the same
run with the page tables' hunts left out (in the benchmark's own process: no option of the tool does that).
Printed: each wall time, their ratio, the shipped run's ratio to the budget (issue 36: <= 45 s on 2 cores), and
per page table what judged it and the groups its report names.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_TABLE = """
import sys
import fuzz.tables.hunt as hunt
hunt.table_hunts = lambda *a, **k: []  # the page tables' hunts left out: req_to_token's alone
from fuzz.cli import main
sys.exit(main(sys.argv[1:]))
"""


def timed(argv: list[str], one_table: bool) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as out:
        report = os.path.join(out, "r.json")
        cmd = [*argv, "--cases", os.path.join(out, "c"), "--json", report, "--quiet"]
        program = ["-c", ONE_TABLE] if one_table else ["-m", "fuzz"]
        started = time.perf_counter()
        subprocess.run([sys.executable, *program, *cmd], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                       capture_output=True, check=False)  # fmt: skip
        seconds = time.perf_counter() - started
        with open(report) as f:
            return seconds, json.load(f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--target", default="sglang==0.5.23")
    ap.add_argument("--budget", type=float, default=45.0, help="seconds the shipped run may take (default 45)")
    args = ap.parse_args(argv)
    run = ["run", "--target", args.target, "--profile", "ci"]
    both, report = timed(run, one_table=False)
    alone, _ = timed(run, one_table=True)
    (t,) = report["targets"]
    print(f"run --profile ci --target {args.target}: {both:.1f}s with the page tables, {alone:.1f}s without")
    print(f"ratio with / without: {both / alone:.2f}; with / budget {args.budget:.0f}s: {both / args.budget:.2f}")
    from fuzz.engines.sglang.backends import GRAPH_TABLES

    for name in sorted(n for n in t["tables"] if n in GRAPH_TABLES):
        found = [f for f in t["findings"] if f["kind"] == "table-case" and f["case"]["table"] == name]
        groups = sorted({f["signature"] for f in found})
        print(f"{name}: {t['tables'][name].get('by')}; {len(groups)} group(s): {groups}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
