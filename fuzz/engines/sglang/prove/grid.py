"""Launch grids: every valid launch configuration of one algorithm at one page size, as tensors.

``launch_grid`` builds the product of the space's dimensions the algorithm
reads (plus the adaptive candidate sets of adaptive algorithms) and masks
out what server_args refuses (``closed_form.valid_mask``);
``target_algorithms`` says which algorithms a target's revision knows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import torch

from allocator_model import algorithms as algo
from allocator_model import closed_form as cf
from allocator_model.pools import KVPool
from fuzz.common.defaults import ALL_ALGORITHMS
from fuzz.common.shards import Shard
from fuzz.engines.sglang.target_type import SGLangTarget

from .space import Space


def target_algorithms(target: SGLangTarget, only: str | None = ALL_ALGORITHMS) -> list[str | None]:
    """The algorithms swept on ``target`` (None: speculation off); ValueError for one it does not know."""
    known: list[str | None] = [None] + [a for a in algo.ALL if a in target.revision.algorithms]
    if only == ALL_ALGORITHMS:
        return known
    if only not in known:
        raise ValueError(
            f"{target.spec} has no speculative algorithm {only} (known: none, {', '.join(a for a in known if a)})"
        )
    return [only]


def product(**dims: Iterable[int]) -> dict[str, torch.Tensor]:
    """Every combination of the named dimensions' values, each dimension flattened to one tensor."""
    names = list(dims)
    axes = [torch.as_tensor(list(dims[n]), dtype=cf.INT) for n in names]
    grids = torch.meshgrid(*axes, indexing="ij")
    return {n: g.flatten() for n, g in zip(names, grids, strict=True)}


def launch_grid(
    space: Space, algorithm: str | None, page_size: int, *, valid_only: bool = True, kv_pool: KVPool = KVPool.STANDARD
) -> cf.LaunchGrid:
    """Every valid launch configuration of ``algorithm`` at one page size on one kind of pool (product, masked)."""
    p, dcp = [page_size], space.dcp_sizes
    a = algorithm
    if a is None:
        t = product(page_size=p, attn_dcp_size=dcp)
        zero = torch.zeros_like(t["page_size"])
        g = cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], zero, zero, zero, zero)
    elif a in algo.EAGLE_FAMILY:
        drafts = sorted(set(space.draft_tokens) | {s + 1 for s in space.steps})  # topk 1 forces D = S + 1
        t = product(page_size=p, attn_dcp_size=dcp, num_steps=space.steps, topk=space.topks, draft_tokens=drafts)
        g = _grid(a, t)
        if a in algo.ADAPTIVE:
            g = concat(g, adaptive_grid(space, a, page_size))
    elif a == algo.NGRAM:
        t = product(page_size=p, attn_dcp_size=dcp, topk=space.topks, draft_tokens=space.draft_tokens)
        steps = t["draft_tokens"] // t["topk"]  # server_args: S = D // K
        g = cf.LaunchGrid(
            a, t["page_size"], t["attn_dcp_size"], steps, t["topk"], t["draft_tokens"], torch.zeros_like(steps)
        )
    elif a in algo.DFLASH_FAMILY:
        t = product(page_size=p, attn_dcp_size=dcp, draft_tokens=space.draft_tokens)
        one = torch.ones_like(t["page_size"])
        g = cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], one, one, t["draft_tokens"], 0 * one)
    else:
        t = product(
            page_size=p, attn_dcp_size=dcp, num_steps=space.steps, topk=space.topks, draft_tokens=space.uno_draft_tokens
        )
        g = _grid(a, t)
    g = dataclasses.replace(g, kv_pool=kv_pool)
    return g.select(cf.valid_mask(g)) if valid_only else g


def _grid(a: str, t: dict[str, torch.Tensor]) -> cf.LaunchGrid:
    """A grid of (page_size, attn_dcp_size, num_steps, topk, draft_tokens) columns, no adaptive candidates."""
    return cf.LaunchGrid(
        a,
        t["page_size"],
        t["attn_dcp_size"],
        t["num_steps"],
        t["topk"],
        t["draft_tokens"],
        torch.zeros_like(t["page_size"]),
    )


def adaptive_grid(space: Space, a: str, page_size: int) -> cf.LaunchGrid:
    """Adaptive launches: every candidate set of the space, each of its members as the launch step count."""
    pairs = [(cf.bitmask(c), s) for c in space.candidate_sets() for s in c]
    masks = torch.tensor([m for m, _ in pairs], dtype=cf.INT)
    steps = torch.tensor([s for _, s in pairs], dtype=cf.INT)
    t = product(page_size=[page_size], attn_dcp_size=space.dcp_sizes, pair=range(len(pairs)))
    s = steps[t["pair"]]
    return cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], s, torch.ones_like(s), s + 1, masks[t["pair"]])


def concat(a: cf.LaunchGrid, b: cf.LaunchGrid) -> cf.LaunchGrid:
    """Two grids of the same algorithm, one after the other."""
    return cf.LaunchGrid(
        a.algorithm,
        *(
            torch.cat([getattr(a, n), getattr(b, n)])
            for n in ("page_size", "attn_dcp_size", "num_steps", "topk", "draft_tokens", "candidates")
        ),
        kv_pool=a.kv_pool,
    )


def shard_mask(g: cf.LaunchGrid, shard: Shard, block: int) -> torch.Tensor:
    """The launch configurations of block number ``block`` that are ``shard``'s.

    Configurations differing only in attn_dcp_size stay together (a DCP
    row's attribution reads its DCP-1 counterpart, ``sweep.without_dcp_rows``):
    the distinct (num_steps, topk, draft_tokens, candidates) of the block,
    in sorted order, are dealt round-robin starting at the block's number, so
    every configuration is in exactly one shard and blocks without speculation
    (one key each) spread over the shards.
    """
    if not len(g):
        return torch.zeros(0, dtype=torch.bool)
    _, rank = torch.unique(row_key(g.num_steps, g.topk, g.draft_tokens, g.candidates), return_inverse=True)
    return (rank + block) % shard.count == shard.offset


def row_key(*columns: torch.Tensor) -> torch.Tensor:
    """One int64 per row that orders rows as their tuples of (non-negative) columns do.

    Mixed radix over each column's own range: ``torch.unique`` of it is the
    unique of the stacked rows (``dim=0``), at a fraction of the cost.
    """
    key = torch.zeros_like(columns[0], dtype=torch.int64)
    for c in columns:
        c = c.to(torch.int64)
        if len(c) and int(c.min()) < 0:
            raise ValueError("row_key takes non-negative columns")
        radix = int(c.max()) + 1 if len(c) else 1
        if int(key.max() if len(key) else 0) >= (1 << 62) // radix:
            raise OverflowError("row_key: the columns' ranges overflow int64")
        key = key * radix + c
    return key


def unique_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``rows.unique(dim=0, return_inverse=True)`` (the same rows, in the same order) through ``row_key``: each
    column shifted to start at 0 keeps the rows' order, and a 1-D unique is many times quicker than ``dim=0``."""
    if len(rows) == 0:
        return rows.unique(dim=0, return_inverse=True)
    key = row_key(*(c - c.min() for c in rows.unbind(dim=1)))
    uniq, inverse = torch.unique(key, return_inverse=True)
    out = torch.empty((len(uniq), rows.shape[1]), dtype=rows.dtype)
    out[inverse] = rows  # rows of one key are equal: any of them is its row
    return out, inverse
