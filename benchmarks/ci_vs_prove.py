"""Is the ci verdict as strong as the bounded proof? The groups `run --profile ci` and `prove` report, per release.

    python benchmarks/ci_vs_prove.py [--releases 0.5.16..0.5.23] [--space small]

For each release, runs the decode campaign at the ci profile's default
budget (derandomized: the covering set, then Hypothesis) and the bounded
proof on the release's own sizing code, and prints both sets of groups and
whether they are equal.  Exit 1 if any release differs.
"""

from __future__ import annotations

import argparse
import sys
import time

from fuzz.common.profiles import get_profile
from fuzz.fidelity.matrix import parse_releases
from fuzz.prove.request import request
from fuzz.prove.sweep import prove
from fuzz.run.engine import campaign
from fuzz.targets import resolve_target


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--releases", default="0.5.16..0.5.23")
    p.add_argument("--space", default="small")
    args = p.parse_args(argv)
    differ = 0
    for release in parse_releases(args.releases):
        target = resolve_target(f"sglang=={release}")
        t0 = time.monotonic()
        run = campaign(target, get_profile("ci"))
        t1 = time.monotonic()
        proof = prove(target, request(target, args.space))
        t2 = time.monotonic()
        ran = {str(f.signature) for f in run.findings}
        proved = {str(s) for s in proof.groups}
        same = ran == proved
        differ += not same
        print(
            f"{release}: ci {len(ran)} groups in {run.examples} examples, {t1 - t0:.1f}s; prove {len(proved)} "
            f"groups, {t2 - t1:.1f}s: {'same' if same else 'DIFFERENT'}",
            flush=True,
        )
        for sig in sorted(ran | proved):
            print(f"    {sig:<40} ci {'yes' if sig in ran else 'NO ':<4} prove {'yes' if sig in proved else 'NO'}")
    print("every release: the same groups" if not differ else f"{differ} release(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
