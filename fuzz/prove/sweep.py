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

Two ways to get the sizing numbers:
  * model targets: the revision's formulas, vectorized (no Python per configuration);
  * any other target: its sizing functions, called once per distinct point
    (``calls``); everything after is vectorized.  That is too many calls for
    the full space (about 12 million launch configurations), so these
    targets default to the ``small`` space; ``--space full`` widens it.

Assumptions, each checked where it can be: sizing does not depend on the
context length or on overlap (``calls.SIZING_CONTEXT_LEN`` is passed); the
committed-length bound is C minus a constant (``closed_form.committed_gap``);
growth is page-rounded or exact (any other rule is reported as unproven).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection

import torch

from allocator_model import closed_form as cf
from allocator_model.decode import WritePath, eagle_tree_guarded, write_path
from allocator_model.guards import Guard
from allocator_model.pools import KVPool, pool_alloc_page
from allocator_model.revisions import Revision
from fuzz.common.shards import WHOLE, Shard
from fuzz.common.threads import one_torch_thread
from fuzz.findings.kinds import (
    GROWTH_RULE,
    REGIMES,
    SILENT,
    STALE_READ,
    Outcome,
    Property,
    Regime,
    Signature,
    group_name,
    regime_codes,
)
from fuzz.targets.base import Target

from .calls import CountingSizing, called_rows
from .grid import ALL_ALGORITHMS, launch_grid, row_key, shard_mask, target_algorithms
from .progress import SweepProgress
from .result import Group, ProveResult, TraceStats
from .space import SPACES, Space
from .traced_rows import traced_rows
from .witness import Witness, config_witness, draft_witness, witness_finding, write_witness


def prove(
    target: Target,
    space: Space | str = "full",
    *,
    algorithm: str | None = ALL_ALGORITHMS,
    calls: bool | None = None,
    stop_when: Callable[[ProveResult], bool] | None = None,
    on_progress: Callable[[str], None] | None = None,
    kinds: Collection[KVPool] | None = None,
    shard: Shard = WHOLE,
    traced: bool = True,
    device: str = "cpu",
    blocks_part: Shard = WHOLE,
    on_block: Callable[[int], None] | None = None,
) -> ProveResult:
    """Sweep the space on ``target``; ``calls`` (default: not a model target) uses its sizing functions.

    ``device``: where the sweep's tensors live (``cuda`` when torch sees a GPU;
    ``require_device`` checks it first).  The verdict does not depend on it.

    ``traced``: a real target's functions run once per path over each block
    (``traced_rows``); False calls them once per configuration (the plain
    program the traced one is held equal to).

    ``kinds``: only these kinds of KV pool (default: every kind the target's release builds).
    ``shard``: only that shard's launch configurations (``grid.shard_mask``); the shards' sweeps partition it.
    ``blocks_part``: only the blocks it takes (block i when ``blocks_part.takes(i)``): how ``--jobs`` splits a
    sweep between worker processes, each block (and its sizing calls) swept by one of them.
    ``on_block``: told the launch configurations of each block this sweep took, as it finishes (a
    ``--jobs`` worker's progress, sent to the parent).

    ``on_progress`` gets a line at the start and then every two seconds or
    so, with the time left (``progress.SweepProgress``).

    One torch thread: the tensors are large enough that a second thread
    would help on an idle machine, but its spin-waits make the sweep several
    times slower on a shared one (a CI runner, parallel test workers).
    """
    # A device context intercepts every torch call (a TorchFunctionMode): only when the sweep leaves the CPU.
    with one_torch_thread(), torch.device(device) if device != "cpu" else contextlib.nullcontext():
        return _prove(
            target,
            SPACES[space] if isinstance(space, str) else space,
            algorithm,
            not target.is_model if calls is None else calls,
            stop_when,
            on_progress,
            kinds,
            shard,
            traced,
            blocks_part,
            on_block,
        )


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
    target: Target, space: Space, algorithms: list[str | None], kinds: Collection[KVPool] | None = None
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


def launched(target: Target, space: Space, block: Block, number: int, shard: Shard) -> cf.LaunchGrid:
    """Block number ``number``'s launch configurations that the target's release launches, of ``shard``."""
    kind, a, page_size = block
    g = launch_grid(space, a, page_size, kv_pool=kind)
    g = g.select(target.revision.launch_mask(g))  # what this release launches (``Revision.refuses``)
    return g if shard == WHOLE else g.select(shard_mask(g, shard, number))


