"""A configuration as SGLang's own command line: the ``python -m sglang.launch_server`` line that starts it.

Two spellings of one deployment live here.  ``launch_flags`` is the
configuration as ``ServerArgs`` fields, each flag SGLang derives from a
field name (``--`` and the name with dashes: ``add_cli_args_from_dataclass``);
``launch`` is the line a user types to get it: those flags where SGLang
takes them from the command line as they are, plus the companions its
launch handlers require of that configuration (a draft checkpoint, the
HiSparse radix-cache switch, NGRAM's breadth flag in place of the topk it
derives from it, the adaptive config file in the release's format, the
attention backend the case was confirmed with), and the model family the
pool kind needs.  ``checked`` executes a release's own handlers on the line
(``real.runtime.launch_check``) and says where SGLang refuses it or
resolves it to another configuration than the case's.

The model and draft paths are the user's: ``MODEL`` and ``DRAFT`` stand for them.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from allocator_model.algorithms import DFLASH, DSPARK, EAGLE, EAGLE3, NGRAM, STANDALONE, UNO
from allocator_model.config import DEFAULT_ADAPTIVE_CANDIDATE_STEPS, ServingConfig
from allocator_model.pools import KVPool

from .backends import DSA_BACKEND, FLAGS, HARDWARE, LAUNCH_NOTES, MLA_BACKENDS

MODEL_PATH = "MODEL"
DRAFT_PATH = "DRAFT"
UNO_LORA_PATH = "UNO_LORA"
ADAPTIVE_FILE = "ADAPTIVE.json"
# The backend SGLang's own write path runs the cases with (``real.runtime.context``), named on the line so that
# the handlers that accept a configuration for some backends only (EAGLE topk > 1 at page > 1) judge that one.
ATTENTION_BACKEND = "triton"
# The kinds of pool a flag selects (the rest are the model's own: a hybrid SWA or Mamba model).
POOL_FLAGS: dict[KVPool, tuple[str, ...]] = {
    KVPool.HISPARSE: ("--enable-hisparse", "--disable-radix-cache"),  # validate_hisparse asserts the second
    KVPool.UNIFIED_MAMBA: ("--enable-unified-memory",),
    KVPool.UNIFIED_MAMBA_SWA: ("--enable-unified-memory",),
    KVPool.UNIFIED_SWA: ("--enable-unified-memory",),
}
# Algorithms whose draft is a checkpoint of its own (``--speculative-draft-model-path``); UNO's is a LoRA.
OWN_DRAFT = frozenset({EAGLE, EAGLE3, STANDALONE, DFLASH, DSPARK})


@dataclass(frozen=True)
class Family:
    """The model a kind of pool is built for: what a line says of it, and the stand-in its check runs with."""

    description: str  # printed: "MODEL: <description>"
    architecture: str  # its config.json's architectures[0]
    mla: bool = False
    mamba: bool = False
    hybrid_swa: bool = False
    hf_config: tuple[tuple[str, Any], ...] = ()  # what else its config.json sets that a handler reads
    draft_in_checkpoint: bool = False  # EAGLE (NEXTN) takes the MTP layers from MODEL (no DRAFT)
    draft: str = "LlamaForCausalLMEagle3"  # the architecture of the DRAFT checkpoint it is served with


# DeepSeek sparse attention (HiSparse's models, and the DSA indexer's key cache's: ``dsa_index``)
DSA = Family(
    "a DSA model (e.g. DeepSeek V3.2, GLM-5)",
    "DeepseekV32ForCausalLM",
    mla=True,
    hf_config=(("index_topk", 2048),),  # DeepSeek-V3.2's config.json: what is_deepseek_dsa() asks
    draft_in_checkpoint=True,
)
FAMILIES: dict[KVPool, Family] = {
    KVPool.STANDARD: Family("a dense model (e.g. Llama 3.1 8B)", "LlamaForCausalLM"),
    KVPool.SWA: Family("a hybrid sliding-window model (e.g. gpt-oss)", "GptOssForCausalLM", hybrid_swa=True),
    KVPool.HISPARSE: DSA,
    KVPool.UNIFIED_MAMBA: Family(
        "a Mamba/linear-attention model (e.g. Qwen3.5, Qwen3-Next, Nemotron-H)", "Qwen3NextForCausalLM", mamba=True
    ),
    KVPool.UNIFIED_MAMBA_SWA: Family(
        "a Mamba + sliding-window model", "Qwen3NextForCausalLM", mamba=True, hybrid_swa=True
    ),
    KVPool.UNIFIED_SWA: Family("a hybrid sliding-window model (e.g. gpt-oss)", "GptOssForCausalLM", hybrid_swa=True),
}
# Unified memory under DCP takes MLA models only (the unified Mamba launch validator refuses an MHA one).
MLA_MAMBA = Family(
    "an MLA Mamba/linear-attention model (e.g. Kimi-Linear)", "KimiLinearForCausalLM", mla=True, mamba=True
)
# The MLA attention backends (FlashMLA, trtllm_mla: ``backends.MLA_BACKENDS``) serve MLA models only: a dense MLA
# model with its MTP layers (EAGLE drafts from them, NEXTN).
MLA_DENSE = Family("an MLA model (e.g. DeepSeek-V3)", "DeepseekV3ForCausalLM", mla=True, draft_in_checkpoint=True)
MODELS: dict[KVPool, str] = {kind: family.description for kind, family in FAMILIES.items()}


def family_of(cfg: ServingConfig, backend: str | None = None) -> Family:
    """The model ``cfg``'s pool is built for, among those SGLang starts it with (an MLA one on an MLA backend)."""
    if backend == DSA_BACKEND:
        return DSA
    if cfg.kv_pool is KVPool.UNIFIED_MAMBA and cfg.attn_dcp_size > 1:
        return MLA_MAMBA
    if backend in MLA_BACKENDS and cfg.kv_pool is KVPool.STANDARD:
        return MLA_DENSE
    return FAMILIES[cfg.kv_pool]


