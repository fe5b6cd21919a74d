"""Valid serving configurations, built valid by construction (no filtering)."""

from __future__ import annotations

from hypothesis import strategies as st

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig

from .space import DCP_SIZES, MAX_DRAFT_TOKENS, MAX_RUNNING_REQUESTS, MAX_STEPS, MAX_TOPK, PAGE_SIZES, UNO_MAX_DRAFT_TOKENS, context_pages_range

page_sizes = st.sampled_from(PAGE_SIZES)
dcp_sizes = st.sampled_from(DCP_SIZES)
steps = st.integers(1, MAX_STEPS)
topks = st.integers(1, MAX_TOPK)
draft_tokens = st.integers(1, MAX_DRAFT_TOKENS)


@st.composite
def adaptive_candidate_steps(draw) -> tuple[int, ...]:
    return tuple(sorted(draw(st.sets(st.integers(0, MAX_STEPS - 1), min_size=1, max_size=5))))


@st.composite
def spec_args(draw, algorithm: str | None) -> dict:
    """(S, K, D) and adaptive settings that server_args accepts for ``algorithm``."""
    if algorithm is None:
        return {}
    args: dict = {"speculative_algorithm": algorithm}
    if algorithm in algo.EAGLE_FAMILY:
        if algorithm in algo.ADAPTIVE and draw(st.booleans()):
            cand = draw(adaptive_candidate_steps())
            args.update(speculative_adaptive=True, speculative_adaptive_candidate_steps=cand,
                        speculative_num_steps=draw(st.sampled_from(cand)), speculative_eagle_topk=1)
            return args
        s, k = draw(steps), draw(topks)
        d = s + 1 if k == 1 else draw(draft_tokens)
    elif algorithm == algo.NGRAM:
        k, d = draw(topks), draw(draft_tokens)
        s = None  # server_args: S = D // K
    elif algorithm == algo.DFLASH:
        s, k, d = 1, 1, draw(draft_tokens)
    elif algorithm == algo.DSPARK:
        s, k, d = 1, 1, draw(st.integers(2, MAX_DRAFT_TOKENS))
    else:  # UNO: Q = D >= S + 1, Q <= 128, Q * K <= 2048
        s = draw(steps)
        d = draw(st.integers(s + 1, UNO_MAX_DRAFT_TOKENS))
        k = draw(st.integers(1, min(MAX_TOPK, 2048 // d)))
    args.update(speculative_num_steps=s, speculative_eagle_topk=k, speculative_num_draft_tokens=d)
    return args


@st.composite
def serving_configs(draw, algorithms=algo.ALL) -> ServingConfig:
    """A valid config; algorithm None first so shrinking prefers no speculation."""
    algorithm = draw(st.sampled_from((None,) + tuple(a for a in algo.ALL if a in algorithms)))
    page = draw(page_sizes)
    dcp = 1 if algorithm == algo.UNO else draw(dcp_sizes)
    alloc_page = page * dcp
    lo, hi = context_pages_range(alloc_page)
    # C fuzzed modulo the allocator page: m whole pages plus any residue.
    context_len = draw(st.integers(lo, hi)) * alloc_page + draw(st.integers(0, alloc_page - 1))
    return ServingConfig.resolve(
        context_len=context_len,
        page_size=page,
        attn_dcp_size=dcp,
        max_running_requests=draw(st.integers(*MAX_RUNNING_REQUESTS)),
        enable_overlap=draw(st.booleans()),
        **draw(spec_args(algorithm)),
    )
