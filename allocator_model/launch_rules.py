"""server_args' launch rules as one table, read by two interpreters: one configuration, or a grid of them.

Each ``Rule`` says which launches it concerns (an algorithm, a kind of
pool), what must hold, written with operators that act alike on ints and on
tensors, and the one-line message ``ConfigError`` gives.  ``first_broken``
reads the table for one configuration (``config._validate``, after the type
checks only Python values need); ``holding`` ANDs it over a grid
(``config.valid_launch_mask``).  The twins test holds the two equal on every
configuration of a small space (``allocator_model.twins``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from . import algorithms as algo
from .pools import UNIFIED_SPEC, KVPool

# UNO's limits (server_args): Q = D <= 128 draft slots, Q * K <= 2048 tree nodes.
UNO_MAX_DRAFT_TOKENS = 128
UNO_MAX_TREE_NODES = 2048
# The pages unified memory runs at under DCP with speculation: those of the DCP-aware MLA backends it then takes.
UNIFIED_DCP_SPEC_PAGES = (32, 64)


@dataclass(frozen=True)
class Launch:
    """What the rules read of a launch: the algorithm and kind (one each), the numbers (ints or tensors).

    ``num_steps``/``topk``/``draft_tokens`` are 0 where unused (speculation off);
    ``in_candidates``: num_steps is one of the adaptive candidate steps.
    """

    algorithm: str | None
    kind: KVPool
    page_size: Any
    attn_dcp_size: Any
    num_steps: Any
    topk: Any
    draft_tokens: Any
    adaptive: Any
    in_candidates: Any


def _not(x: Any) -> Any:
    """``not x`` on a bool and on a bool tensor alike."""
    return x == 0


@dataclass(frozen=True)
class Rule:
    applies: Callable[[str | None, KVPool], bool]
    holds: Callable[[Launch], Any]
    message: Callable[[Launch], str]


def _spec(a: str | None, kind: KVPool) -> bool:
    return a is not None


def _always(a: str | None, kind: KVPool) -> bool:
    return True


def _min_steps(f: Launch) -> Any:
    """0 for NGRAM and adaptive spec (a 0-step batch), else 1."""
    if f.algorithm == algo.NGRAM:
        return 0
    return f.adaptive == 0  # 1 where not adaptive, 0 where adaptive (a bool is an int)


RULES: tuple[Rule, ...] = (
    Rule(_always, lambda f: f.page_size >= 1, lambda f: f"page_size must be >= 1, got {f.page_size}"),
    Rule(_always, lambda f: f.attn_dcp_size >= 1, lambda f: f"attn_dcp_size must be >= 1, got {f.attn_dcp_size}"),
    Rule(
        lambda a, kind: kind.refuses_dcp,
        lambda f: f.attn_dcp_size == 1,
        lambda f: (
            f"kv_pool {f.kind.value} refuses attn_dcp_size {f.attn_dcp_size} (unified memory with a hybrid SWA model)"
        ),
    ),
    Rule(
        lambda a, kind: a is not None and kind.unified and a not in UNIFIED_SPEC,
        lambda f: False,
        lambda f: f"kv_pool {f.kind.value} (unified memory) refuses speculative_algorithm {f.algorithm}",
    ),
    Rule(
        # Under DCP the unified pool takes the DCP-aware MLA backends only, and with speculation not flashinfer:
        # the rest run at page 32 or 64 [cite: unified-dcp-spec-backends]
        lambda a, kind: a is not None and kind.unified,
        lambda f: (
            (f.attn_dcp_size == 1)
            | (f.page_size == UNIFIED_DCP_SPEC_PAGES[0])
            | (f.page_size == UNIFIED_DCP_SPEC_PAGES[1])
        ),
        lambda f: (
            f"kv_pool {f.kind.value} with speculation under attn_dcp_size {f.attn_dcp_size} runs on the DCP-aware "
            f"MLA backends only (trtllm_mla, cutedsl_mla), at page_size 32 or 64, got {f.page_size}"
        ),
    ),
    Rule(
        lambda a, kind: a is not None and kind.needs_topk_1,
        lambda f: f.topk == 1,
        lambda f: f"kv_pool {f.kind.value} needs speculative_eagle_topk 1 under speculation, got {f.topk}",
    ),
    Rule(
        lambda a, kind: a is None,
        lambda f: (f.num_steps == 0) & (f.topk == 0) & (f.draft_tokens == 0) & _not(f.adaptive),
        lambda f: (
            "speculative_num_steps, speculative_eagle_topk and speculative_num_draft_tokens go with a "
            "speculative_algorithm, and so does speculative_adaptive"
        ),
    ),
    Rule(_spec, lambda f: f.topk >= 1, lambda f: f"speculative_eagle_topk must be >= 1, got {f.topk}"),
    Rule(
        _spec,
        lambda f: f.draft_tokens >= 1,
        lambda f: f"speculative_num_draft_tokens must be >= 1, got {f.draft_tokens}",
    ),
    Rule(
        _spec,
        lambda f: f.num_steps >= _min_steps(f),
        lambda f: f"speculative_num_steps must be >= {int(_min_steps(f))}, got {f.num_steps}",
    ),
    Rule(
        lambda a, kind: a is not None and a not in algo.ADAPTIVE,
        lambda f: _not(f.adaptive),
        lambda f: f"speculative_adaptive supports EAGLE and EAGLE3 only, not {f.algorithm}",
    ),
    Rule(
        lambda a, kind: a in algo.ADAPTIVE,
        lambda f: _not(f.adaptive) | (f.topk == 1),
        lambda f: f"speculative_adaptive needs speculative_eagle_topk 1, got {f.topk}",
    ),
    Rule(
        lambda a, kind: a in algo.ADAPTIVE,
        lambda f: _not(f.adaptive) | f.in_candidates,
        lambda f: f"speculative_num_steps ({f.num_steps}) must be one of the adaptive candidate steps",
    ),
    Rule(
        lambda a, kind: a in algo.EAGLE_FAMILY,
        lambda f: (f.topk != 1) | (f.draft_tokens == f.num_steps + 1),
        lambda f: (
            f"{f.algorithm} with speculative_eagle_topk 1 needs speculative_num_draft_tokens = num_steps + 1 "
            f"({f.num_steps + 1}), got {f.draft_tokens}"
        ),
    ),
    Rule(
        lambda a, kind: a in algo.DFLASH_FAMILY,
        lambda f: (f.num_steps == 1) & (f.topk == 1),
        lambda f: (
            f"{f.algorithm} runs with speculative_num_steps 1 and speculative_eagle_topk 1, got "
            f"({f.num_steps}, {f.topk})"
        ),
    ),
    Rule(
        lambda a, kind: a == algo.DSPARK,
        lambda f: f.draft_tokens >= 2,
        lambda f: f"DSPARK needs speculative_num_draft_tokens = gamma + 1 >= 2, got {f.draft_tokens}",
    ),
    Rule(
        lambda a, kind: a == algo.UNO,
        lambda f: f.attn_dcp_size == 1,
        lambda f: "UNO needs tp_size 1 (so attn_dcp_size 1)",
    ),
    Rule(
        lambda a, kind: a == algo.UNO,
        lambda f: f.draft_tokens >= f.num_steps + 1,
        lambda f: f"UNO needs speculative_num_draft_tokens >= num_steps + 1 ({f.num_steps + 1}), got {f.draft_tokens}",
    ),
    Rule(
        # topk 1 is UNO's linear mode: _handle_uno sets speculative_num_steps 1 whatever was given
        # [cite: uno-linear-steps]
        lambda a, kind: a == algo.UNO,
        lambda f: (f.topk != 1) | (f.num_steps == 1),
        lambda f: f"UNO with speculative_eagle_topk 1 runs speculative_num_steps 1, got {f.num_steps}",
    ),
    Rule(
        lambda a, kind: a == algo.UNO,
        lambda f: f.draft_tokens <= UNO_MAX_DRAFT_TOKENS,
        lambda f: f"UNO needs speculative_num_draft_tokens <= {UNO_MAX_DRAFT_TOKENS}, got {f.draft_tokens}",
    ),
    Rule(
        lambda a, kind: a == algo.UNO,
        lambda f: f.draft_tokens * f.topk <= UNO_MAX_TREE_NODES,
        lambda f: f"UNO needs num_draft_tokens * topk <= {UNO_MAX_TREE_NODES}, got {f.draft_tokens * f.topk}",
    ),
)


def first_broken(f: Launch) -> str | None:
    """The message of the first rule one configuration breaks (its fields ints), or None."""
    for rule in RULES:
        if rule.applies(f.algorithm, f.kind) and not bool(rule.holds(f)):
            return rule.message(f)
    return None


def holding(f: Launch, like: Tensor) -> Tensor:
    """Where every rule holds, over a grid (its fields tensors shaped like ``like``)."""
    ok = torch.ones_like(like, dtype=torch.bool)
    for rule in RULES:
        if rule.applies(f.algorithm, f.kind):
            ok &= torch.as_tensor(rule.holds(f), dtype=torch.bool)
    return ok
