"""Configurations per second of ``prove``: the vectorized sweep against a plain Python loop.

    python benchmarks/prove_speed.py [--target reference@sglang-0.5.18] [--loop-stride 20] [--check-space small]

Both go over the same configurations (the full space) and count them the
same way (launch configuration x run-time shape x overlap x every residue
of context_len mod the allocator page).  The loop runs over every
``--loop-stride``-th launch configuration of each block (1: all of them,
about ten minutes) and its rate is per configuration it checked.  First,
on ``--check-space``, both must find the same groups with the same counts.
The loop is the obvious scalar
program: per configuration, ask ``ModelSizing`` for the headroom and the
reserve, then the same closed forms on Python ints (the worst residue, the
three draft offsets through ``decode.draft_extent``), so the ratio is what
vectorizing buys, not what the closed form buys.  Both must find the same
groups with the same counts.  Then the full space, vectorized.  One torch
thread for both (``prove`` pins it).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from allocator_model import closed_form as cf
from allocator_model.allocator import allocator_page_size
from allocator_model.config import ServingConfig
from allocator_model.decode import WritePath, decode_reserve, draft_extent, write_path
from allocator_model.numeric import ceil_to_page
from allocator_model.regimes import regime
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.prove.grid import launch_grid, target_algorithms
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.space import SPACES, Space
from fuzz.engines.sglang.prove.sweep import prove
from fuzz.findings.kinds import Property, Signature
from fuzz.targets.base import Target
from fuzz.targets.resolve import resolve_target


def loop_prove(target: Target, space: Space, stride: int = 1) -> tuple[int, int, Counter[Signature]]:
    """The sweep as a plain Python loop: (launch configurations, configurations, violations per group)."""
    rev, sizing = target.revision, target.sizing
    gaps = {ov: cf.committed_gap(rev, ov) for ov in (False, True)}
    launches, configurations = 0, 0
    groups: Counter[Signature] = Counter()
    for a in target_algorithms(target):
        for page_size in space.page_sizes:
            g = launch_grid(space, a, page_size)
            for i in range(0, len(g), stride):
                launches += 1
                cfg = ServingConfig.resolve(context_len=4096, **g.config_kwargs(i))
                page = allocator_page_size(cfg)
                extra = sizing.req_to_token_extra_context_len(cfg)
                path = write_path(cfg.speculative_algorithm)
                reg = regime(cfg, page).value
                aligned = (
                    rev.page_aligned_growth
                    and path is not WritePath.NON_SPEC
                    and not (path is WritePath.DFLASH and not rev.dflash_page_rounded)
                )
                rounded = aligned and page > 1
                for rt in cfg.runtimes():
                    reserve = decode_reserve(cfg, rt, sizing)
                    for overlap in (False, True):
                        configurations += page
                        worst = reserve + (page - 1 if rounded else 0) - gaps[overlap] - extra
                        spill = min(max(worst, 0), page) if rounded else (page if worst > 0 else 0)
                        if spill:
                            groups[Signature(Property.WRITE_WITHIN_ROW, reg)] += spill
                        if not cfg.spec_on:
                            continue
                        lag = (cfg.max_speculative_num_draft_tokens or 0) if overlap else 0
                        x = reserve - lag
                        base = (lag // page + 2) * page
                        draft = max(
                            draft_extent(cfg, rt, base + d, page)
                            - (ceil_to_page(base + d - lag + reserve, page) if aligned else base + d + x)
                            for d in (0, min(page - x % page, page - 1), page - 1)
                        )
                        if draft > 0:
                            groups[Signature(SGLangProperty.DRAFTS_WITHIN_ALLOCATION, reg)] += page
                        if not aligned and page > 1:
                            groups[Signature(SGLangProperty.PAGE_ALIGNED_GROWTH, reg)] += page
    return launches, configurations, groups


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="reference@sglang-0.5.18")
    p.add_argument("--space", default="full", choices=sorted(SPACES), help="the space both are timed on")
    p.add_argument("--loop-stride", type=int, default=20, help="the loop checks every N-th launch configuration")
    p.add_argument("--check-space", default="small", choices=sorted(SPACES), help="where both must agree exactly")
    args = p.parse_args(argv)
    target = resolve_target(args.target)
    print(f"target {target.spec}", flush=True)

    check = SPACES[args.check_space]
    _, n, loop_groups = loop_prove(target, check)
    fast = prove(target, request(target, check))
    same = n == fast.configurations and loop_groups == Counter({s: g.configurations for s, g in fast.groups.items()})
    print(
        f"{check.name} space, loop and vectorized: {'same' if same else 'DIFFERENT'} configurations and groups "
        f"({n:,} configurations, {sum(loop_groups.values()):,} violations in {len(loop_groups)} groups)",
        flush=True,
    )

    space = SPACES[args.space]
    t0 = time.perf_counter()
    full = prove(target, request(target, space))
    vec_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop_launches, loop_n, _ = loop_prove(target, space, args.loop_stride)
    loop_s = time.perf_counter() - t0
    vec_rate, loop_rate = full.configurations / vec_s, loop_n / loop_s
    print(
        f"{space.name} space: {full.configurations:,} configurations, "
        f"{full.launch_configurations:,} launch configurations"
    )
    print(
        f"vectorized   {vec_s:8.1f}s for all of them     {vec_rate:16,.0f} configurations/s "
        f"({full.launch_configurations / vec_s:,.0f} launch configurations/s)"
    )
    print(
        f"python loop  {loop_s:8.1f}s for 1 in {args.loop_stride:<4}       {loop_rate:16,.0f} configurations/s "
        f"({loop_launches / loop_s:,.0f} launch configurations/s; all of them would take "
        f"{full.configurations / loop_rate / 60:.0f} min)"
    )
    ratio = vec_rate / loop_rate
    print(f"speed-up: {ratio:.0f}x (target >= 50x: {'met' if ratio >= 50 else 'NOT met'})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