def _start_progress(
    target: Target,
    space: Space,
    todo: list[Block],
    calls: bool,
    on_line: Callable[[str], None],
    shard: Shard,
    how: str,
) -> SweepProgress:
    """The sweep's progress, announced (``how``: the method); a sweep calling once per configuration
    counts its launch configurations first (for the time left)."""
    progress = SweepProgress(target.spec, len(todo), on_line)
    kinds = len({k for k, _, _ in todo})
    algorithms = len({a for _, a, _ in todo})
    progress.say(
        f"space {space.name}, {kinds} kind(s) of pool x {algorithms} algorithm(s) x {len(space.page_sizes)} "
        f"page sizes ({how})"
    )
    if calls:
        total = 0
        for i, block in enumerate(todo, 1):
            total += len(launched(target, space, block, i - 1, shard))
            progress.counting(i)
        progress.configs_total = total
        progress.started = progress.clock()  # the pace of the calls, not of the count
        progress.say(f"{total:,} launch configurations to call")
    return progress


def _prove(
    target: Target,
    space: Space,
    algorithm: str | None,
    calls: bool,
    stop_when: Callable[[ProveResult], bool] | None,
    on_progress: Callable[[str], None] | None = None,
    kinds: Collection[KVPool] | None = None,
    shard: Shard = WHOLE,
    traced: bool = True,
    blocks_part: Shard = WHOLE,
    on_block: Callable[[int], None] | None = None,
) -> ProveResult:
    traced = traced and calls and target.sizing.plain() is not None
    method = "sizing calls, once per path of each block" if traced else "sizing calls per configuration"
    result = ProveResult(target.spec, space, method if calls else "vectorized model")
    if traced:
        result.trace = TraceStats()
    sizing = CountingSizing(target.sizing)
    t0 = time.monotonic()
    gaps = {(spec, ov): cf.committed_gap(target.revision, ov, spec) for spec in (False, True) for ov in (False, True)}
    todo = blocks(target, space, target_algorithms(target, algorithm), kinds)
    # One call per configuration is slow enough to count them first (for the time left); traced calls are not.
    one_by_one = calls and result.trace is None
    progress = (
        _start_progress(target, space, todo, one_by_one, on_progress, shard, result.method) if on_progress else None
    )
    for number, block in enumerate(todo):
        if not blocks_part.takes(number):
            continue
        g = launched(target, space, block, number, shard)
        if not len(g):
            if progress:
                progress.block_done(0, called=one_by_one)
            if on_block:
                on_block(0)
            continue
        result.launch_configurations += len(g)
        if calls:
            tick = progress.tick if progress else None
            got = traced_rows(target, sizing, g, result.trace) if result.trace else called_rows(target, sizing, g, tick)
            result.first_error = result.first_error or got.first_error
            _record_configs(result, g, got.raised, Property.SIZING_RAISED, got.errors)
            _record_configs(result, g, got.unproven, Property.UNPROVEN)
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

        _record(
            result,
            attributed(regime, counterpart, spilling),
            Property.WRITE_WITHIN_ROW,
            spilling,
            worst,
            offsets,
            write_at,
            write_outcomes(g, rows, revision),
            kv_pool=g.kv_pool,
        )
        _record_heat(result, g, rows, -worst)
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
        _record(
            result,
            attributed(regime, counterpart, drafts),
            Property.DRAFTS_WITHIN_ALLOCATION,
            drafts,
            dworst,
            offsets,
            draft_at,
            torch.full_like(regime, STALE),  # check_drafts_within_allocation: a stale read
            kv_pool=g.kv_pool,
        )
        tail = cf.unaligned_growth(rows, a)
        tails = torch.where(tail, page, 0)
        _record(
            result,
            attributed(regime, counterpart, tails),
            Property.PAGE_ALIGNED_GROWTH,
            tails,
            page - 1,
            offsets,
            write_at,
            kv_pool=g.kv_pool,
        )


# What a write past the row does, as ``write_outcomes`` codes it.
OUTCOMES = (
    SILENT,
    Outcome.stopped_by(Guard.ROW_WIDTH.value),
    Outcome.stopped_by(Guard.UNO_ROW.value),
    Outcome.stopped_by(Guard.EAGLE_TREE_ROW.value),
    STALE_READ,
)
STALE = OUTCOMES.index(STALE_READ)


def write_outcomes(g: cf.LaunchGrid, rows: cf.DecodeRows, revision: Revision) -> torch.Tensor:
    """Per row, the ``OUTCOMES`` index of a write past W: ``decode.row_guard`` for a block, in its order."""
    path = write_path(g.algorithm)
    if path is WritePath.UNO:
        return torch.full_like(rows.config, 2)
    eagle = torch.as_tensor(eagle_tree_guarded(path, rows.alloc_page, g.topk[rows.config]))
    eagle &= revision.eagle_tree_assert
    return torch.where(rows.guarded, 1, torch.where(eagle, 3, 0))


