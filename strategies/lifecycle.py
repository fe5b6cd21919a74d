"""Strategies for the request lifecycle: small pools several requests share, prompts near the admission limit.

A lifecycle run needs rows that fill up and a KV budget that runs out, so
its configurations keep the drawn algorithm, page and DCP size but take a
short context (still fuzzed modulo the allocator page), two to four rows and
sometimes a KV capacity below what the rows could hold.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from allocator_model import algorithms as algo
from allocator_model.allocator import allocator_page_size
from allocator_model.batch import UNLIMITED_NEW_TOKENS
from allocator_model.config import ServingConfig
from allocator_model.revisions import Revision
from allocator_model.scheduler import max_prompt_len, max_total_len

from .configs import serving_configs
from .lengths import near_limit
from .space import MIN_CONTEXT, context_pages_range

# Context length in tokens (plus up to one allocator page): prompts near it are cheap to prefill.
LIFECYCLE_CONTEXT_SPAN = 512
LIFECYCLE_RUNNING_REQUESTS = (2, 4)


@st.composite
def lifecycle_configs(
    draw: st.DrawFn,
    algorithms: Collection[str] = algo.ALL,
    pins: Mapping[str, Any] | None = None,
    revision: Revision | None = None,
    alloc_pages: Callable[[int], bool] | None = None,
) -> ServingConfig:
    """A valid config with a short context, a few rows, and a KV capacity that may bind.

    ``pins`` (``--pin``) fix fields as in ``run``; a pinned context length,
    row count or capacity is kept instead of the short lifecycle ones.
    ``revision``: draw the kinds of KV pool it builds, as ``run`` does
    (``Revision.pool_algorithm_map``; shrinking to the standard pool), within
    its DCP support, and only what it launches (``Revision.refuses``); None:
    the standard pool.  ``alloc_pages``: the allocator pages the run's
    allocator takes (``Surface.kv_allocator_takes``), the only ones drawn.
    """
    pins = pins or {}
    if revision is None:
        cfg: ServingConfig = draw(serving_configs(algorithms, pins, alloc_pages=alloc_pages))
    else:
        pools = {k: set(runs) & set(algorithms) for k, runs in revision.pool_algorithm_map().items()}
        cfg = draw(
            serving_configs(
                algorithms,
                pins,
                pools,
                dcp=revision.dcp,
                hisparse_adaptive=revision.hisparse_adaptive,
                alloc_pages=alloc_pages,
            )
        )
        if revision.refuses(cfg) is not None:
            reject()  # unified memory with DCP where the release refuses it, or a pinned clash
    page = allocator_page_size(cfg)
    lo, _ = context_pages_range(page)
    context_len = draw(st.integers(lo, max(lo, LIFECYCLE_CONTEXT_SPAN // page))) * page + draw(st.integers(0, page - 1))
    rows = draw(st.integers(*LIFECYCLE_RUNNING_REQUESTS))
    low = max(MIN_CONTEXT, context_len // 2, 2 * page)
    capacity = draw(st.one_of(st.none(), st.integers(low, max(low, rows * (context_len + page)))))
    chosen = {"context_len": context_len, "max_running_requests": rows, "max_total_num_tokens": capacity}
    return cfg.replace(**{k: pins.get(k, v) for k, v in chosen.items()})


def prompt_lens(cfg: ServingConfig) -> st.SearchStrategy[int]:
    """Prompt lengths: just under the scheduler's prompt limit (shrinking to it), or anywhere up to the total limit.

    Past ``max_prompt_len`` (min(C, capacity) - 7) SGLang aborts the prompt; the outputs carry a request on
    from there to the committed-length bound.
    """
    limit = max(1, max_prompt_len(cfg))
    return st.one_of(
        near_limit(limit, allocator_page_size(cfg), cfg.max_speculative_num_draft_tokens),
        st.integers(1, max(limit, max_total_len(cfg))),
    )


def max_new_tokens_requests(cfg: ServingConfig) -> st.SearchStrategy[int]:
    """What a client asks for: nothing (the clamp decides) or a few pages and draft blocks."""
    short = 2 * (allocator_page_size(cfg) + (cfg.max_speculative_num_draft_tokens or 1)) + 8
    return st.one_of(st.just(UNLIMITED_NEW_TOKENS), st.integers(1, short))


def prefill_chunks(cfg: ServingConfig) -> st.SearchStrategy[int | None]:
    """A chunked-prefill chunk: None (the whole rest) or any length up to the context."""
    return st.one_of(st.none(), st.integers(1, cfg.context_len))
