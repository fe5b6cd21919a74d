"""FlashMLA (``--attention-backend flashmla``): one CUDA-graph kv-indices buffer per backend (the target's, each
draft step's, the draft's extend), one page past the context's whole 64-token pages, filled by the kv-indices
kernel, read by FlashMLA over the lengths it schedules its split-KV work on."""

from __future__ import annotations

from allocator_model.page_tables import FLASHMLA_PAGE, AttentionBackend
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from .checked import SM90, CheckedBackend, GraphBackend
from .packages import ATTENTION_DIR, KV_INDICES_FILES

MODULE = "sglang.srt.layers.attention.flashmla_backend"
FILE = ATTENTION_DIR + "flashmla_backend.py"


# Its base class (FlashInfer's MLA backend, whose ``__init__`` it runs) and theirs, assert_buffer_fits, the kv-indices
# kernels and the pool's hooks, where the backend imports them from (each release's list is its record's).
IMPORTS = (
    "FlashInferMLAAttnBackend",
    "AttentionBackend",
    "assert_buffer_fits",
    "create_flashmla_kv_indices_triton",
    "unified_mla_hooks",
    "get_kv_shard_pool",
)


BACKEND = CheckedBackend(
    GraphTable(
        AttentionBackend.FLASHMLA,
        width_code=(CodeRef(FILE, "FlashMLABackend.init_cuda_graph_state"),),
        writers=(
            *(CodeRef(f, "create_flashmla_kv_indices_triton") for f in KV_INDICES_FILES),
            CodeRef(FILE, "FlashMLABackend._apply_decode_target_verify_metadata"),
        ),
        readers=(
            CodeRef(FILE, "FlashMLABackend.forward_decode"),
            CodeRef(FILE, "FlashMLABackend.forward_extend"),
        ),
        pages=(FLASHMLA_PAGE,),  # [cite: flashmla-page-64]
        topk_1_only=True,  # [cite: flashmla-topk-1]
        cover_offsets=(FLASHMLA_PAGE - 1,),
    ),
    GraphBackend(
        AttentionBackend.FLASHMLA,
        MODULE,
        "FlashMLABackend",
        "FlashMLAMultiStepDraftBackend",
        SM90,
        mla=True,
        names_cuda=True,
        table="block_kv_indices",
        scheduled_lengths=True,
    ),
    IMPORTS,
    hardware="an SM90 (Hopper) GPU: FlashMLA's kernels are built for it",
)
