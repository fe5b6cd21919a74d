"""Decode scenarios near the context limit, valid under a target's scheduler rules."""

from __future__ import annotations

from hypothesis import strategies as st

from allocator_model.allocator import allocator_page_size
from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario, PriorStep
from allocator_model.scheduler import max_committed_len_at_decode_alloc

from .configs import serving_configs
from .lengths import adaptive_steps, near_limit


@st.composite
def decode_scenarios(draw, revision: Revision) -> DecodeScenario:
    cfg = draw(serving_configs(revision.algorithms))
    page = allocator_page_size(cfg)
    dmax = cfg.max_speculative_num_draft_tokens
    bound = max_committed_len_at_decode_alloc(cfg, overlap_drops_finishing=revision.overlap_drops_finishing)
    committed = draw(near_limit(bound, page, dmax))
    num_steps = draw(adaptive_steps(cfg))
    prior = None
    if cfg.spec_on and committed > 1 and draw(st.booleans()):
        prior_steps = draw(adaptive_steps(cfg))
        prior_d = prior_steps + 1 if prior_steps is not None else cfg.speculative_num_draft_tokens
        prior = PriorStep(draw(st.integers(1, min(prior_d, committed - 1))), prior_steps)
    lag = draw(st.integers(0, dmax)) if (cfg.enable_overlap and cfg.spec_on) else 0
    return DecodeScenario(cfg, committed, num_steps, prior, lag)
