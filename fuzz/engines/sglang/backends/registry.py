"""Every attention backend a release registers, and what this engine judges of it.

A backend is checked where its CUDA-graph page table is a checked table (``catalog.GRAPH_TABLES``); every other
name of the release's ``attention_registry.py`` is listed here with the reason it is not
(``tests/test_backend_registry.py`` holds the list to each release's registry: a backend a release adds and this
file does not name fails it).  "not checked yet" is work left, said as such, never a claim of safety.
"""

from __future__ import annotations

import ast

from .catalog import GRAPH_TABLES

REGISTRY = "sglang/srt/layers/attention/attention_registry.py"
_LATER = "not checked yet: "
# trtllm_mla's subclasses: their graph tables are trtllm_mla's builders but in 0.5.17-0.5.18 (which override them)
_SAME_AS_TRTLLM_MLA = _LATER + "trtllm_mla's subclass (its builders but in 0.5.17-0.5.18, which override them)"

UNCHECKED: dict[str, str] = {
    "fa4": "FA3's own class (FlashAttentionBackend with fa_impl_ver=4, SM100): its graph tables are built by the "
    "builders fa3_page_table judges",
    "cutedsl_mla": _SAME_AS_TRTLLM_MLA,
    "tokenspeed_mla": _SAME_AS_TRTLLM_MLA,
    "cutlass_mla": _LATER + "flashmla's builder over (C + 128) // 128 pages; sgl_kernel's CUDA kernel",
    "llada2_cfg_flashinfer": "diffusion language models only: no speculative decode modes",
    "dsa": "sized from req_to_token's row (req_to_token.shape[1]), the width every published length was reserved "
    "in; DeepSeek sparse-attention models only (their indexer key cache under DCP: checked, `dsa_index_key_cache`)",
    "nsa": "dsa's name before it (the same backend)",
    "qsa": "Qwen sparse-attention models only; CUDA kernels",
    "dsv4": "DeepSeek-V4 models only (compressed KV, its own tables); CUDA kernels",
    "hpc_ops": "no speculative decoding (SGLang refuses it with speculation): decode only; CUDA kernels",
    "minicpm_flashattn": "MiniCPM sparse-attention models only",
    "minicpm_flashinfer": "MiniCPM sparse-attention models only",
    "aiter": "ROCm (HIP) GPUs only",
    "wave": "ROCm (HIP) GPUs only",
    "ascend": "Ascend NPUs only",
    "intel_xpu": "Intel XPUs only",
    "intel_amx": "a CPU backend: no CUDA graph, no graph tables",
    "torch_native": "eager only: no CUDA-graph tables (it reads req_to_token per request)",
    "flex_attention": "eager only: no CUDA-graph tables (it reads req_to_token per request)",
    "dual_chunk_flash_attn": "Qwen dual-chunk long-context models only; no page table (lengths only)",
}


def checked() -> dict[str, tuple[str, ...]]:
    """Each checked backend (its ``--attention-backend`` name) and its tables' names (FlashInfer's: a dense model's
    and an MLA model's)."""
    out: dict[str, tuple[str, ...]] = {}
    for t in GRAPH_TABLES.values():
        out[t.backend.flag] = (*out.get(t.backend.flag, ()), t.name)
    return out


def registered(source: str) -> list[str]:
    """The names a release's ``attention_registry.py`` registers (``@register_attention_backend("name")``), in its
    order: read from the file's syntax, never run."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        for d in node.decorator_list:
            call = d if isinstance(d, ast.Call) else None
            if call is None or getattr(call.func, "id", None) != "register_attention_backend" or not call.args:
                continue
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.append(arg.value)
    return names


def unaccounted(names: list[str]) -> list[str]:
    """The registered names neither checked nor listed with a reason."""
    known = set(checked()) | set(UNCHECKED)
    return [n for n in names if n not in known]


def table_text() -> str:
    """The backends as a Markdown list (``docs/ci.md`` holds it; a test regenerates it)."""
    rows = [
        f"- `{t.backend.flag}`: checked (`{t.name}`)" + (f", {t.models}" if t.models else "")
        for t in GRAPH_TABLES.values()
    ]
    rows += [f"- `{name}`: {why}" for name, why in sorted(UNCHECKED.items())]
    return "\n".join(rows)


__all__ = ["REGISTRY", "UNCHECKED", "checked", "registered", "table_text", "unaccounted"]
