"""The attention backends whose CUDA-graph page tables this engine checks: one ``GraphTable`` each, naming where
SGLang sizes, fills and reads it, and which launches run it.  The tables' behaviour (their cases, accesses, closed
form and proof) is ``page_tables``'; this module is the data it runs on."""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model.config import ServingConfig
from allocator_model.page_tables import FLASHMLA_BLOCK_TOKENS, FLASHMLA_PAGE, TRTLLM_BLOCK_TOKENS, AttentionBackend
from allocator_model.pools import KVPool
from fuzz.tables import CodeRef

from .locations import SGLANG_REPO_PATH

FA3_FILE = SGLANG_REPO_PATH + "sglang/srt/layers/attention/flashattention_backend.py"
METADATA_FILE = SGLANG_REPO_PATH + "sglang/kernels/ops/attention/metadata.py"
PAGE_TABLE_BUILDER = "build_trtllm_mha_page_table"
PAGE_TABLE_FILES = (  # where the unclamped builder lives: kvcache/ to 0.5.18, attention/ after
    SGLANG_REPO_PATH + "sglang/kernels/ops/kvcache/trtllm_mha_page_table.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/attention/trtllm_mha_page_table.py",
)
TRTLLM_MHA_FILE = SGLANG_REPO_PATH + "sglang/srt/layers/attention/trtllm_mha_backend.py"
GRAPH_METADATA_FILES = (  # trtllm_mha's fused graph-metadata kernel: kvcache/ to 0.5.22, attention/ after
    SGLANG_REPO_PATH + "sglang/kernels/ops/kvcache/trtllm_mha_graph_metadata.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/attention/trtllm_mha_graph_metadata.py",
)
FLASHMLA_FILE = SGLANG_REPO_PATH + "sglang/srt/layers/attention/flashmla_backend.py"
KV_INDICES_FILES = (  # FlashMLA's table builder: layers/attention/triton_ops/ to 0.5.15, kvcache/ to 0.5.22, attention/
    SGLANG_REPO_PATH + "sglang/srt/layers/attention/triton_ops/kv_indices.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/kvcache/kv_indices.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/attention/kv_indices.py",
)
TRTLLM_MLA_FILE = SGLANG_REPO_PATH + "sglang/srt/layers/attention/trtllm_mla_backend.py"
NEXT_ROW = "the next request of the batch (its graph row), or past the buffer for the bucket's last row"


@dataclass(frozen=True)
class GraphTable:
    """One backend's CUDA-graph page table, as this engine checks it: its name, where SGLang sizes, fills and
    reads it, and which launches run it (``takes``: its pages, and topk 1 where the backend refuses more)."""

    backend: AttentionBackend
    width_code: tuple[CodeRef, ...]  # the functions that size it (its root cause)
    writers: tuple[CodeRef, ...]
    readers: tuple[CodeRef, ...]
    pages: tuple[int, ...]  # the page sizes a launch on the backend keeps (others SGLang changes or refuses)
    topk_1_only: bool = False  # SGLang refuses speculation at topk > 1 on the backend
    # the contexts past SGLang's default 4096 its covering set runs: where a width leaves the least room past it (0:
    # one page past, a whole number of pages, for a width of the context's pages; FlashMLA's one page past them: 63
    # tokens; trtllm_mla's padded to whole 4096-token blocks: a whole block past, 8192; and 128 past, a whole number
    # of trtllm-gen's 128 tokens but not of blocks: where a width padded to the first alone leaves the least room)
    cover_offsets: tuple[int, ...] = (0,)

    @property
    def name(self) -> str:
        return f"{self.backend.value}_page_table"

    @property
    def kernel(self) -> str:
        return f"{self.backend.label}'s kernel"

    def takes(self, cfg: ServingConfig) -> bool:
        """Whether the table is judged on ``cfg``: a standard pool without decode context parallelism (DCP runs the
        MLA backends; unified memory translates the tables through its own map), at a page the backend keeps, at a
        topk it accepts."""
        standard = cfg.kv_pool is KVPool.STANDARD and cfg.attn_dcp_size == 1
        topk = not self.topk_1_only or cfg.speculative_algorithm is None or cfg.topk == 1
        return standard and cfg.page_size in self.pages and topk


# FA3's pages: a power of two (its metadata builders assert it from 0.5.16, ``kernels/ops/attention/metadata.py``:
# another page fails at CUDA-graph capture, before any request; the unclamped verify builder needs the page to divide
# its 4096-token block).
FA3_PAGES = tuple(p for p in range(1, 257) if p & (p - 1) == 0)
# trtllm_mha's: 16, 32 or 64; SGLang changes any other to 64 [cite: trtllm-mha-pages], and 128 too before 0.5.17;
# from 0.5.17 it takes 128 for GQA models with trtllm-gen only (not judged: the stand-in model is MHA on SM90).
TRTLLM_MHA_PAGES = (16, 32, 64)
# trtllm_mla's: 32 or 64; SGLang changes any other to 64.
TRTLLM_MLA_PAGES = (32, 64)


