"""A uniform random sampler of the same space, for comparison benchmarks only.

Every dimension is drawn uniformly and the committed length uniformly in
[1, bound]: what fuzzing looks like without near-limit strategies.
"""

from __future__ import annotations

import random

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario, PriorStep
from allocator_model.scheduler import max_committed_len_at_decode_alloc

from .space import DCP_SIZES, MAX_DRAFT_TOKENS, MAX_RUNNING_REQUESTS, MAX_STEPS, MAX_TOPK, PAGE_SIZES, UNO_MAX_DRAFT_TOKENS, context_pages_range


def _spec_args(rng: random.Random, a: str | None) -> dict:
    if a is None:
        return {}
    args: dict = {"speculative_algorithm": a}
    if a in algo.EAGLE_FAMILY:
        if a in algo.ADAPTIVE and rng.random() < 0.5:
            cand = tuple(sorted(rng.sample(range(MAX_STEPS), rng.randint(1, 5))))
            return {**args, "speculative_adaptive": True, "speculative_adaptive_candidate_steps": cand,
                    "speculative_num_steps": rng.choice(cand), "speculative_eagle_topk": 1}
        s, k = rng.randint(1, MAX_STEPS), rng.randint(1, MAX_TOPK)
        d = s + 1 if k == 1 else rng.randint(1, MAX_DRAFT_TOKENS)
    elif a == algo.NGRAM:
        s, k, d = None, rng.randint(1, MAX_TOPK), rng.randint(1, MAX_DRAFT_TOKENS)
    elif a == algo.DFLASH:
        s, k, d = 1, 1, rng.randint(1, MAX_DRAFT_TOKENS)
    elif a == algo.DSPARK:
        s, k, d = 1, 1, rng.randint(2, MAX_DRAFT_TOKENS)
    else:
        s = rng.randint(1, MAX_STEPS)
        d = rng.randint(s + 1, UNO_MAX_DRAFT_TOKENS)
        k = rng.randint(1, min(MAX_TOPK, 2048 // d))
    return {**args, "speculative_num_steps": s, "speculative_eagle_topk": k, "speculative_num_draft_tokens": d}


def uniform_scenario(rng: random.Random, revision: Revision) -> DecodeScenario:
    a = rng.choice((None,) + tuple(x for x in algo.ALL if x in revision.algorithms))
    page = rng.choice(PAGE_SIZES)
    dcp = 1 if a == algo.UNO else rng.choice(DCP_SIZES)
    lo, hi = context_pages_range(page * dcp)
    cfg = ServingConfig.resolve(
        context_len=rng.randint(lo, hi) * page * dcp + rng.randrange(page * dcp),
        page_size=page,
        attn_dcp_size=dcp,
        max_running_requests=rng.randint(*MAX_RUNNING_REQUESTS),
        enable_overlap=rng.random() < 0.5,
        **_spec_args(rng, a),
    )
    bound = max_committed_len_at_decode_alloc(cfg, overlap_drops_finishing=revision.overlap_drops_finishing)
    committed = rng.randint(1, bound)
    steps = rng.choice(cfg.speculative_adaptive_candidate_steps) if cfg.speculative_adaptive else None
    prior = None
    if cfg.spec_on and committed > 1 and rng.random() < 0.5:
        ps = rng.choice(cfg.speculative_adaptive_candidate_steps) if cfg.speculative_adaptive else None
        pd = ps + 1 if ps is not None else cfg.speculative_num_draft_tokens
        prior = PriorStep(rng.randint(1, min(pd, committed - 1)), ps)
    lag = rng.randint(0, cfg.max_speculative_num_draft_tokens) if (cfg.enable_overlap and cfg.spec_on) else 0
    return DecodeScenario(cfg, committed, steps, prior, lag)
