"""``prove()``: every configuration of a bounded space, checked in closed form; the groups and the heat it records.

Sampling finds bugs; it cannot say there are none.  The sizing arithmetic
is small enough to check completely: for every valid launch configuration
of the space (every algorithm, page size, DCP size, (S, K, D), adaptive
candidate set), every run-time shape, overlap on and off, and every residue
of the context length modulo the allocator page, at the longest committed
length a decode allocation can see, ``allocator_model.closed_form`` gives
the worst write end (write-within-row), the worst draft footprint
(drafts-within-allocation) and whether growth is page-aligned
(page-aligned-growth).  Violations are grouped by ``Signature``, the same
groups a fuzz campaign reports; each group keeps its worst configuration as
a witness (``witness``), which ``confirm`` replays on the step-by-step model.

How the sizing numbers are had is the request's method (``request.Method``):
  * model targets: the revision's formulas, vectorized (no Python per configuration);
  * any other target: its sizing functions run once per path over each block
    (traced, ``traced_rows``), or called once per configuration
    (``--one-by-one``, ``calls``); everything after is vectorized.  Every
    target defaults to the full space; ``--one-by-one`` defaults to ``small``.

Assumptions, each checked where it can be: sizing does not depend on the
context length or on overlap (``calls.SIZING_CONTEXT_LEN`` is passed); the
committed-length bound is C minus a constant (``closed_form.committed_gap``);
growth is page-rounded or exact (any other rule is reported as unproven).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Collection
from typing import Any

import torch

from allocator_model import closed_form as cf
from allocator_model.pools import KVPool
from allocator_model.regimes import regime_codes
from allocator_model.revisions import Revision
from fuzz.common.shards import WHOLE, Shard
from fuzz.common.threads import one_torch_thread
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property
from fuzz.prove.progress import SweepProgress

from .calls import CountingSizing, called_rows
from .grid import launch_grid, shard_mask, target_algorithms
from .record import STALE, attributed, record, record_configs, record_heat, without_dcp_rows
from .request import Method, ProveRequest, request
from .result import ProveResult, TraceStats
from .space import Space
from .traced_rows import traced_rows
from .witness import Witness, draft_witness, write_witness


def prove(
    target: SGLangTarget,
    request: ProveRequest,
    *,
    stop_when: Callable[[ProveResult], bool] | None = None,
    on_progress: Callable[[str], None] | None = None,
    on_block: Callable[[int], None] | None = None,
) -> ProveResult:
    """Sweep ``request``'s space on ``target`` by its method (``request.Method``).

    ``on_progress`` gets a line at the start and then every two seconds or
    so, with the time left (``progress.SweepProgress``); ``on_block`` the
    launch configurations of each block this sweep took, as it finishes (a
    ``--jobs`` worker's progress, sent to the parent); ``stop_when`` ends
    the sweep early once it holds for the result.

    One torch thread: the tensors are large enough that a second thread
    would help on an idle machine, but its spin-waits make the sweep several
    times slower on a shared one (a CI runner, parallel test workers).
    """
    device = request.device
    # A device context intercepts every torch call (a TorchFunctionMode): only when the sweep leaves the CPU.
    with one_torch_thread(), torch.device(device) if device != "cpu" else contextlib.nullcontext():
        return _prove(target, request, stop_when, on_progress, on_block)


Block = tuple[KVPool, str | None, int]  # one kind of pool, one algorithm, one page size


def require_device(device: str) -> str:
    """``device`` if torch can put the sweep there; ValueError (one line) if not."""
    if device == "cpu":
        return device
    if device.split(":")[0] != "cuda":
        raise ValueError(f"--device takes cpu or cuda[:N], got {device!r}")
    if not torch.cuda.is_available():
        raise ValueError(f"--device {device}: torch {torch.__version__} sees no CUDA device here")
    torch.empty(0, device=device)  # an index past the devices raises here, before the sweep
    return device


def blocks(
    target: SGLangTarget, space: Space, algorithms: list[str | None], kinds: Collection[KVPool] | None = None
) -> list[Block]:
    """The sweep's blocks: every kind of pool the target's revision builds (or ``kinds``), with its algorithms."""
    rev = target.revision
    return [
        (kind, a, p)
        for kind in KVPool
        if kind in rev.pools and (kinds is None or kind in kinds)
        for a in algorithms
        if a is None or a in rev.pool_algorithms(kind)
        for p in space.page_sizes
    ]


def launched(
    target: SGLangTarget, space: Space, block: Block, number: int, shard: Shard, base: cf.LaunchGrid | None = None
) -> cf.LaunchGrid:
    """Block number ``number``'s launch configurations that the target's release launches, of ``shard``.

    ``base``: the block's algorithm and page size as ``launch_grid(..., valid_only=False)`` builds them, for
    every kind of pool (what ``block_sizes`` builds once); else built here."""
    kind, a, page_size = block
    g = launch_grid(space, a, page_size, valid_only=False) if base is None else base
    g = dataclasses.replace(g, kv_pool=kind)
    # The kind's valid configurations that this release launches (``Revision.refuses``), in the grid's order.
    g = g.select(cf.valid_mask(g) & target.revision.launch_mask(g))
    return g if shard == WHOLE else g.select(shard_mask(g, shard, number))


def block_sizes(target: SGLangTarget, space: Space, todo: list[Block], numbers: list[int], shard: Shard) -> list[int]:
    """The launch configurations of each block of ``todo`` (numbered ``numbers`` in the sweep), counted without
    sweeping: one grid per algorithm and page size, each kind of pool's masks over it."""
    by_grid: dict[tuple[str | None, int], list[int]] = {}
    for i, (_, a, page_size) in enumerate(todo):
        by_grid.setdefault((a, page_size), []).append(i)
    sizes = [0] * len(todo)
    for (a, page_size), members in by_grid.items():
        base = launch_grid(space, a, page_size, valid_only=False)
        for i in members:
            sizes[i] = len(launched(target, space, todo[i], numbers[i], shard, base))
    return sizes


def _start_progress(
    target: SGLangTarget,
    space: Space,
    todo: list[Block],
    numbers: list[int],
    calls: bool,
    on_line: Callable[[str], None],
    shard: Shard,
    how: Method,
) -> SweepProgress:
    """The sweep's progress, announced (``how``: the method), each block's launch configurations counted first:
    the time left is what the blocks left hold (``SweepProgress``), paced from the end of the count."""
    progress = SweepProgress(target.spec, len(todo), on_line)
    kinds = len({k for k, _, _ in todo})
    algorithms = len({a for _, a, _ in todo})
    progress.say(
        f"space {space.name}, {kinds} kind(s) of pool x {algorithms} algorithm(s) x {len(space.page_sizes)} "
        f"page sizes ({how.value})"
    )
    progress.sizes = block_sizes(target, space, todo, numbers, shard)
    total = sum(progress.sizes)
    if calls:
        progress.configs_total = total
        progress.say(f"{total:,} launch configurations to call")
    else:
        progress.say(f"{total:,} launch configurations in {len(todo)} blocks")
    progress.restart_pace()  # the pace of the sweep, not of the count
    return progress


def _prove(
    target: SGLangTarget,
    request: ProveRequest,
    stop_when: Callable[[ProveResult], bool] | None,
    on_progress: Callable[[str], None] | None,
    on_block: Callable[[int], None] | None,
) -> ProveResult:
    space, shard, method = request.space, request.shard, request.method
    result = ProveResult(target.spec, space, method.value)
    if method is Method.TRACED:
        result.trace = TraceStats()
    sizing = CountingSizing(target.sizing)
    t0 = time.monotonic()
    gaps = {(spec, ov): cf.committed_gap(target.revision, ov, spec) for spec in (False, True) for ov in (False, True)}
    every = blocks(target, space, target_algorithms(target, request.algorithm), request.kinds)
    numbers = [n for n in range(len(every)) if request.blocks_part.takes(n)]  # this sweep's share of the blocks
    todo = [every[n] for n in numbers]
    one_by_one = method is Method.CALLS
    progress = None
    if on_progress:
        progress = _start_progress(target, space, todo, numbers, one_by_one, on_progress, shard, method)
    for number, block in zip(numbers, todo, strict=True):
        g = launched(target, space, block, number, shard)
        if not len(g):
            if progress:
                progress.block_done(0, called=one_by_one)
            if on_block:
                on_block(0)
            continue
        result.launch_configurations += len(g)
        if method.calls:
            tick = progress.tick if progress else None
            got = traced_rows(target, sizing, g, result.trace) if result.trace else called_rows(target, sizing, g, tick)
            result.first_error = result.first_error or got.first_error
            record_configs(result, g, got.raised, Property.SIZING_RAISED, got.errors)
            record_configs(result, g, got.unproven, Property.UNPROVEN)
            rows = got.rows
        else:
            rows = cf.model_decode_rows(g, target.revision)
        _sweep_block(result, g, rows, gaps, target.revision)
        if progress:
            progress.block_done(len(g), called=one_by_one)
        if on_block:
            on_block(len(g))
        if stop_when and stop_when(result):
            result.stopped_early = True
            break
    result.sizing_calls = dict(sizing.calls)
    result.seconds = time.monotonic() - t0
    return result


def _sweep_block(
    result: ProveResult,
    g: cf.LaunchGrid,
    rows: cf.DecodeRows,
    gaps: dict[tuple[bool, bool], int],
    revision: Revision,
) -> None:
    if not len(rows):
        return
    a = g.algorithm
    page = rows.alloc_page
    regime = regime_codes(g, rows.config, rows.alloc_page)
    counterpart = without_dcp_rows(g, rows)
    topk = g.topk[rows.config]
    result.decode_shapes += len(rows)
    for overlap in (False, True):
        before = result.configurations
        result.configurations += int(page.sum())
        offsets = before + torch.cumsum(page, 0, dtype=torch.int64) - page  # configurations swept before each row
        gap = gaps[a is not None, overlap]
        worst, spilling = cf.worst_write_overshoot(rows, gap)

        def write_at(i: int, gap: int = gap, overlap: bool = overlap) -> Witness:
            return write_witness(g, rows, i, gap, overlap)

        record(
            result,
            attributed(regime, counterpart, spilling),
            Property.WRITE_WITHIN_ROW,
            spilling,
            worst,
            offsets,
            write_at,
            cf.guard_codes(g, rows, revision),
            kv_pool=g.kv_pool,
        )
        record_heat(result, g, rows, -worst)
        if a is None:
            continue
        lag = g.max_draft_tokens[rows.config] if overlap else torch.zeros_like(page)
        dworst, dcommitted = cf.worst_draft_overshoot(rows, a, topk, lag)

        def draft_at(
            i: int,
            gap: int = gap,
            overlap: bool = overlap,
            dcommitted: torch.Tensor = dcommitted,
            lag: torch.Tensor = lag,
        ) -> Witness:
            return draft_witness(g, rows, i, gap, overlap, int(dcommitted[i]), int(lag[i]))

        drafts = torch.where(dworst > 0, page, 0)
        record(
            result,
            attributed(regime, counterpart, drafts),
            SGLangProperty.DRAFTS_WITHIN_ALLOCATION,
            drafts,
            dworst,
            offsets,
            draft_at,
            torch.full_like(regime, STALE),  # check_drafts_within_allocation: a stale read
            kv_pool=g.kv_pool,
        )
        tail = cf.unaligned_growth(rows, a)
        tails = torch.where(tail, page, 0)
        record(
            result,
            attributed(regime, counterpart, tails),
            SGLangProperty.PAGE_ALIGNED_GROWTH,
            tails,
            page - 1,
            offsets,
            write_at,
            kv_pool=g.kv_pool,
        )


def prove_on(
    target: SGLangTarget,
    space: Space | str = "full",
    *,
    stop_when: Callable[[ProveResult], bool] | None = None,
    on_progress: Callable[[str], None] | None = None,
    on_block: Callable[[int], None] | None = None,
    **choices: Any,
) -> ProveResult:
    """``prove`` of the request ``request.request(target, space, **choices)`` (scripts, benchmarks, tests)."""
    return prove(
        target, request(target, space, **choices), stop_when=stop_when, on_progress=on_progress, on_block=on_block
    )
