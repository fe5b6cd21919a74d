"""FA3 (``--attention-backend fa3``): its CUDA-graph page tables (``max_num_pages``, sized from the model's context
length), filled by its metadata builders and the unclamped page-table builder, read by sgl-kernel's FA3."""

from __future__ import annotations

from allocator_model.page_tables import AttentionBackend
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from .checked import SM90, CheckedBackend, GraphBackend
from .packages import ATTENTION_DIR, PAGE_TABLE_BUILDER, PAGE_TABLE_FILES, SGLANG_REPO_PATH

MODULE = "sglang.srt.layers.attention.flashattention_backend"
FILE = ATTENTION_DIR + "flashattention_backend.py"
METADATA_FILE = SGLANG_REPO_PATH + "sglang/kernels/ops/attention/metadata.py"
# FA3's pages: a power of two (its metadata builders assert it from 0.5.16, ``kernels/ops/attention/metadata.py``:
# another page fails at CUDA-graph capture, before any request; the unclamped verify builder needs the page to divide
# its 4096-token block).
PAGES = tuple(p for p in range(1, 257) if p & (p - 1) == 0)


# Its base class, its metadata builders, assert_buffer_fits, the unclamped page-table builder and the pool's hooks,
# where the backend imports them from (a release that has none of one: none; each release's list is its record's).
IMPORTS = (
    "AttentionBackend",
    "normal_decode_set_metadata",
    "assert_buffer_fits",
    PAGE_TABLE_BUILDER,
    "unified_mla_hooks",
    "get_kv_shard_pool",
)


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
    IMPORTS,
    hardware="an SM90 (Hopper) GPU: FA3's kernels are built for it",
)
