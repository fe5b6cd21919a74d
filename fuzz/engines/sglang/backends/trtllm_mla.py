"""trtllm_mla (``--attention-backend trtllm_mla``): one CUDA-graph kv-indices buffer, the context's pages padded to
whole blocks (``_calc_padded_blocks``), filled by FlashMLA's kv-indices kernel, read by trtllm-gen on Blackwell."""

from __future__ import annotations

from allocator_model.page_tables import FLASHMLA_BLOCK_TOKENS, TRTLLM_BLOCK_TOKENS, AttentionBackend
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from . import flashmla
from .checked import SM100, CheckedBackend, GraphBackend
from .packages import ATTENTION_DIR, KV_INDICES_FILES

MODULE = "sglang.srt.layers.attention.trtllm_mla_backend"
FILE = ATTENTION_DIR + "trtllm_mla_backend.py"
PAGES = (32, 64)  # SGLang changes any other to 64 [cite: trtllm-mla-pages]


# FlashMLA's: FlashInfer's MLA backend (its base) and the same kv-indices kernels (its builder).
IMPORTS = flashmla.IMPORTS


BACKEND = CheckedBackend(
    GraphTable(
        AttentionBackend.TRTLLM_MLA,
        width_code=(  # the context's pages [cite: trtllm-mla-sized-from-context], padded
            CodeRef(FILE, "TRTLLMMLABackend.init_cuda_graph_state"),
            CodeRef(FILE, "TRTLLMMLABackend._calc_padded_blocks"),
        ),
        writers=(
            *(CodeRef(f, "create_flashmla_kv_indices_triton") for f in KV_INDICES_FILES),
            CodeRef(FILE, "TRTLLMMLABackend._apply_cuda_graph_metadata"),
        ),
        readers=(
            CodeRef(FILE, "TRTLLMMLABackend.forward_decode"),
            CodeRef(FILE, "TRTLLMMLABackend.forward_extend"),
        ),
        pages=PAGES,
        topk_1_only=True,  # topk > 1 needs page 1 on it [cite: trtllm-mla-topk-1]
        cover_offsets=(TRTLLM_BLOCK_TOKENS, FLASHMLA_BLOCK_TOKENS),
    ),
    GraphBackend(
        AttentionBackend.TRTLLM_MLA,
        MODULE,
        "TRTLLMMLABackend",
        "TRTLLMMLAMultiStepDraftBackend",
        SM100,  # SGLang refuses it below Blackwell [cite: trtllm-mla-requires-sm100]
        mla=True,
        names_cuda=True,
        metadata="forward_decode_metadata",
        table="block_kv_indices",
        lengths="seq_lens_k",
        batch_lengths_if_none=True,
    ),
    IMPORTS,
    hardware="an SM100 (Blackwell) GPU: SGLang refuses trtllm_mla below it",
)
