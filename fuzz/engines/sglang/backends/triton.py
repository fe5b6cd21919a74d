"""triton (``--attention-backend triton``): its draft decode's kv_indices, one row per draft step, each row
``draft_kv_indices_buffer_width(max_bs, topk, C)`` slots sized from the model's context length
[cite: triton-draft-width] [cite: triton-context-len], filled for every step in one launch of
``generate_draft_decode_kv_indices`` (each request's ``seq + s + 1`` slots, masked by that length alone
[cite: triton-draft-store]), read by triton's decode
kernel up to the ``kv_indptr`` the kernel published.

Its target's buffers (decode, verify, draft extend) are flat, ``max_num_tokens`` x C slots: not this table."""

from __future__ import annotations

from typing import Any

from allocator_model.page_tables import AttentionBackend
from fuzz.tables import CodeRef

from ..graph_tables import GraphTable
from .checked import SM90, CheckedBackend, GraphBackend
from .packages import ATTENTION_DIR, SGLANG_REPO_PATH

MODULE = "sglang.srt.layers.attention.triton_backend"
FILE = ATTENTION_DIR + "triton_backend.py"
SPEC_UTILS = SGLANG_REPO_PATH + "sglang/srt/speculative/spec_utils.py"
DRAFT_KERNEL = "generate_draft_decode_kv_indices"
DRAFT_KERNEL_FILES = (  # srt/speculative/triton_ops/ to 0.5.15, kernels/ops/speculative/ after
    SGLANG_REPO_PATH + "sglang/srt/speculative/triton_ops/cache_locs.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/speculative/cache_locs.py",
)
# Its kv_indices hold a slot per token: every page a launch takes (its width and lengths are the page's tokens).
PAGES = tuple(range(1, 257))

# How one request reaches a multi-step draft's rows, which hold the whole batch (the launch line's note).
GRAPH_OFF = (
    "with the decode CUDA graph off (eager: batch_size * topk * C slots; --disable-cuda-graph, from 0.5.16 a "
    "deprecated spelling of --cuda-graph-backend-decode=disabled); under CUDA graph they are max_bs * topk * C, "
    "passed by a full bucket of requests at the limit"
)

# Its base class, the draft kernel and the width's function, the split-KV kernel a replay runs, and the attention
# kernels its constructor reads, where the backend imports them from (each release's list is its record's).
IMPORTS = (
    "AttentionBackend",
    DRAFT_KERNEL,
    "draft_kv_indices_buffer_width",
    "draft_kv_indices_used_len",
    "get_num_kv_splits_triton",
    # the kernels its constructor wraps (``torch.compiler.disable``) and sizes its state from: their modules ask the
    # GPU for its capability and SM count
    "decode_attention_fwd",
    "extend_attention_fwd",
    "verify_splitkv_fwd",
    "verify_shared_kv_fwd",
)


def draft_rows_table(backend: AttentionBackend, file: str, cls: str, draft_steps_cls: str, **fields: Any) -> GraphTable:
    """A multi-step draft's kv_indices as a checked table (triton's, FlashInfer's): its rows sized by the multi-step
    backend's ``init_cuda_graph_state`` through ``draft_kv_indices_buffer_width`` from the step backend's context
    length, filled by the draft kernel its ``common_template`` launches, read by the step backend's decode kernel to
    its ``kv_indptr``; ``fields``: the table's others (``models``, ``topk_1_only``, ``lengths``)."""
    return GraphTable(
        backend,
        width_code=(
            CodeRef(file, f"{draft_steps_cls}.init_cuda_graph_state"),
            CodeRef(SPEC_UTILS, "draft_kv_indices_buffer_width"),
            CodeRef(file, f"{cls}.__init__"),
        ),
        writers=(
            *(CodeRef(f, DRAFT_KERNEL) for f in DRAFT_KERNEL_FILES),
            CodeRef(file, f"{draft_steps_cls}.common_template"),
        ),
        readers=(CodeRef(file, f"{cls}.forward_decode"),),
        pages=PAGES,
        draft_steps_only=True,
        **{"lengths": "kv_indptr", **fields},
    )


BACKEND = CheckedBackend(
    draft_rows_table(AttentionBackend.TRITON, FILE, "TritonAttnBackend", "TritonMultiStepDraftBackend"),
    GraphBackend(
        AttentionBackend.TRITON,
        MODULE,
        "TritonAttnBackend",
        "TritonMultiStepDraftBackend",
        SM90,
        names_cuda=True,  # its kernels' modules ask torch.cuda for the GPU's capability and SM count
        metadata="forward_metadata",
        table="kv_indices",
        lengths="kv_indptr",
    ),
    IMPORTS,
    hardware="any CUDA GPU triton compiles for (the stand-in: an SM90 (Hopper) GPU)",
    # its rows hold the whole batch (batch_size * topk * C slots eager, max_bs * topk * C under CUDA graph): the line
    # boots as printed on every release, the note says how one request reaches the rows the builds ran
    launch_note="one request at the limit overflows the draft's kv_indices rows " + GRAPH_OFF,
)
