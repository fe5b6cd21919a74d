"""The bounded space both samplers walk: Hypothesis (strategies) and uniform random (benchmarks).

The walk is written once, against a ``choose`` object (integers,
sampled_from, booleans, subset, and ``often``: a value Hypothesis takes half
the time while a uniform sampler takes no notice), so the two samplers cover
exactly the same space and every configuration is valid by construction:

- page sizes: every power of two up to 256 and a few others (backends force
  16..128; nothing forbids 3 or 48); DCP sizes up to 16;
- (S, K, D) per algorithm as server_args accepts them, adaptive candidates;
- context lengths C = m * P_a + r, so every residue modulo the allocator page
  is reachable, not only powers of two;
- kv_committed_len near the scheduler's bound (``near_limit``) or anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from allocator_model import algorithms as algo
from allocator_model.allocator import allocator_page_size
from allocator_model.config import (
    UNO_MAX_DRAFT_TOKENS,
    UNO_MAX_TREE_NODES,
    ConfigError,
    ServingConfig,
    chain_draft_tokens,
)
from allocator_model.launch_rules import UNIFIED_DCP_SPEC_PAGES
from allocator_model.pools import KVPool, pool_alloc_page
from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario, PriorStep, batch_runtime, max_device_lag
from allocator_model.scheduler import decode_alloc_bound

__all__ = [
    "PAGE_SIZES",
    "DCP_SIZES",
    "MAX_STEPS",
    "MAX_TOPK",
    "MAX_DRAFT_TOKENS",
    "UNO_MAX_DRAFT_TOKENS",
    "MAX_RUNNING_REQUESTS",
    "CONTEXT_SPAN",
    "MIN_CONTEXT",
    "Chooser",
    "context_pages_range",
    "near_limit_gap_max",
    "spec_args",
    "serving_config",
    "check_pins",
    "batch_steps",
    "decode_scenario",
]

T = TypeVar("T")

PAGE_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 3, 12, 48)
DCP_SIZES = (1, 2, 4, 8, 16, 3, 6)
MAX_STEPS = 16
MAX_TOPK = 16
MAX_DRAFT_TOKENS = 64
# UNO's own limits (Q <= 128 draft slots, Q * K <= 2048 tree nodes) are server_args', from allocator_model.config.
MAX_RUNNING_REQUESTS = (2, 8)
# Context lengths stay below this many tokens (plus up to one allocator page):
# long enough for every regime, small enough for a real tensor per example.
CONTEXT_SPAN = 1 << 15
MIN_CONTEXT = 8


class Chooser(Protocol):
    """How the walk draws: Hypothesis' ``draw`` (``strategies.configs.DrawChooser``) or ``random`` (``uniform``)."""

    def integers(self, lo: int, hi: int) -> int: ...

    def sampled_from(self, values: Iterable[T]) -> T: ...

    def booleans(self) -> bool: ...

    def often(self, value: T, values: Iterable[T]) -> T:
        """``value`` half the time under Hypothesis (a uniform sampler takes no notice), else one of ``values``."""
        ...

    def subset(self, values: Iterable[int], min_size: int, max_size: int) -> tuple[int, ...]: ...


