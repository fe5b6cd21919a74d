"""Citations: the attention backends' tables (those the write path's table does not cite)."""

from __future__ import annotations

from .base import _SRT, Cite

_FLASHINFER = _SRT + "layers/attention/flashinfer_backend.py"
_FLASHINFER_MLA = _SRT + "layers/attention/flashinfer_mla_backend.py"
_REGISTRY = _SRT + "layers/attention/attention_registry.py"

FACTS: dict[str, tuple[Cite, ...]] = {
    # FlashInfer's multi-step draft asserts, before its one launch, that all S steps' slots fit a row
    "flashinfer-draft-assert": (
        Cite("0.5.13", _FLASHINFER, '"EAGLE draft kv_indices row (size max_bs * topk * max_context_len)",'),
        Cite("0.5.23", _FLASHINFER, '"EAGLE draft kv_indices row (size max_bs * topk * max_context_len)",'),
    ),
    # its rows: draft_kv_indices_buffer_width(max_bs, topk, C), C the model's context length
    "flashinfer-draft-width": (
        Cite("0.5.13", _FLASHINFER, "kv_indices_width = draft_kv_indices_buffer_width(", nth=2),
        Cite("0.5.23", _FLASHINFER, "kv_indices_width = draft_kv_indices_buffer_width(", nth=2),
    ),
    "flashinfer-context-len": (
        Cite("0.5.13", _FLASHINFER, "self.max_context_len = model_runner.model_config.context_len"),
        Cite("0.5.23", _FLASHINFER, "self.max_context_len = model_runner.model_config.context_len"),
    ),
    # ``--attention-backend flashinfer`` on an MLA model builds FlashInfer's MLA backend
    "flashinfer-mla-on-mla-models": (
        Cite("0.5.13", _REGISTRY, "return FlashInferMLAAttnBackend(runner)"),
        Cite("0.5.23", _REGISTRY, "return FlashInferMLAAttnBackend(runner)"),
    ),
    # its multi-step draft: the same assert over all S steps' slots, the same rows sized from C
    "flashinfer-mla-draft-assert": (
        Cite("0.5.13", _FLASHINFER_MLA, '"EAGLE draft kv_indices row (size max_bs * topk * max_context_len)",'),
        Cite("0.5.23", _FLASHINFER_MLA, '"EAGLE draft kv_indices row (size max_bs * topk * max_context_len)",'),
    ),
    "flashinfer-mla-draft-width": (
        Cite("0.5.13", _FLASHINFER_MLA, "kv_indices_width = draft_kv_indices_buffer_width(", nth=2),
        Cite("0.5.23", _FLASHINFER_MLA, "kv_indices_width = draft_kv_indices_buffer_width(", nth=2),
    ),
    "flashinfer-mla-context-len": (
        Cite("0.5.13", _FLASHINFER_MLA, "self.max_context_len = model_runner.model_config.context_len"),
        Cite("0.5.23", _FLASHINFER_MLA, "self.max_context_len = model_runner.model_config.context_len"),
    ),
    # a graph replay plans each step's kernel over the batch's host lengths (seq_lens_cpu), not the step's kv_indptr
    "flashinfer-mla-draft-host-lengths": (
        Cite("0.5.13", _FLASHINFER_MLA, "kv_len_arr_cpu = seq_lens_cpu[:bs]"),
        Cite("0.5.23", _FLASHINFER_MLA, "kv_len_arr_cpu = seq_lens_cpu[:bs]"),
    ),
}
