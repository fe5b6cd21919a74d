"""The scheduler rules that bound how long a request can be when decode allocates.

Sizing is only safe relative to these rules; a model that lets
kv_committed_len reach C raises false alarms.  The bound below is derived
from three modeled rules, not asserted:

1. Admission clamps max_new_tokens M so that input_len + M <= min(C, capacity) - 2.
2. The KV holds every token but the last sampled one: kv_committed_len = total_len - 1.
3. A request that has produced M tokens is finished and filtered out before
   the next decode allocation.

In overlap mode the scheduler prepares batch N+1 while batch N runs: it counts
the one token batch N is sure to add before it allocates (the rest of the
accept run is what the 2x reserve absorbs).  Since 0.5.19 it also drops the
requests batch N finishes by length; before, those get one more allocation.
"""

from __future__ import annotations

from .allocator import allocator_page_size
from .config import ServingConfig
from .numeric import ceil_to_page
from .revisions import MemoryClamp, Revision


def max_total_len(cfg: ServingConfig) -> int:
    """Rule 1: the longest input + output a request is admitted with."""
    cap = cfg.kv_capacity()
    limit = cfg.context_len if cap is None else min(cfg.context_len, cap)
    return limit - 2


def memory_clamp_page(cfg: ServingConfig, clamp: MemoryClamp, alloc_page: int | None = None) -> int:
    """The page p of the memory clamp: the allocator's (0.5.21+) or the server's page_size (``MemoryClamp``).

    ``alloc_page``: the allocator's page as the target builds it (default: the model's).
    """
    if clamp is not MemoryClamp.ALLOCATOR_PAGE:
        return cfg.page_size
    return allocator_page_size(cfg) if alloc_page is None else alloc_page


def clamp_max_new_tokens(
    cfg: ServingConfig,
    input_len: int,
    max_new_tokens: int,
    clamp: MemoryClamp = MemoryClamp.ALLOCATOR_PAGE,
    alloc_page: int | None = None,
) -> int:
    """Rule 1 applied to one request (0 when the prompt alone is too long), then the memory clamp.

    ``managers/scheduler.py`` clamps to ``max_req_len - input - 1``
    [cite: scheduler-max-req-len-clamp], then ``mem_cache/allocator/base.py``
    (``max_new_tokens_for_memory``) to ``capacity - ceil_p(input) - p - 1``
    with p the allocator's page (0.5.21+) [cite: allocator-memory-clamp];
    0.5.13-0.5.20 clamp inline in the scheduler with the server's page_size
    (``Revision.memory_clamp``).
    """
    clamped = min(max_new_tokens, max_total_len(cfg) - input_len)
    cap = cfg.kv_capacity()
    if cap is not None:
        page = memory_clamp_page(cfg, clamp, alloc_page)
        clamped = min(clamped, cap - ceil_to_page(input_len, page) - page - 1)
    return max(0, clamped)


def committed_len(total_len: int) -> int:
    """Rule 2: the last sampled token has no KV yet."""
    return total_len - 1


def is_finished(output_len: int, max_new_tokens: int) -> bool:
    """Rule 3: finish by length."""
    return output_len >= max_new_tokens


def allocates_next_batch(output_len: int, max_new_tokens: int, *, overlap: bool, drops_finishing: bool) -> bool:
    """Whether a request with ``output_len`` known tokens joins the next decode allocation.

    Without overlap the known results are final: rule 3.  With overlap one
    batch is in flight and adds at least one token; since 0.5.19 a request
    that it will finish by length is dropped now.
    """
    if is_finished(output_len, max_new_tokens):
        return False
    if overlap and drops_finishing:
        return not is_finished(output_len + 1, max_new_tokens)
    return True


def committed_len_at_alloc(input_len: int, output_len: int, *, overlap: bool, counts_in_flight: bool = False) -> int:
    """kv_committed_len the allocation uses: the honest (stale) one, or with the in-flight token pre-claimed.

    From 0.5.15 on, prepare-for-decode reads ``req.kv.kv_committed_len``,
    which lags the device by the in-flight verify's accepted run in overlap
    mode (``speculative/eagle_utils.py``: "bonus committed in resolve, not
    here ... 2*alloc absorbs" [cite: eagle-decode-honest-committed]);
    0.5.13-0.5.14 pre-claim the bonus token (``eagle_info_v2.py``
    [cite: eagle-v2-preclaims-bonus]): ``counts_in_flight``.
    Non-speculative decode allocates at the batch's ``seq_lens``, which count
    the in-flight token (``mem_cache/allocation.py``
    [cite: decode-default-alloc-at-seq-lens]): it always counts it.
    """
    return committed_len(input_len + output_len + (1 if overlap and counts_in_flight else 0))


