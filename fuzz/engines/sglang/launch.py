"""A configuration as SGLang's own command line: the ``python -m sglang.launch_server`` flags that reach it.

SGLang derives every flag from its ``ServerArgs`` field name (``--`` and the
name with dashes: ``add_cli_args_from_dataclass``, 0.5.23
``server_args.py``). The fields, and where 0.5.23 declares them:

    context_length                  arg_groups/fields/model.py (the model's own length unless given)
    page_size, max_running_requests, max_total_tokens, disable_overlap_schedule
                                    arg_groups/fields/schedule.py
    speculative_algorithm, speculative_num_steps, speculative_eagle_topk,
    speculative_num_draft_tokens, speculative_adaptive, speculative_adaptive_config
                                    arg_groups/fields/spec.py
    dcp_size                        arg_groups/fields/parallel.py
    enable_unified_memory, enable_hisparse
                                    arg_groups/fields/memory.py

Adaptive spec's candidate step counts come from the JSON file
``--speculative-adaptive-config`` names (``candidate_steps``,
``speculative/adaptive_spec_params.py``); a kind of pool that needs a kind
of model says which (``allocator_model.pools.FLAGS``). The model path is
the user's: ``MODEL`` stands for it.
"""

from __future__ import annotations

import json
import shlex

from allocator_model.config import DEFAULT_ADAPTIVE_CANDIDATE_STEPS, ServingConfig
from allocator_model.pools import KVPool

# The kinds of pool a flag selects (the rest are the model's own: a hybrid SWA or Mamba model).
POOL_FLAGS: dict[KVPool, tuple[str, ...]] = {
    KVPool.HISPARSE: ("--enable-hisparse",),
    KVPool.UNIFIED_MAMBA: ("--enable-unified-memory",),
    KVPool.UNIFIED_MAMBA_SWA: ("--enable-unified-memory",),
    KVPool.UNIFIED_SWA: ("--enable-unified-memory",),
}
MODELS: dict[KVPool, str] = {
    KVPool.SWA: "a hybrid sliding-window model",
    KVPool.UNIFIED_MAMBA: "a Mamba/linear-attention model (e.g. Nemotron-H, Qwen3.5)",
    KVPool.UNIFIED_MAMBA_SWA: "a Mamba + sliding-window model",
    KVPool.UNIFIED_SWA: "a hybrid sliding-window model",
}


def launch_flags(cfg: ServingConfig) -> list[str]:
    """The flags, in SGLang's spelling, that launch ``cfg`` (defaults left out, as a user would)."""
    flags = ["--model-path", "MODEL", "--context-length", str(cfg.context_len), "--page-size", str(cfg.page_size)]
    if cfg.attn_dcp_size != 1:
        flags += ["--dcp-size", str(cfg.attn_dcp_size)]
    if cfg.spec_on:
        flags += ["--speculative-algorithm", str(cfg.speculative_algorithm)]
        for flag, value in (
            ("--speculative-num-steps", cfg.speculative_num_steps),
            ("--speculative-eagle-topk", cfg.speculative_eagle_topk),
            ("--speculative-num-draft-tokens", cfg.speculative_num_draft_tokens),
        ):
            if value is not None:
                flags += [flag, str(value)]
        if cfg.speculative_adaptive:
            flags.append("--speculative-adaptive")
            if tuple(cfg.candidate_steps) != tuple(DEFAULT_ADAPTIVE_CANDIDATE_STEPS):
                flags += ["--speculative-adaptive-config", "ADAPTIVE.json"]
    if not cfg.enable_overlap:
        flags.append("--disable-overlap-schedule")
    if cfg.max_total_num_tokens is not None:
        flags += ["--max-total-tokens", str(cfg.max_total_num_tokens)]
    flags += list(POOL_FLAGS.get(cfg.kv_pool, ()))
    return flags


def launch_line(cfg: ServingConfig) -> str:
    """``python -m sglang.launch_server ...``, with the model family and the adaptive file where they matter."""
    line = "python -m sglang.launch_server " + " ".join(shlex.quote(f) for f in launch_flags(cfg))
    notes = []
    if cfg.kv_pool in MODELS:
        notes.append(f"MODEL: {MODELS[cfg.kv_pool]}")
    if (
        cfg.spec_on
        and cfg.speculative_adaptive
        and tuple(cfg.candidate_steps) != tuple(DEFAULT_ADAPTIVE_CANDIDATE_STEPS)
    ):
        notes.append(f"ADAPTIVE.json: {json.dumps({'candidate_steps': list(cfg.candidate_steps)})}")
    return line + (f"  ({'; '.join(notes)})" if notes else "")