def context_pages_range(alloc_page: int) -> tuple[int, int]:
    """The range of m in C = m * P_a + r."""
    lo = max(1, -(-MIN_CONTEXT // alloc_page))
    return lo, max(lo, CONTEXT_SPAN // alloc_page)


def near_limit_gap_max(bound: int, alloc_page: int, max_draft_tokens: int | None) -> int:
    """How far below the committed-length bound lengths are drawn: about one allocator page.

    The write end ceil_P(c + R) never decreases with c, so the worst write is
    at the bound itself; a gap of up to a page (plus one draft block) still
    visits every page offset of c for the tree layout and the alignment checks.
    """
    return max(0, min(bound - 1, alloc_page + (max_draft_tokens or 1)))


def sglang_defaults(choose: Chooser) -> bool:
    """Whether to take SGLang's own values for a group of arguments: half the time, and what shrinking prefers.

    So a minimal counterexample keeps the algorithm's auto (S, K, D) and the
    default adaptive candidates wherever the bug allows, instead of
    degenerate values (D = 1, zero steps) an SGLang developer never runs.
    """
    return choose.often(True, (False,))


def spec_args(
    choose: Chooser, algorithm: str | None, *, topk_one: bool = False, adaptive: bool = True
) -> dict[str, Any]:
    """(S, K, D) and adaptive settings that server_args accepts for ``algorithm`` (SGLang's defaults first).

    ``topk_one``: the deployment takes topk 1 only (unified memory, HiSparse); ``adaptive`` False: it refuses
    adaptive speculation (HiSparse from 0.5.22).
    """
    if algorithm is None:
        return {}
    max_topk = 1 if topk_one else MAX_TOPK
    args: dict[str, Any] = {"speculative_algorithm": algorithm}
    s: int | None
    if algorithm in algo.EAGLE_FAMILY:
        if algorithm in algo.ADAPTIVE and adaptive and choose.booleans():
            if sglang_defaults(choose):  # the default candidates; SGLang picks the launch step count
                return {**args, "speculative_adaptive": True}
            cand = choose.subset(range(MAX_STEPS), 1, 5)
            return {
                **args,
                "speculative_adaptive": True,
                "speculative_adaptive_candidate_steps": cand,
                "speculative_num_steps": choose.sampled_from(cand),
                "speculative_eagle_topk": 1,
            }
        if sglang_defaults(choose):
            return args  # the auto (S, K, D): (3, 1, 4)
        s, k = choose.integers(1, MAX_STEPS), choose.integers(1, max_topk)
        d = chain_draft_tokens(s) if k == 1 else choose.integers(1, MAX_DRAFT_TOKENS)
    elif algorithm == algo.DFLASH and sglang_defaults(choose):
        return args  # DFLASH: block 16
    elif algorithm == algo.NGRAM and not topk_one and sglang_defaults(choose):
        return args  # NGRAM: K 10, D 12 (S = D // K)
    elif algorithm == algo.NGRAM:
        s, k, d = None, choose.integers(1, max_topk), choose.integers(1, MAX_DRAFT_TOKENS)  # S = D // K
    elif algorithm == algo.DFLASH:
        s, k, d = 1, 1, choose.integers(1, MAX_DRAFT_TOKENS)
    elif algorithm == algo.DSPARK:
        s, k, d = 1, 1, choose.integers(2, MAX_DRAFT_TOKENS)
    else:  # UNO: Q = D >= S + 1, Q <= 128, Q * K <= 2048; topk 1 is its linear mode, one step
        s = choose.integers(1, MAX_STEPS)
        d = choose.integers(chain_draft_tokens(s), UNO_MAX_DRAFT_TOKENS)
        k = choose.integers(1, min(max_topk, UNO_MAX_TREE_NODES // d))
        s = 1 if k == 1 else s
    return {**args, "speculative_num_steps": s, "speculative_eagle_topk": k, "speculative_num_draft_tokens": d}


def _every_page(page: int) -> bool:
    return True


def serving_config(
    choose: Chooser,
    algorithms: Collection[str] = algo.ALL,
    pins: Mapping[str, Any] | None = None,
    pools: Mapping[KVPool, Collection[str]] | None = None,
    *,
    dcp: bool = True,
    hisparse_adaptive: bool = True,
    topk_one: bool = False,
    alloc_pages: Callable[[int], bool] | None = None,
) -> ServingConfig | None:
    """A valid config; algorithm None first so shrinking prefers no speculation.

    ``pins`` fixes fields (SGLang names) and fuzzes the rest; a pinned field
    that clashes with a drawn one gives None (the caller rejects the draw).
    ``pools``: the kinds of KV pool to draw (``Revision.pool_algorithm_map``),
    each with the algorithms it runs; None: the standard pool only.  The
    standard pool is what the kind shrinks to.  ``dcp`` False: the release
    has no decode context parallelism (``Revision.dcp``), attn_dcp_size is 1; ``hisparse_adaptive`` False: the
    HiSparse pool refuses adaptive speculation (``Revision.hisparse_adaptive``); ``topk_one``: the caller judges
    topk 1 only (a backend that refuses more): every speculative draw takes it.  ``alloc_pages``: the allocator
    pages the caller's allocator runs (``Surface.kv_allocator_takes``; page 1 always): page and DCP size are drawn
    among those whose allocator page it takes, so no draw is discarded for it (None: every page).
    """
    pinned: Mapping[str, Any] = pins or {}

    def pick(name: str, draw: Callable[[], Any]) -> Any:  # the pinned value, else a draw (none spent on pins)
        return pinned[name] if name in pinned else draw()

    algorithm = algo.normalize(
        pick("speculative_algorithm", lambda: choose.sampled_from((None, *(a for a in algo.ALL if a in algorithms))))
    )
    kind = KVPool(pick("kv_pool", lambda: draw_pool(choose, algorithm, pools)))
    # Page 1 (SGLang's default) is the only road to the token allocator (P_a = 1)
    # and its own bug class, so Hypothesis takes it half the time.
    takes = alloc_pages or _every_page
    page = pick("page_size", lambda: choose.often(1, [p for p in PAGE_SIZES if takes(p)]))
    no_dcp = algorithm == algo.UNO or kind.refuses_dcp or not dcp
    unified_spec = kind.unified and algorithm is not None and "page_size" not in pinned

    def pages_at(d: int) -> list[int]:  # the pages a draw at DCP size d may end with
        pages = UNIFIED_DCP_SPEC_PAGES if unified_spec and d > 1 else (page,)
        return [p for p in pages if takes(pool_alloc_page(kind, p, d))]

    dcp = pick("attn_dcp_size", lambda: 1 if no_dcp else choose.sampled_from([d for d in DCP_SIZES if pages_at(d)]))
    if unified_spec and dcp > 1:
        page = choose.sampled_from(pages_at(dcp))  # the only backends unified memory then takes
    alloc_page = pool_alloc_page(kind, page, dcp)  # allocator_page_size of the config being built
    lo, hi = context_pages_range(alloc_page)
    # C fuzzed modulo the allocator page: m whole pages plus any residue.
    context_len = pick("context_len", lambda: choose.integers(lo, hi) * alloc_page + choose.integers(0, alloc_page - 1))
    args: dict[str, Any] = {
        "context_len": context_len,
        "page_size": page,
        "attn_dcp_size": dcp,
        "max_running_requests": pick("max_running_requests", lambda: choose.integers(*MAX_RUNNING_REQUESTS)),
        "enable_overlap": pick("enable_overlap", choose.booleans),
        "kv_pool": kind,
        **spec_args(
            choose,
            algorithm,
            topk_one=topk_one or kind.needs_topk_1,
            adaptive=hisparse_adaptive or kind is not KVPool.HISPARSE,
        ),
    }
    args.update(pinned)
    try:
        return ServingConfig.resolve(**args)
    except ConfigError:
        if pinned:
            return None
        raise


def draw_pool(choose: Chooser, algorithm: str | None, pools: Mapping[KVPool, Collection[str]] | None) -> KVPool:
    """A kind of pool that runs ``algorithm``: the standard one half the time (and when shrinking)."""
    if not pools:
        return KVPool.STANDARD
    kinds = [k for k, runs in pools.items() if algorithm is None or algorithm in runs]
    return choose.often(KVPool.STANDARD, kinds) if kinds else KVPool.STANDARD


def check_pins(pins: Mapping[str, Any]) -> None:
    """Raise ConfigError if the pinned fields are invalid whatever the rest is."""
    probe = {"context_len": 4096, **pins}
    spec_fields = {
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "speculative_adaptive",
    }
    if "speculative_algorithm" not in pins and spec_fields & set(pins):
        probe["speculative_algorithm"] = "EAGLE"  # spec fields need some algorithm to be judged
    if algo.normalize(pins.get("speculative_algorithm")) == algo.UNO and "speculative_num_draft_tokens" not in pins:
        # UNO has no default draft count; the campaign draws one (spec_args), so judge the rest with a valid one.
        steps = pins.get("speculative_num_steps")
        probe["speculative_num_draft_tokens"] = chain_draft_tokens(steps if isinstance(steps, int) else 1)
        probe.setdefault("speculative_num_steps", 1)
    ServingConfig.resolve(**probe)


def batch_steps(choose: Chooser, cfg: ServingConfig) -> int | None:
    """The step count one batch runs with: an adaptive candidate, or None (the launch value)."""
    return choose.sampled_from(cfg.candidate_steps) if cfg.speculative_adaptive else None


def decode_scenario(
    choose: Chooser,
    revision: Revision,
    *,
    near_limit: bool = True,
    pins: Mapping[str, Any] | None = None,
    topk_one: bool = False,
) -> DecodeScenario | None:
    """A request's last decode steps, valid under the revision's scheduler rules (None: pins clash); ``topk_one``:
    speculation at topk 1 only (``serving_config``)."""
    cfg = serving_config(
        choose,
        revision.algorithms,
        pins,
        revision.pool_algorithm_map(),
        dcp=revision.dcp,
        hisparse_adaptive=revision.hisparse_adaptive,
        topk_one=topk_one,
    )
    if cfg is None or revision.refuses(cfg):
        return None  # only reachable through pins
    dmax = cfg.max_speculative_num_draft_tokens
    bound = decode_alloc_bound(cfg, revision)
    if bound < 1 or (cfg.spec_on and cfg.speculative_algorithm not in revision.algorithms):
        return None  # only reachable through pins
    if near_limit:
        # The write end never decreases with c, so half the draws sit at the bound itself.
        committed = bound - choose.often(0, range(near_limit_gap_max(bound, allocator_page_size(cfg), dmax) + 1))
    else:
        committed = choose.integers(1, bound)
    num_steps = batch_steps(choose, cfg)
    prior = None
    if cfg.spec_on and committed > 1 and choose.booleans():
        prior_steps = batch_steps(choose, cfg)
        prior_rt = batch_runtime(cfg, prior_steps)
        assert prior_rt is not None  # speculation is on
        prior = PriorStep(choose.integers(1, min(prior_rt.num_draft_tokens, committed - 1)), prior_steps)
    lag_max = max_device_lag(cfg)
    lag = choose.integers(0, lag_max) if lag_max else 0
    return DecodeScenario(cfg, committed, num_steps, prior, lag)
