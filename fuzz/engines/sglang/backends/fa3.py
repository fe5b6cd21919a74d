"""FA3 (``--attention-backend fa3``): its CUDA-graph page tables (``max_num_pages``, sized from the model's context
length), filled by its metadata builders and the unclamped page-table builder, read by sgl-kernel's FA3."""

from __future__ import annotations

from allocator_model.page_tables import AttentionBackend
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from .checked import SM90, CheckedBackend, GraphBackend, minor
from .packages import (
    ATTENTION_DIR,
    ATTN,
    KOPS,
    PAGE_TABLE_BUILDER,
    PAGE_TABLE_FILES,
    SGLANG_REPO_PATH,
    attention_utils,
    pool_hooks,
    runner_modules,
)

MODULE = "sglang.srt.layers.attention.flashattention_backend"
FILE = ATTENTION_DIR + "flashattention_backend.py"
METADATA_FILE = SGLANG_REPO_PATH + "sglang/kernels/ops/attention/metadata.py"
# FA3's pages: a power of two (its metadata builders assert it from 0.5.16, ``kernels/ops/attention/metadata.py``:
# another page fails at CUDA-graph capture, before any request; the unclamped verify builder needs the page to divide
# its 4096-token block).
PAGES = tuple(p for p in range(1, 257) if p & (p - 1) == 0)


def modules(version: str) -> tuple[str, ...]:
    """The backend, its base class, the triton/torch builders (their package moved from layers/attention/triton_ops
    to kernels/ops in 0.5.16, the page-table builder's from kernels/ops/kvcache to kernels/ops/attention in 0.5.23),
    assert_buffer_fits' module, the pool's hooks and the runner's modules (``packages``)."""
    n = minor(version)
    metadata = ATTN + "triton_ops.metadata" if n <= 15 else KOPS + "attention.metadata"
    own = (MODULE, ATTN + "base_attn_backend", metadata, attention_utils(version))
    if n <= 15:
        return own + ((ATTN + "triton_ops.trtllm_mha_page_table",) if n == 15 else ())
    page_table = KOPS + ("attention" if n >= 23 else "kvcache") + ".trtllm_mha_page_table"
    return own + (page_table,) + pool_hooks(version) + runner_modules(version)


BACKEND = CheckedBackend(
    GraphTable(
        AttentionBackend.FA3,
        width_code=(
            CodeRef(FILE, "FlashAttentionBackend.init_cuda_graph_state"),
            CodeRef(FILE, "FlashAttentionBackend.__init__"),
        ),
        writers=(
            CodeRef(METADATA_FILE, "normal_decode_set_metadata"),
            CodeRef(METADATA_FILE, "draft_extend_set_metadata"),
            *(CodeRef(f, PAGE_TABLE_BUILDER) for f in PAGE_TABLE_FILES),
            CodeRef(FILE, "FlashAttentionBackend._apply_cuda_graph_metadata"),
        ),
        readers=(
            CodeRef(FILE, "FlashAttentionBackend.forward_decode"),
            CodeRef(FILE, "FlashAttentionBackend.forward_extend"),
        ),
        pages=PAGES,
    ),
    GraphBackend(AttentionBackend.FA3, MODULE, "FlashAttentionBackend", "FlashAttentionMultiStepBackend", SM90),
    modules,
    hardware="an SM90 (Hopper) GPU: FA3's kernels are built for it",
)