def max_committed_len_at_decode_alloc(
    cfg: ServingConfig,
    *,
    overlap_drops_finishing: bool = True,
    counts_in_flight: bool = False,
    clamp: MemoryClamp = MemoryClamp.ALLOCATOR_PAGE,
) -> int:
    """The longest kv_committed_len any decode allocation can see: the three rules, at their limit.

    min(C, capacity) - 4 with the honest committed length (0.5.15+, overlap
    or not: a request with nothing in flight reaches it); min(C, capacity) -
    3 in overlap mode when the in-flight token is pre-claimed and finishing
    requests are kept (0.5.13-0.5.14).
    Derived by running the rules at the longest admissible request rather
    than written as a constant.  ``decode_alloc_bound`` takes a revision's.
    """
    total = max_total_len(cfg)
    counts_in_flight = counts_in_flight or not cfg.spec_on  # non-spec decode allocates at the device's seq_len
    best = -1
    # A one-token prompt, or a page-aligned one (which loses nothing to the memory clamp's rounding).
    for input_len in sorted({1, memory_clamp_page(cfg, clamp)}):
        max_new = clamp_max_new_tokens(cfg, input_len, total, clamp)
        # In overlap mode a request is not always behind an in-flight batch (its first decode after prefill, a
        # drained pipeline): both cases count.  Only the last few outputs can hold the maximum; scan them.
        for in_flight in (False, True) if cfg.enable_overlap else (False,):
            for output_len in range(max(1, max_new - 3), max_new + 1):
                if not allocates_next_batch(
                    output_len, max_new, overlap=in_flight, drops_finishing=overlap_drops_finishing
                ):
                    continue
                c = committed_len_at_alloc(input_len, output_len, overlap=in_flight, counts_in_flight=counts_in_flight)
                best = max(best, c)
    return best


def decode_alloc_bound(cfg: ServingConfig, revision: Revision) -> int:
    """``max_committed_len_at_decode_alloc`` under a revision's scheduler rules."""
    return max_committed_len_at_decode_alloc(
        cfg,
        overlap_drops_finishing=revision.overlap_drops_finishing,
        counts_in_flight=revision.overlap_counts_in_flight,
        clamp=revision.memory_clamp,
    )


def max_prompt_len(cfg: ServingConfig) -> int:
    """The longest prompt the scheduler admits: min(C, capacity) - 7.

    SGLang's ``srt/managers/tp_worker.py`` sets ``max_req_len =
    min(context_len - 1, kv_capacity - 1)`` and ``max_req_input_len =
    max_req_len - 5`` [cite: max-req-len]; ``srt/managers/scheduler.py``
    [cite: validate-input-length-call] (``validate_input_length``,
    ``srt/managers/utils.py`` [cite: validate-input-length]) aborts a prompt
    of ``max_req_input_len`` tokens or more.  A retracted
    request re-enters the queue without that check, so its re-prefill (prompt
    plus outputs) can be longer.
    """
    cap = cfg.kv_capacity()
    limit = cfg.context_len if cap is None else min(cfg.context_len, cap)
    return limit - 7


def reached_by(cfg: ServingConfig, fill_len: int) -> str:
    """How a request comes to hold exactly ``fill_len`` tokens of KV, all committed, with nothing over-allocated.

    A fresh prefill of a prompt that long, if the scheduler admits one; else
    the re-prefill of a retracted request whose prompt and outputs add up to
    it (rule 1 lets input + output reach ``max_total_len``).
    """
    if fill_len <= max_prompt_len(cfg):
        return f"a prompt of {fill_len} tokens, prefilled (the scheduler admits prompts up to {max_prompt_len(cfg)})"
    return (
        f"a retracted request re-prefilled with its prompt (at most {max_prompt_len(cfg)} tokens) and outputs: "
        f"{fill_len} tokens (a fresh prompt that long is refused); {retraction_load(cfg, fill_len)}"
    )


def retraction_load(cfg: ServingConfig, fill_len: int) -> str:
    """The load under which a live server retracts a request of ``fill_len`` tokens and re-prefills it.

    A decode step that does not fit the KV pool retracts requests until it does
    (``check_decode_mem`` then ``retract_decode`` [cite: retract-on-full-pool]),
    always keeping one [cite: retract-keeps-one]: two requests that together
    outgrow the pool, each able to fit alone, make one wait and re-prefill with
    its prompt and outputs once the other finishes.
    """
    pool = cfg.max_total_num_tokens or (fill_len * 3 // 2)
    hint = "" if cfg.max_total_num_tokens else f", e.g. --max-total-tokens {pool}"
    return (
        f"a live server gets there with two requests decoding at once that outgrow the KV pool{hint}: the scheduler "
        "retracts one and re-prefills it when the other finishes"
    )