def without_dcp_rows(g: cf.LaunchGrid, rows: cf.DecodeRows) -> torch.Tensor:
    """For each row, the row of the same launch configuration and run-time shape with attn_dcp_size 1 (-1: none).

    The block holds one algorithm at one page size with every DCP size of
    the space, so a configuration's DCP-1 counterpart is a row of it too
    (unless the target raised for it).
    """
    c = rows.config
    keys = row_key(g.num_steps[c], g.topk[c], g.draft_tokens[c], g.candidates[c], rows.num_steps)
    _, key = torch.unique(keys, return_inverse=True)
    single = g.attn_dcp_size[c] == 1
    table = torch.full((int(key.max()) + 1 if len(key) else 0,), -1, dtype=torch.int64)
    table[key[single]] = torch.arange(len(c))[single]
    return table[key]


def attributed(regime: torch.Tensor, counterpart: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """``fuzz.run.engine.attribute`` for a block: a DCP row whose DCP-1 counterpart also breaks the property
    takes the counterpart's regime (``dcp>1`` only when DCP is the cause)."""
    has = counterpart >= 0
    other = counterpart.clamp(min=0)
    moved = has & (regime == REGIMES.index(Regime.DCP)) & (counts[other] > 0)
    return torch.where(moved, regime[other], regime)


def _record(
    result: ProveResult,
    regime: torch.Tensor,
    prop: Property,
    counts: torch.Tensor,
    values: torch.Tensor,
    offsets: torch.Tensor,
    witness: Callable[[int], Witness],
    outcomes: torch.Tensor | None = None,
    *,
    kv_pool: KVPool,
) -> None:
    """Rows with ``counts`` > 0 break ``prop``: count them per group, keep each group's worst as its witness.

    A group is a regime on the block's kind of pool, and an outcome (``outcomes`` indexes
    ``OUTCOMES``; None: every row silent).
    """
    bad = counts > 0
    if not bool(bad.any()):
        return
    outcome = torch.zeros_like(regime) if outcomes is None else outcomes
    # The (regime, outcome) pairs present, as one small code each: a bincount, not a sort of the rows.
    present = torch.bincount((regime[bad] * len(OUTCOMES) + outcome[bad]).long(), minlength=1).nonzero().flatten()
    pairs = [divmod(int(k), len(OUTCOMES)) for k in present.tolist()]
    for code, oc in pairs:
        mask = bad & (regime == code) & (outcome == oc)
        sig = Signature(prop, group_name(REGIMES[code].value, kv_pool), OUTCOMES[oc])
        i = int(torch.argmax(torch.where(mask, values, torch.iinfo(cf.INT).min)))
        value = int(values[i])
        grp = result.groups.get(sig)
        if grp is None:
            first_at = int(offsets[mask.nonzero()[0, 0]])
            grp = Group(
                sig, witness_finding(result.target, sig, witness(i), value, first_at), worst=value, first_at=first_at
            )
            result.groups[sig] = grp
        elif grp.worst is None or value > grp.worst:
            grp.worst = value
            grp.witness = witness_finding(result.target, sig, witness(i), value, grp.first_at or 0)
        grp.configurations += int(counts[mask].sum())


def _record_heat(result: ProveResult, g: cf.LaunchGrid, rows: cf.DecodeRows, slack: torch.Tensor) -> None:
    """The min slack of the block per attn_dcp_size, into ``result.heat`` at (page_size, attn_dcp_size)."""
    dcp = g.attn_dcp_size[rows.config].long()  # an index
    top = torch.iinfo(cf.INT).max
    low = torch.full((int(dcp.max()) + 1,), top, dtype=cf.INT).scatter_reduce(0, dcp, slack, "amin")
    p = int(g.page_size[0])
    for d in (low < top).nonzero().flatten().tolist():
        v = int(low[d])
        result.heat[p, d] = min(v, result.heat.get((p, d), v))


def _record_configs(
    result: ProveResult, g: cf.LaunchGrid, which: torch.Tensor, prop: Property, errors: dict[int, str] | None = None
) -> None:
    """Whole configurations (every residue, overlap on and off) in one group: raised (per regime), or unproven."""
    if not bool(which.any()):
        return
    i = which.nonzero().flatten()
    page = pool_alloc_page(g.kv_pool, g.page_size[i], g.attn_dcp_size[i])
    regime = regime_codes(g, i, page)
    for code in torch.unique(regime).tolist():
        m = regime == code
        sig = Signature(prop, REGIMES[code].value if prop is Property.SIZING_RAISED else GROWTH_RULE)
        count = 2 * int(page[m].sum())
        result.configurations += count
        grp = result.groups.get(sig)
        if grp is None:
            k = int(i[m.nonzero()[0, 0]])
            error = (errors or {}).get(k)
            grp = Group(sig, witness_finding(result.target, sig, config_witness(g, k, int(page[m][0])), 0, error=error))
            result.groups[sig] = grp
        grp.configurations += count
