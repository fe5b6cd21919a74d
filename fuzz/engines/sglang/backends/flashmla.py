"""FlashMLA (``--attention-backend flashmla``): one CUDA-graph kv-indices buffer per backend (the target's, each
draft step's, the draft's extend), one page past the context's whole 64-token pages, filled by the kv-indices
kernel, read by FlashMLA over the lengths it schedules its split-KV work on."""

from __future__ import annotations

from allocator_model.page_tables import FLASHMLA_PAGE, AttentionBackend, Mode
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from .checked import SM90, CheckedBackend, GraphBackend, minor
from .packages import (
    ATTENTION_DIR,
    ATTN,
    KV_INDICES_FILES,
    attention_utils,
    builders_package,
    pool_hooks,
    runner_modules,
)

MODULE = "sglang.srt.layers.attention.flashmla_backend"
FILE = ATTENTION_DIR + "flashmla_backend.py"


def modules(version: str) -> tuple[str, ...]:
    """The backend, its base class (FlashInfer's MLA backend, whose ``__init__`` it runs) and theirs, the utils
    and the kv-indices kernels' module (in the packages FA3's builders moved with), the pool's hooks and the
    runner's modules (``packages``)."""
    own = (MODULE, ATTN + "flashinfer_mla_backend", ATTN + "base_attn_backend", attention_utils(version))
    return own + (builders_package(version) + "kv_indices",) + pool_hooks(version) + runner_modules(version)


def modes(version: str) -> frozenset[Mode]:
    """Its draft extend is FlashInfer's MLA backend's before 0.5.16 (its draft-extend factory returns none
    [cite: flashmla-no-draft-extend])."""
    return frozenset(Mode) - {Mode.DRAFT_EXTEND} if minor(version) <= 15 else frozenset(Mode)


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
    modules,
    hardware="an SM90 (Hopper) GPU: FlashMLA's kernels are built for it",
    modes=modes,
)
