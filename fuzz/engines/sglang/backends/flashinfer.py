"""FlashInfer (``--attention-backend flashinfer``): its draft decode's kv_indices, triton's table (one row per draft
step, ``draft_kv_indices_buffer_width(max_bs, topk, C)`` slots sized from the model's context length
[cite: flashinfer-draft-width] [cite: flashinfer-context-len], every step's row filled in one launch of
``generate_draft_decode_kv_indices``), read by FlashInfer's decode kernel through the wrapper each step's backend
plans over its row.  One difference: before the launch, SGLang asserts that all S steps' slots fit a row
[cite: flashinfer-draft-assert] (upstream added it with the rows' topk factor, #27338, "fail fast instead of
silently corrupting memory"), so a request whose last step would pass its row stops the step (the scheduler raises:
the server crashes) rather than spilling into the next step's row.

Its target's buffers (decode, verify, draft extend) are flat, ``max_num_tokens`` x C slots: not this table."""

from __future__ import annotations

from allocator_model.page_tables import AttentionBackend

from .checked import SM90, CheckedBackend, GraphBackend
from .packages import ATTENTION_DIR
from .triton import DRAFT_KERNEL, GRAPH_OFF, draft_rows_table

MODULE = "sglang.srt.layers.attention.flashinfer_backend"
# the flag on an MLA model runs FlashInferMLAAttnBackend and its multi-step draft: the same rows, its own table
MODELS = "dense models (FlashInferAttnBackend)"
FILE = ATTENTION_DIR + "flashinfer_backend.py"

# Its base class, the draft kernel, the width's and the used length's functions and the assert (FlashInfer MLA's
# too), where the backend imports them from (each release's list is its record's)
ASSERTED_DRAFT_ROWS = (
    "AttentionBackend",
    DRAFT_KERNEL,
    "draft_kv_indices_buffer_width",
    "draft_kv_indices_used_len",
    "assert_buffer_fits",
)
# and the KV-cache access resolver (the pool's unquantized method)
IMPORTS = (*ASSERTED_DRAFT_ROWS, "spec_kv_index_token_blocks", "KVCacheAttentionAccessKind")


BACKEND = CheckedBackend(
    draft_rows_table(
        AttentionBackend.FLASHINFER, FILE, "FlashInferAttnBackend", "FlashInferMultiStepDraftBackend", models=MODELS
    ),
    GraphBackend(
        AttentionBackend.FLASHINFER,
        MODULE,
        "FlashInferAttnBackend",
        "FlashInferMultiStepDraftBackend",
        SM90,
        names_cuda=True,  # its multi-step draft's buffers are made on the CUDA device
        # each step's decode kernel reads the buffers of the wrapper its step backend planned
        metadata="forward_metadata.decode_wrappers.0",
        table="_paged_kv_indices_buf",
        lengths="_paged_kv_indptr_buf",
    ),
    IMPORTS,
    hardware="any CUDA GPU FlashInfer runs on (the stand-in: an SM90 (Hopper) GPU)",
    launch_note="one request at the limit reaches the draft's kv_indices rows " + GRAPH_OFF,
)