@dataclass(frozen=True)
class Launch:
    """A line to type: its flags, the files it names (name -> content), and what its placeholders stand for."""

    flags: tuple[str, ...]
    files: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    family: Family = FAMILIES[KVPool.STANDARD]

    def command(self) -> str:
        """The command alone, shell-quoted: what a user pastes."""
        return "python -m sglang.launch_server " + " ".join(shlex.quote(f) for f in self.flags)

    def line(self) -> str:
        """The command and, in parentheses, what its placeholders and files stand for."""
        return self.command() + (f"  ({'; '.join(self.notes)})" if self.notes else "")


def launch_flags(cfg: ServingConfig) -> list[str]:
    """The configuration as ``ServerArgs`` fields in SGLang's flag spelling (defaults left out, as a user would)."""
    flags = [
        "--model-path",
        MODEL_PATH,
        "--context-length",
        str(cfg.context_len),
        "--page-size",
        str(cfg.page_size),
    ]
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
            if _own_candidates(cfg):
                flags += ["--speculative-adaptive-config", ADAPTIVE_FILE]
    if not cfg.enable_overlap:
        flags.append("--disable-overlap-schedule")
    if cfg.max_total_num_tokens is not None:
        flags += ["--max-total-tokens", str(cfg.max_total_num_tokens)]
    flags += [f for f in POOL_FLAGS.get(cfg.kv_pool, ()) if f != "--disable-radix-cache"]
    return flags


def launch(cfg: ServingConfig, backend: str | None = None) -> Launch:
    """The line that starts ``cfg``: ``launch_flags`` with the companions SGLang's handlers require of it;
    ``backend``: the attention backend whose tables a finding is on (the line names it, whatever the default)."""
    family = family_of(cfg, backend)
    flags = launch_flags(cfg)
    notes = [f"MODEL: {family.description}"] if family is not FAMILIES[KVPool.STANDARD] else []
    files: dict[str, str] = {}
    algorithm = cfg.speculative_algorithm if cfg.spec_on else None
    if algorithm == NGRAM and "--speculative-eagle-topk" in flags:
        # _handle_ngram sets speculative_eagle_topk = speculative_ngram_max_bfs_breadth: the topk is that flag's
        at = flags.index("--speculative-eagle-topk")
        flags[at] = "--speculative-ngram-max-bfs-breadth"
    if algorithm in OWN_DRAFT and not (algorithm == EAGLE and family.draft_in_checkpoint):
        flags += ["--speculative-draft-model-path", DRAFT_PATH]
        notes.append(f"DRAFT: the {algorithm} draft checkpoint for MODEL")
    if algorithm == UNO:
        flags += ["--uno-lora-path", UNO_LORA_PATH]
        notes.append("UNO_LORA: the UNO draft LoRA for MODEL")
    if backend is not None or algorithm is not None or cfg.kv_pool.unified and cfg.attn_dcp_size > 1:
        flags += ["--attention-backend", FLAGS.get(backend, backend) if backend else attention_backend(cfg)]
    if backend in HARDWARE:
        notes.append(f"GPU: {HARDWARE[backend]}")
    if backend in LAUNCH_NOTES:
        notes.append(LAUNCH_NOTES[backend])
    if cfg.kv_pool is KVPool.HISPARSE:
        flags.append("--disable-radix-cache")
    if algorithm is not None and cfg.speculative_adaptive and _own_candidates(cfg):
        files[ADAPTIVE_FILE] = adaptive_config(cfg.candidate_steps)
        notes.append(f"{ADAPTIVE_FILE}: {files[ADAPTIVE_FILE]}")
    return Launch(tuple(flags), files, tuple(notes), family)


