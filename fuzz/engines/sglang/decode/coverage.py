"""Regime coverage before search: a deterministic covering set of decode scenarios, one per regime cell.

Sampling alone can miss a whole regime at a few hundred examples (0.5.22's
page-1 gap went unseen by the ``ci`` profile).  So every campaign first runs
this set, then Hypothesis searches.  The cells:

    every kind of KV pool the target's release builds (``allocator_model.pools``)
  x every algorithm the kind runs (and no speculation)
  x allocator page class: page > 1 and DCP > 1; page 1 and DCP > 1; page > 1 and DCP 1; page 1
  x topk 1 / topk > 1 (where the algorithm takes a tree) / adaptive (launch below the largest candidate)
  x overlap off / on

Each cell uses SGLang's own defaults where it has them (the algorithm's auto
(S, K, D), the default adaptive candidate steps, page sizes backends force),
so a finding here is already the case an SGLang developer would write.  Each
is placed where the closed form says a write is worst (``allocator_model
.closed_form``): kv_committed_len at the scheduler's bound, and the residue of
the context length modulo the allocator page at which rounding adds P - 1;
plus, for the draft footprint, the device lag of one accept run at the page
offsets where the footprint can outgrow the allocation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from allocator_model import algorithms as algo
from allocator_model.allocator import allocator_page_size
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.decode import decode_reserve
from allocator_model.pools import KVPool
from allocator_model.scenario import DecodeScenario, scenario_problem
from allocator_model.scheduler import decode_alloc_bound
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.targets.base import TargetCallError

# (page_size, attn_dcp_size): the seed bug's deployment first (page 64, DCP 8), page 1 (SGLang's default) last.
PAGE_CLASSES: tuple[tuple[int, int], ...] = ((64, 8), (16, 2), (1, 8), (1, 2), (64, 1), (16, 1), (1, 1))
# The other kinds of pool: one page class per allocator page class (DCP > 1 is where their page differs).
OTHER_POOL_PAGE_CLASSES: tuple[tuple[int, int], ...] = ((64, 8), (1, 2), (64, 1), (1, 1))
# Context lengths: a few hundred tokens, at least two allocator pages.  Only the residue modulo
# the page matters (closed_form, fact 3); short rows keep each check cheap.
CONTEXT_TOKENS = 256


@dataclass(frozen=True)
class Shape:
    """A speculative launch shape of a cell: SGLang argument names, or none for speculation off."""

    label: str
    args: dict[str, Any]


def shapes(algorithm: str | None) -> list[Shape]:
    """SGLang's defaults per algorithm: topk 1, a tree (topk > 1) where it has one, adaptive where it exists."""
    if algorithm is None:
        return [Shape("no spec", {})]
    a = {"speculative_algorithm": algorithm}
    if algorithm in algo.EAGLE_FAMILY:
        out = [
            Shape(
                "topk 1 (3,1,4)",
                {**a, "speculative_num_steps": 3, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4},
            ),
            Shape(
                "tree (5,4,8)",
                {**a, "speculative_num_steps": 5, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8},
            ),
        ]
        if algorithm in algo.ADAPTIVE:
            out.append(Shape("adaptive", {**a, "speculative_adaptive": True}))  # launch: the middle candidate
        return out
    if algorithm == algo.NGRAM:
        return [Shape("defaults (K 10, D 12)", a)]
    if algorithm == algo.DFLASH:
        return [Shape("block 16", a)]
    if algorithm == algo.DSPARK:
        return [Shape("gamma 16", {**a, "speculative_num_draft_tokens": 17})]
    return [
        Shape("Q 8", {**a, "speculative_num_steps": 3, "speculative_num_draft_tokens": 8}),
        Shape(
            "Q 8 topk 4",
            {**a, "speculative_num_steps": 3, "speculative_eagle_topk": 4, "speculative_num_draft_tokens": 8},
        ),
    ]


