"""Where each checked backend's CUDA-graph builders live and how SGLang builds them (``GraphBackend``): the data
``attention`` runs them by."""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model.page_tables import AttentionBackend

from .attention_standins import SM90
from .context import Settings
from .releases import FA3_BACKEND, FLASHMLA_BACKEND, TRTLLM_MHA_BACKEND


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
    table: str = "page_table"  # the field of its forward metadata that views the buffer the kernel reads
    # where the length the kernel reads is published: the forward metadata's ``cache_seqlens_int32``; or, for a
    # kernel whose lengths are the batch's own, the lengths the backend schedules its split-KV work over (FlashMLA's
    # ``get_mla_metadata``, answered by ``attention_standins.MLAMetadata``)
    scheduled_lengths: bool = False

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
}
