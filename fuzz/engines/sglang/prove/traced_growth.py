"""A real target's growth rule per (reserve, page), traced once over every pair of a block (``traced_rows``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from allocator_model.decode import WritePath, decode_alloc_ends
from allocator_model.numeric import ceil_to_page
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.prove.tracing import TooManyPaths, combine, explore, integer_result, leaf
from fuzz.prove.tracing_run import Run

from .calls import CountingSizing, Growth, Pair, growth_kinds
from .result import TraceStats

GROWTH_SPREAD = 4  # (reserve, page) pairs per block read plainly besides one per path (a whole page per call)


def traced_growth_kinds(
    target: SGLangTarget,
    sizing: CountingSizing,
    path: WritePath,
    pairs: list[Pair],
    *,
    stats: TraceStats | None = None,
    block: str = "",
) -> tuple[list[Growth], dict[int, str]]:
    """``calls.growth_kinds``, the growth rule traced once over every (pair, residue) row.

    Pairs a plain call of this sweep read already come from the sweep's
    memo (``CountingSizing.growth``; only plain reads go in it).  Each other
    row is one fresh request (kv_allocated_len = kv_committed_len = 1024 P +
    r) of one pair; a pair is aligned when every residue grows to max(c,
    ceil_P(c + R)), exact when to max(c, c + R).  A pair some row of which did
    not trace, the first pair of every path and a spread of others are read
    with ``growth_kind`` (one plain call each, a whole page per call); a
    sample that disagrees (counted in ``stats.diverged``), or more paths than
    tracing follows, sends every pair to plain calls.
    """
    # the key made outside the subscript: mypy reads ``memo[(path, *pr)]`` as 3.11's ``memo[path, *pr]``
    keys = [(path, *pr) for pr in pairs]
    known = {j: sizing.growth_memo[key] for j, key in enumerate(keys) if key in sizing.growth_memo}
    todo = [j for j in range(len(pairs)) if j not in known]
    kinds: list[Growth] = [known.get(j, Growth.OTHER) for j in range(len(pairs))]
    if not todo:
        return kinds, {}
    try:
        traced, errors, diverged = _traced_growth(target, sizing, path, [pairs[j] for j in todo])
    except TooManyPaths:
        traced, errors = growth_kinds(target, sizing, path, [pairs[j] for j in todo])
        diverged = False
    if diverged and stats is not None:
        stats.diverged.append(f"{block} growth rule")
    for j, kind in zip(todo, traced, strict=True):
        kinds[j] = kind
    return kinds, {todo[k]: e for k, e in sorted(errors.items())}


def _traced_growth(
    target: SGLangTarget, sizing: CountingSizing, path: WritePath, pairs: list[Pair]
) -> tuple[list[Growth], dict[int, str], bool]:
    """(kinds, errors by pair index, whether the sample disagreed) of ``pairs``, traced (see the caller)."""
    raw = target.sizing.plain()
    assert raw is not None  # a traced sweep is a real target's
    reserve = torch.tensor([r for r, _ in pairs], dtype=torch.int64)
    page = torch.tensor([p for _, p in pairs], dtype=torch.int64)
    pair = torch.repeat_interleave(torch.arange(len(pairs)), page)
    residue = torch.arange(len(pair)) - torch.repeat_interleave(torch.cumsum(page, 0) - page, page)
    committed = 1024 * page[pair] + residue
    r, p = reserve[pair], page[pair]

    def alloc_end(run: Run) -> Any:
        c = leaf(committed, run)
        return decode_alloc_ends(path, [(c, c)], leaf(r, run), leaf(p, run), raw, target.revision)[0]

    paths = explore(alloc_end, torch.ones(len(pair), dtype=torch.bool))
    sizing.count("page_aligned_decode_alloc_lens", len(paths))
    out = combine(paths, len(pair), integer_result)
    aligned_end = torch.maximum(committed, ceil_to_page(committed + r, p))
    exact_end = torch.maximum(committed, committed + r)
    per_pair = torch.zeros(len(pairs), dtype=torch.int64)

    def every(rows: Tensor) -> Tensor:
        return per_pair.scatter_add(0, pair, (~rows).to(torch.int64)) == 0

    traced_ok = every(out.ok)
    kinds = [
        Growth.ALIGNED if a else Growth.EXACT if e else Growth.OTHER
        for a, e in zip(every(out.values == aligned_end).tolist(), every(out.values == exact_end).tolist(), strict=True)
    ]
    firsts = {int(pair[p.mask.nonzero()[0, 0]]) for p in paths if bool(p.mask.any())}
    spread = torch.linspace(0, len(pairs) - 1, min(len(pairs), GROWTH_SPREAD)).long().tolist()
    plainly = sorted(firsts | set(spread) | {j for j in range(len(pairs)) if not traced_ok[j]})
    got, plain_errors = growth_kinds(target, sizing, path, [pairs[j] for j in plainly])  # memoized: plain reads
    if any(traced_ok[j] and kind is not kinds[j] for j, kind in zip(plainly, got, strict=True)):
        kinds, errors = growth_kinds(target, sizing, path, pairs)  # tracing diverged: every pair plainly
        return kinds, errors, True
    for n, j in enumerate(plainly):
        kinds[j] = got[n]
    return kinds, {plainly[n]: e for n, e in plain_errors.items()}, False