FA3 = GraphTable(
    AttentionBackend.FA3,
    width_code=(
        CodeRef(FA3_FILE, "FlashAttentionBackend.init_cuda_graph_state"),
        CodeRef(FA3_FILE, "FlashAttentionBackend.__init__"),
    ),
    writers=(
        CodeRef(METADATA_FILE, "normal_decode_set_metadata"),
        CodeRef(METADATA_FILE, "draft_extend_set_metadata"),
        *(CodeRef(f, PAGE_TABLE_BUILDER) for f in PAGE_TABLE_FILES),
        CodeRef(FA3_FILE, "FlashAttentionBackend._apply_cuda_graph_metadata"),
    ),
    readers=(
        CodeRef(FA3_FILE, "FlashAttentionBackend.forward_decode"),
        CodeRef(FA3_FILE, "FlashAttentionBackend.forward_extend"),
    ),
    pages=FA3_PAGES,
)
TRTLLM_MHA = GraphTable(
    AttentionBackend.TRTLLM_MHA,
    width_code=(
        CodeRef(TRTLLM_MHA_FILE, "TRTLLMHAAttnBackend.init_cuda_graph_state"),
        CodeRef(TRTLLM_MHA_FILE, "TRTLLMHAAttnBackend.__init__"),
    ),
    writers=(
        *(CodeRef(f, "update_trtllm_mha_graph_metadata") for f in GRAPH_METADATA_FILES),
        *(CodeRef(f, PAGE_TABLE_BUILDER) for f in PAGE_TABLE_FILES),
        CodeRef(TRTLLM_MHA_FILE, "TRTLLMHAAttnBackend._apply_cuda_graph_metadata"),
    ),
    readers=(
        CodeRef(TRTLLM_MHA_FILE, "TRTLLMHAAttnBackend.forward_decode"),
        CodeRef(TRTLLM_MHA_FILE, "TRTLLMHAAttnBackend.forward_extend"),
    ),
    pages=TRTLLM_MHA_PAGES,
    topk_1_only=True,  # [cite: trtllm-mha-topk-1]
)
FLASHMLA = GraphTable(
    AttentionBackend.FLASHMLA,
    width_code=(CodeRef(FLASHMLA_FILE, "FlashMLABackend.init_cuda_graph_state"),),
    writers=(
        *(CodeRef(f, "create_flashmla_kv_indices_triton") for f in KV_INDICES_FILES),
        CodeRef(FLASHMLA_FILE, "FlashMLABackend._apply_decode_target_verify_metadata"),
    ),
    readers=(
        CodeRef(FLASHMLA_FILE, "FlashMLABackend.forward_decode"),
        CodeRef(FLASHMLA_FILE, "FlashMLABackend.forward_extend"),
    ),
    pages=(FLASHMLA_PAGE,),  # [cite: flashmla-page-64]
    topk_1_only=True,  # [cite: flashmla-topk-1]
    cover_offsets=(FLASHMLA_PAGE - 1,),
)
TRTLLM_MLA = GraphTable(
    AttentionBackend.TRTLLM_MLA,
    width_code=(  # the context's pages [cite: trtllm-mla-sized-from-context], padded
        CodeRef(TRTLLM_MLA_FILE, "TRTLLMMLABackend.init_cuda_graph_state"),
        CodeRef(TRTLLM_MLA_FILE, "TRTLLMMLABackend._calc_padded_blocks"),
    ),
    writers=(
        *(CodeRef(f, "create_flashmla_kv_indices_triton") for f in KV_INDICES_FILES),
        CodeRef(TRTLLM_MLA_FILE, "TRTLLMMLABackend._apply_cuda_graph_metadata"),
    ),
    readers=(
        CodeRef(TRTLLM_MLA_FILE, "TRTLLMMLABackend.forward_decode"),
        CodeRef(TRTLLM_MLA_FILE, "TRTLLMMLABackend.forward_extend"),
    ),
    pages=TRTLLM_MLA_PAGES,  # [cite: trtllm-mla-pages]
    topk_1_only=True,  # topk > 1 needs page 1 on it [cite: trtllm-mla-topk-1]
    cover_offsets=(TRTLLM_BLOCK_TOKENS, FLASHMLA_BLOCK_TOKENS),
)
GRAPH_TABLES: dict[str, GraphTable] = {t.name: t for t in (FA3, TRTLLM_MHA, FLASHMLA, TRTLLM_MLA)}
FA3_PAGE_TABLE = FA3.name


def backend_of(table: str | None) -> str | None:
    """The attention backend whose builders fill ``table`` (None: not a backend's table)."""
    spec = GRAPH_TABLES.get(table or "")
    return spec.backend.value if spec is not None else None