def attention_backend(cfg: ServingConfig) -> str:
    """The backend a line names: the write path's own, except where SGLang's handlers take others only: UNO runs
    on FA3; NGRAM's tree (topk > 1) at page > 1 on flashinfer; unified memory under DCP on a backend that maps
    the unified pool's pages (flashinfer; with speculation, trtllm_mla)."""
    if cfg.kv_pool.unified and cfg.attn_dcp_size > 1:
        return "trtllm_mla" if cfg.spec_on else "flashinfer"
    if cfg.spec_on and cfg.speculative_algorithm == UNO:
        return "fa3"
    if cfg.spec_on and cfg.speculative_algorithm == NGRAM and cfg.topk > 1 and cfg.page_size > 1:
        return "flashinfer"
    return ATTENTION_BACKEND


def launch_line(cfg: ServingConfig, backend: str | None = None) -> str:
    """``python -m sglang.launch_server ...``, with what its placeholders and files stand for."""
    return launch(cfg, backend).line()


def adaptive_config(candidate_steps: tuple[int, ...]) -> str:
    """The ``--speculative-adaptive-config`` file whose candidate steps are ``candidate_steps``: one batch-size
    slot (``"1"``) holding them all; ``_load_adaptive_config`` wants integer-string batch-size keys and
    ``resolve_candidate_steps_from_config`` sizes the buffers from the union of every slot's steps."""
    return json.dumps({"1": {"candidate_steps": list(candidate_steps)}})


def _own_candidates(cfg: ServingConfig) -> bool:
    return tuple(cfg.candidate_steps) != tuple(DEFAULT_ADAPTIVE_CANDIDATE_STEPS)


# -- the check: the release's own handlers on the line ------------------------------------------------------


# What the line must resolve to, field by field: the case's value (None: SGLang's own choice, not compared).
def expected_fields(cfg: ServingConfig) -> dict[str, Any]:
    spec = cfg.spec_on
    out: dict[str, Any] = {
        "context_length": cfg.context_len,
        "page_size": cfg.page_size,
        "dcp_size": cfg.attn_dcp_size,
        "speculative_algorithm": str(cfg.speculative_algorithm) if spec else None,
        "speculative_num_steps": cfg.speculative_num_steps if spec else None,
        "speculative_eagle_topk": cfg.speculative_eagle_topk if spec else None,
        "speculative_num_draft_tokens": cfg.speculative_num_draft_tokens if spec else None,
        "speculative_adaptive": bool(spec and cfg.speculative_adaptive),
        "disable_overlap_schedule": not cfg.enable_overlap,
        "max_total_tokens": cfg.max_total_num_tokens,
        "enable_unified_memory": cfg.kv_pool.unified,
        "enable_hisparse": cfg.kv_pool is KVPool.HISPARSE,
    }
    return {k: v for k, v in out.items() if v is not None or k == "speculative_algorithm"}


def checked(cfg: ServingConfig, release_tree: Any) -> str | None:
    """None where the release's own launch handlers accept ``launch(cfg)`` and resolve it to ``cfg``; else what
    went wrong: SGLang's refusal, or the first field it resolved otherwise (``the line launches X=a, not b``)."""
    return check_launch(launch(cfg), cfg, release_tree)


def check_launch(line: Launch, cfg: ServingConfig, release_tree: Any) -> str | None:
    """``checked`` for a line given whole (its flags, files and model family)."""
    from .real.runtime.launch_check import Model, launch_validators

    family = line.family
    model = Model(
        family.architecture,
        draft_architecture=family.draft,
        mla=family.mla,
        mamba=family.mamba,
        hybrid_swa=family.hybrid_swa,
        hf_config=family.hf_config,
    )
    outcome = launch_validators(release_tree).check(line.flags, model, line.files)
    if outcome.refusal is not None:
        return f"SGLang refuses it: {outcome.refusal}"
    for name, want in expected_fields(cfg).items():
        if name not in outcome.resolved:
            continue  # a field the release lacks (no --dcp-size before 0.5.15): the line cannot have set it
        got = outcome.resolved[name]
        if got != want:
            return f"the line launches {name}={got!r}, not the case's {want!r}"
    return None
