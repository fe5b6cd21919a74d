"""SGLang's own values for what a deployment leaves unset: the auto (S, K, D) per algorithm, adaptive candidates.

A leaf of the configuration module: ``ServingConfig.resolve`` fills these
before it validates, so a configuration built from partial arguments is the
one the server would run.
"""

from __future__ import annotations

from typing import Any

from . import algorithms as algo
from .numeric import Int

# What a deployment runs when its user sets no more than the algorithm and the backend: what a bug group's
# representative case is moved toward (``fuzz.engines.sglang.representative``).
# EAGLE's (S, K, D) when launched without them, per kind of target model, most models first
# (``_auto_choose_speculative_params`` [cite: eagle-auto-params]); STANDALONE takes the first for every model.
EAGLE_AUTO_PARAMS: tuple[tuple[str, tuple[int, int, int]], ...] = (
    ("most models", (3, 1, 4)),
    ("Llama and Grok models", (5, 4, 8)),
)
# DSPARK's gamma where neither its draft's config nor a flag gives one [cite: dspark-default-gamma]; its D is gamma + 1
# [cite: dspark-draft-tokens].
DSPARK_DEFAULT_GAMMA = 7
# The pages attention backends run with, most used first: 1 where no backend forces one [cite: page-size-default];
# the MLA backends' and TRT-LLM's [cite: backend-page-sizes]; FA4's [cite: fa4-page-size].
BACKEND_PAGES: dict[int, str] = {
    1: "SGLang's default page",
    64: "FlashMLA's and TRT-LLM's page",
    128: "FA4's and Cutlass MLA's page",
    32: "a TRT-LLM MLA page",
    16: "a TRT-LLM MHA page",
}

# Adaptive spec's default candidate steps (union of the default per-batch-size
# tables): max 7, so the launch-time max draft tokens is 8.
DEFAULT_ADAPTIVE_CANDIDATE_STEPS = (0, 1, 3, 5, 7)


def chain_draft_tokens(num_steps: Int) -> Int:
    """D of a single draft chain: its S draft tokens plus the verified root, S + 1.

    server_args forces D = S + 1 for the EAGLE family at topk 1, adaptive
    spec (topk 1) runs D = S + 1 for whatever S a batch switches to, and UNO
    needs at least that many draft slots.  Works on ints and on tensors.
    """
    return num_steps + 1


def adaptive_launch_steps(candidates: tuple[int, ...]) -> int:
    """The step count adaptive spec launches with when ``speculative_num_steps`` is not given.

    SGLang's ``srt/arg_groups/speculative_hook.py``
    (``_init_adaptive_speculative_params`` [cite: adaptive-launch-steps])
    resolves it to ``candidate_steps[len(candidate_steps) // 2]`` of the
    sorted candidate union, and ``srt/speculative/adaptive_spec_params.py``
    (``AdaptiveStepSlot.__init__`` [cite: adaptive-initial-steps]) starts
    there; so launch is below the
    largest candidate, and a headroom sized from the launch shape is short
    once adaptive spec switches up.
    """
    ordered = sorted(set(candidates))
    return ordered[len(ordered) // 2]


def fill_spec_defaults(args: dict[str, Any]) -> None:
    """SGLang's auto values for (S, K, D) per algorithm, applied before validation."""
    a = args.get("speculative_algorithm")
    s = args.get("speculative_num_steps")
    k = args.get("speculative_eagle_topk")
    d = args.get("speculative_num_draft_tokens")
    if a is None:
        return
    if a in algo.EAGLE_FAMILY:
        if args.get("speculative_adaptive"):
            cand = args.get("speculative_adaptive_candidate_steps") or DEFAULT_ADAPTIVE_CANDIDATE_STEPS
            args["speculative_adaptive_candidate_steps"] = tuple(sorted(set(cand)))
            if s is None:  # SGLang launches at the middle candidate (see ``adaptive_launch_steps``)
                s = adaptive_launch_steps(args["speculative_adaptive_candidate_steps"])
            k = 1 if k is None else k
        if s is None and k is None and d is None:
            s, k, d = 3, 1, 4
        s = 1 if s is None else s
        k = 1 if k is None else k
        if k == 1 and isinstance(s, int):
            d = chain_draft_tokens(s)  # topk == 1 forces D = S + 1
        elif d is None:
            d = s * k + 1
    elif a == algo.NGRAM:
        k = 10 if k is None else k
        d = 12 if d is None else d
        if s is None and isinstance(d, int) and isinstance(k, int) and k > 0:
            s = d // k
    elif a == algo.DFLASH:  # D: its block size where the draft's config gives none [cite: dflash-default-block-size]
        s = 1 if s is None else s
        k = 1 if k is None else k
        d = 16 if d is None else d
    elif a == algo.DSPARK:
        s = 1 if s is None else s
        k = 1 if k is None else k
    elif a == algo.UNO:
        k = 1 if k is None else k
        s = 1 if s is None else s
    args["speculative_num_steps"] = s
    args["speculative_eagle_topk"] = k
    args["speculative_num_draft_tokens"] = d
