"""Where each checked backend's CUDA-graph builders live and how SGLang builds them (``GraphBackend``): the data
``attention`` runs them by."""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model.page_tables import AttentionBackend

from .attention_standins import SM90, SM100
from .context import Settings
from .releases import FA3_BACKEND, FLASHMLA_BACKEND, TRTLLM_MHA_BACKEND, TRTLLM_MLA_BACKEND


@dataclass(frozen=True)
class GraphBackend:
    """Where a backend's CUDA-graph builders live and how SGLang builds them: its module and class (the target's
    backend, and the draft's extend backend with ``skip_prefill=False``), the draft's multi-step class (one backend
    per draft step, ``attn_backends[step]``), the compute capability of the stand-in GPU it runs on; the release's
    modules it executes are the release's (``Release.attention[backend]``)."""

    backend: AttentionBackend
    module: str
    cls: str
    draft_steps_cls: str
    capability: tuple[int, int]
    mla: bool = False  # the backend serves MLA models only (its runner's model is one)
    # it names the CUDA device (or pinned host memory) for its buffers and asks torch.cuda for the GPU's properties:
    # its calls run on the stand-in GPU (``attention_standins.on_the_stand_in_gpu``)
    names_cuda: bool = False
    metadata: str = "forward_metadata"  # the backend's field holding its forward metadata after a replay
    table: str = "page_table"  # the field of its forward metadata that views the buffer the kernel reads
    # where the length the kernel reads is published: the forward metadata's field ``lengths``; or, for a kernel
    # whose lengths are the batch's own, the lengths the backend schedules its split-KV work over (FlashMLA's
    # ``get_mla_metadata``, answered by ``attention_standins.MLAMetadata``)
    lengths: str = "cache_seqlens_int32"
    scheduled_lengths: bool = False
    # where the metadata's ``lengths`` is None, the decode kernel reads the batch's ``seq_lens`` (trtllm_mla's plain
    # decode before 0.5.17 [cite: trtllm-mla-decode-batch-lengths])
    batch_lengths_if_none: bool = False

    @property
    def settings(self) -> Settings:
        return Settings(attention_backend=self.backend.value)


GRAPH_BACKENDS: dict[AttentionBackend, GraphBackend] = {
    AttentionBackend.FA3: GraphBackend(
        AttentionBackend.FA3,
        FA3_BACKEND,
        "FlashAttentionBackend",
        "FlashAttentionMultiStepBackend",
        SM90,
    ),
    AttentionBackend.TRTLLM_MHA: GraphBackend(
        AttentionBackend.TRTLLM_MHA,
        TRTLLM_MHA_BACKEND,
        "TRTLLMHAAttnBackend",
        "TRTLLMHAAttnMultiStepDraftBackend",
        SM90,
    ),
    AttentionBackend.FLASHMLA: GraphBackend(
        AttentionBackend.FLASHMLA,
        FLASHMLA_BACKEND,
        "FlashMLABackend",
        "FlashMLAMultiStepDraftBackend",
        SM90,
        mla=True,
        names_cuda=True,
        table="block_kv_indices",
        scheduled_lengths=True,
    ),
    AttentionBackend.TRTLLM_MLA: GraphBackend(
        AttentionBackend.TRTLLM_MLA,
        TRTLLM_MLA_BACKEND,
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
}
