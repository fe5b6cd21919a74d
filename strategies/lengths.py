"""Lengths drawn as "limit minus a small gap": local, and shrinking toward the limit itself."""

from __future__ import annotations

from hypothesis import strategies as st

from allocator_model.config import ServingConfig

from .space import near_limit_gap_max


def near_limit(bound: int, alloc_page: int, max_draft_tokens: int | None) -> st.SearchStrategy[int]:
    """kv_committed_len = bound - gap, gap small (about a page); shrinks to the bound."""
    return st.integers(0, near_limit_gap_max(bound, alloc_page, max_draft_tokens)).map(lambda gap: bound - gap)


def adaptive_steps(cfg: ServingConfig) -> st.SearchStrategy[int | None]:
    """The step count one batch runs with: an adaptive candidate, or None (launch value)."""
    if not cfg.speculative_adaptive:
        return st.none()
    return st.sampled_from(cfg.candidate_steps)


def adaptive_step_sequences(
    cfg: ServingConfig, min_size: int = 1, max_size: int = 8
) -> st.SearchStrategy[list[int | None]]:
    """Step counts of consecutive batches (adaptive up- and downswitches)."""
    return st.lists(adaptive_steps(cfg), min_size=min_size, max_size=max_size)