def _config(args: dict[str, Any]) -> ServingConfig | None:
    try:
        return ServingConfig.resolve(**args)
    except ConfigError:
        return None  # e.g. UNO under DCP: not a deployment SGLang accepts


def _contradicts(cfg: ServingConfig, pins: dict[str, Any]) -> bool:
    """Whether the resolved configuration lost a pinned value (SGLang's defaults rule overrode it)."""
    d = cfg.to_dict()
    for name, value in pins.items():
        if name == "speculative_algorithm":
            value = algo.normalize(value)
        elif name == "speculative_adaptive_candidate_steps" and value is not None:
            value = sorted(set(value))
        if name in d and d[name] != value:
            return True
    return False


def _worst_context_len(cfg: ServingConfig, target: SGLangTarget, reserve: int, page: int) -> int:
    """A short context length at which c = the bound has (c + reserve) mod page == 1 (rounding adds P - 1)."""
    bound = decode_alloc_bound(cfg, target.revision)
    gap = cfg.context_len - bound
    residue = (1 - reserve + gap) % page
    return max(2, -(-CONTEXT_TOKENS // page)) * page + residue


def _scenarios(target: SGLangTarget, cfg: ServingConfig, fixed_context: bool) -> Iterator[DecodeScenario]:
    """The worst write and the worst draft footprints of one configuration, for every run-time shape."""
    page = allocator_page_size(cfg)
    adaptive = cfg.speculative_adaptive
    for rt in cfg.runtimes():
        steps = rt.num_steps if (adaptive and rt is not None) else None
        try:
            reserve = decode_reserve(cfg, rt, target.sizing)
        except TargetCallError:
            reserve = 0  # the campaign reports the raising function at the first scenario
        at = cfg if fixed_context else cfg.replace(context_len=_worst_context_len(cfg, target, reserve, page))
        bound = decode_alloc_bound(at, target.revision)
        yield DecodeScenario(at, bound, steps)
        if rt is None:
            continue
        lag = (at.max_speculative_num_draft_tokens or 0) if at.enable_overlap else 0
        x = reserve - lag
        for offset in sorted({0, (page - x % page) % page, page - 1}):
            c = bound - ((bound + lag - offset) % page)  # the device seq_len c + lag sits at page offset ``offset``
            if c >= 1:
                yield DecodeScenario(at, c, steps, None, lag)


def covering_set(target: SGLangTarget, pins: dict[str, Any] | None = None) -> list[DecodeScenario]:
    """Every cell's scenarios that the target's scheduler rules allow, deduplicated, in a fixed order.

    ``pins`` (``--pin``) fix fields in every cell; cells they contradict are left out.
    """
    pins = pins or {}
    out: list[DecodeScenario] = []
    seen: set[DecodeScenario] = set()
    algorithms = [a for a in algo.ALL if a in target.revision.algorithms]
    kinds = [k for k in KVPool if k in target.revision.pools]  # the standard pool first
    cells = [(k, c) for k in kinds for c in (PAGE_CLASSES if k is KVPool.STANDARD else OTHER_POOL_PAGE_CLASSES)]
    for kind, (page_size, dcp) in cells:
        for algorithm in [*algorithms, None]:
            for shape in shapes(algorithm):
                for overlap in (False, True):
                    args = {**shape.args, "page_size": page_size, "attn_dcp_size": dcp, "enable_overlap": overlap}
                    if kind is not KVPool.STANDARD:
                        args["kv_pool"] = kind
                    cfg = _config({"context_len": CONTEXT_TOKENS, **args, **pins})
                    if cfg is None or _contradicts(cfg, pins):
                        continue
                    for s in _scenarios(target, cfg, "context_len" in pins):
                        if s not in seen and scenario_problem(s, target.revision) is None:
                            seen.add(s)
                            out.append(s)
    return out


__all__ = ["covering_set", "PAGE_CLASSES"]
