"""trtllm_mha (``--attention-backend trtllm_mha``): its CUDA-graph page tables, the mirror of FA3's (the same
dictionaries and keys), filled by the fused graph-metadata kernel and the unclamped page-table builder, read by
trtllm-gen / XQA."""

from __future__ import annotations

from allocator_model.page_tables import AttentionBackend
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from .checked import SM90, CheckedBackend, GraphBackend
from .packages import ATTENTION_DIR, PAGE_TABLE_BUILDER, PAGE_TABLE_FILES, SGLANG_REPO_PATH

MODULE = "sglang.srt.layers.attention.trtllm_mha_backend"
FILE = ATTENTION_DIR + "trtllm_mha_backend.py"
GRAPH_METADATA_FILES = (  # the fused graph-metadata kernel: kvcache/ to 0.5.22, attention/ after
    SGLANG_REPO_PATH + "sglang/kernels/ops/kvcache/trtllm_mha_graph_metadata.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/attention/trtllm_mha_graph_metadata.py",
)
# 16, 32 or 64; SGLang changes any other to 64 [cite: trtllm-mha-pages], and 128 too before 0.5.17; from 0.5.17 it
# takes 128 for GQA models with trtllm-gen only (not judged: the stand-in model is MHA on SM90).
PAGES = (16, 32, 64)


# Its base class (FlashInfer's backend, whose ``__init__`` it runs) and theirs, assert_buffer_fits, the page-table
# builder, the fused graph-metadata kernel, the KV-cache access resolver (the pool's unquantized method) and the
# ragged-verify layout reader, where the backend imports them from (each release's list is its record's).
IMPORTS = (
    "FlashInferAttnBackend",
    "AttentionBackend",
    "assert_buffer_fits",
    PAGE_TABLE_BUILDER,
    "update_trtllm_mha_graph_metadata",
    "KVCacheAttentionAccessKind",
    "resolve_ragged_verify_layout",
)


BACKEND = CheckedBackend(
    GraphTable(
        AttentionBackend.TRTLLM_MHA,
        width_code=(
            CodeRef(FILE, "TRTLLMHAAttnBackend.init_cuda_graph_state"),
            CodeRef(FILE, "TRTLLMHAAttnBackend.__init__"),
        ),
        writers=(
            *(CodeRef(f, "update_trtllm_mha_graph_metadata") for f in GRAPH_METADATA_FILES),
            *(CodeRef(f, PAGE_TABLE_BUILDER) for f in PAGE_TABLE_FILES),
            CodeRef(FILE, "TRTLLMHAAttnBackend._apply_cuda_graph_metadata"),
        ),
        readers=(
            CodeRef(FILE, "TRTLLMHAAttnBackend.forward_decode"),
            CodeRef(FILE, "TRTLLMHAAttnBackend.forward_extend"),
        ),
        pages=PAGES,
        topk_1_only=True,  # [cite: trtllm-mha-topk-1]
    ),
    GraphBackend(AttentionBackend.TRTLLM_MHA, MODULE, "TRTLLMHAAttnBackend", "TRTLLMHAAttnMultiStepDraftBackend", SM90),
    IMPORTS,
    # SGLang refuses it below SM90 [cite: trtllm-mha-requires-sm90], and as the prefill backend below SM100 to
    # 0.5.18, so SM100 boots the line on every release
    hardware="an SM100 (Blackwell) GPU: trtllm_mha's kernels (SGLang 0.5.19+ boots it on SM90 too)",
)
