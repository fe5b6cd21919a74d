"""FlashInfer MLA (``--attention-backend flashinfer`` on an MLA model, which runs ``FlashInferMLAAttnBackend``
[cite: flashinfer-mla-on-mla-models]): its draft decode's kv_indices, FlashInfer's table on MLA models (one row per
draft step, ``draft_kv_indices_buffer_width(max_bs, topk, C)`` slots sized from the model's context length
[cite: flashinfer-mla-draft-width] [cite: flashinfer-mla-context-len], every step's row filled in one launch of
``generate_draft_decode_kv_indices``, all S steps asserted to fit a row first [cite: flashinfer-mla-draft-assert]).
What a step's kernel reads differs: each step backend plans FlashInfer's MLA kernel over the batch's host lengths
(``seq_lens_cpu``, not the step's ``seq + s + 1``) [cite: flashinfer-mla-draft-host-lengths], so a step reads the
first ``seq`` slots of its row.

Its target's buffers (decode, verify) are flat, ``max_bs`` x C slots: not this table."""

from __future__ import annotations

from allocator_model.page_tables import AttentionBackend

from .checked import SM90, CheckedBackend, GraphBackend
from .flashinfer import ASSERTED_DRAFT_ROWS
from .packages import ATTENTION_DIR
from .triton import GRAPH_OFF, draft_rows_table

MODULE = "sglang.srt.layers.attention.flashinfer_mla_backend"
MODELS = "MLA models (FlashInferMLAAttnBackend)"
FILE = ATTENTION_DIR + "flashinfer_mla_backend.py"

# FlashInfer's (its base class, the draft kernel, the width's and the used length's functions, the assert), the
# per-rank lengths a replay plans over (DCP's, the lengths themselves without it) and the unified pool's probe of the
# allocator (0.5.17-0.5.18), where the backend imports them from (each release's list is its record's).
IMPORTS = (*ASSERTED_DRAFT_ROWS, "update_local_kv_lens_for_dcp", "unified_mla_hooks")


BACKEND = CheckedBackend(
    draft_rows_table(
        AttentionBackend.FLASHINFER_MLA,
        FILE,
        "FlashInferMLAAttnBackend",
        "FlashInferMLAMultiStepDraftBackend",
        topk_1_only=True,  # its multi-step draft raises at topk > 1
        lengths="kv_len_arr_cpu",  # the host lengths its kernel is planned over
        models=MODELS,
    ),
    GraphBackend(
        AttentionBackend.FLASHINFER_MLA,
        MODULE,
        "FlashInferMLAAttnBackend",
        "FlashInferMLAMultiStepDraftBackend",
        SM90,
        mla=True,
        names_cuda=True,  # its buffers are made on the CUDA device
        # each step's MLA kernel reads the indices buffer of the wrapper its step backend planned, over the host
        # lengths the plan was handed (``flashinfer_standins.MLAWrapper.planned``)
        metadata="forward_metadata.decode_wrapper",
        table="_kv_indices_buf",
        lengths="planned",
        scheduled_lengths=True,
    ),
    IMPORTS,
    hardware="an SM90 (Hopper) GPU (FlashInfer's MLA kernels; the stand-in's)",
    launch_note="one request at the limit reaches the draft's kv_indices rows " + GRAPH_OFF,
)
