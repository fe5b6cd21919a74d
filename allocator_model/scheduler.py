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

from .config import ServingConfig


def max_total_len(cfg: ServingConfig) -> int:
    """Rule 1: the longest input + output a request is admitted with."""
    cap = cfg.kv_capacity()
    limit = cfg.context_len if cap is None else min(cfg.context_len, cap)
    return limit - 2


def clamp_max_new_tokens(cfg: ServingConfig, input_len: int, max_new_tokens: int) -> int:
    """Rule 1 applied to one request (0 when the prompt alone is too long)."""
    return max(0, min(max_new_tokens, max_total_len(cfg) - input_len))


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


def committed_len_at_alloc(input_len: int, output_len: int, *, overlap: bool) -> int:
    """kv_committed_len the allocation uses, counting the in-flight token in overlap mode."""
    return committed_len(input_len + output_len + (1 if overlap else 0))


def max_committed_len_at_decode_alloc(cfg: ServingConfig, *, overlap_drops_finishing: bool = True) -> int:
    """The longest kv_committed_len any decode allocation can see: the three rules, at their limit.

    min(C, capacity) - 4 (0.5.19+, overlap or not); min(C, capacity) - 3 in
    overlap mode before 0.5.19.  Derived by running the rules at the longest
    admissible request rather than written as a constant.
    """
    total = max_total_len(cfg)
    input_len = 1
    max_new = clamp_max_new_tokens(cfg, input_len, total)
    overlap = cfg.enable_overlap
    best = -1
    # Only the last few outputs can hold the maximum; scan them.
    for output_len in range(max(1, max_new - 3), max_new + 1):
        if allocates_next_batch(output_len, max_new, overlap=overlap, drops_finishing=overlap_drops_finishing):
            best = max(best, committed_len_at_alloc(input_len, output_len, overlap=overlap))
    return best


def max_prompt_len(cfg: ServingConfig) -> int:
    """The longest prompt the scheduler admits: min(C, capacity) - 7.

    SGLang 0.5.23 ``srt/managers/tp_worker.py`` lines 568-572 set
    ``max_req_len = min(context_len - 1, kv_capacity - 1)`` and
    ``max_req_input_len = max_req_len - 5``; ``srt/managers/scheduler.py``
    line 3246 (``validate_input_length``, ``srt/managers/utils.py`` line 272)
    aborts a prompt of ``max_req_input_len`` tokens or more.  A retracted
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
        f"{fill_len} tokens (a fresh prompt that long is refused)"
    )
