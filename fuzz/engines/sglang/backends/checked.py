"""What this engine knows of a checked attention backend, in one value: its CUDA-graph page table (``GraphTable``:
where SGLang sizes, fills and reads it, which launches run it), how SGLang builds its builders (``GraphBackend``),
the names whose SGLang code they run, and the GPU its kernels need (the modes its own builders run in a release are
the release record's)."""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model.page_tables import AttentionBackend

from ..graph_tables import GraphTable

# The GPU of the stand-in hardware: SM90 (an H100).  FA3's (SGLang asserts SM80 without MLA, or SM90, when it builds
# the backend [cite: fa3-requires-sm80-or-sm90]); trtllm_mha's too, where it decodes with XQA (its graph page-table
# builders are the same on SM100; what differs is the kernel, XQA or trtllm-gen, and trtllm-gen's scratch).
SM90 = (9, 0)
# trtllm_mla's: SGLang refuses it below Blackwell [cite: trtllm-mla-requires-sm100] (a B200).
SM100 = (10, 0)


@dataclass(frozen=True)
class GraphBackend:
    """Where a backend's CUDA-graph builders live and how SGLang builds them: its module and class (the target's
    backend, and the draft's extend backend with ``skip_prefill=False``), the draft's multi-step class (one backend
    per draft step, ``attn_backends[step]``), the compute capability of the stand-in GPU it runs on."""

    backend: AttentionBackend
    module: str
    cls: str
    draft_steps_cls: str
    capability: tuple[int, int]
    mla: bool = False  # the backend serves MLA models only (its runner's model is one)
    # it names the CUDA device (or pinned host memory) for its buffers and asks torch.cuda for the GPU's properties:
    # its calls run on the stand-in GPU (``attention_standins.on_the_stand_in_gpu``)
    names_cuda: bool = False
    # the backend's field holding its forward metadata after a replay (dotted: a path to it, a number an index)
    metadata: str = "forward_metadata"
    table: str = "page_table"  # the field of its forward metadata that views the buffer the kernel reads
    # where the length the kernel reads is published: the forward metadata's field ``lengths``; or, for a kernel
    # planned over lengths of its own (``scheduled_lengths``), what the backend schedules its work over: FlashMLA's
    # split-KV schedule (``get_mla_metadata``, answered by ``attention_standins.MLAMetadata``), FlashInfer MLA's host
    # plan (its wrapper's field ``lengths``, ``flashinfer_standins.MLAWrapper.planned``)
    lengths: str = "cache_seqlens_int32"
    scheduled_lengths: bool = False
    # where the metadata's ``lengths`` is None, the decode kernel reads the batch's ``seq_lens`` (trtllm_mla's plain
    # decode before 0.5.17 [cite: trtllm-mla-decode-batch-lengths])
    batch_lengths_if_none: bool = False


# The model runner a backend's constructor is handed, and what the runtime's stand-in of it builds from the release's
# own code (its KV-index translator and what that imports): the modules where the runner imports them from are
# executed with each backend's (where the release has them).
RUNNER = "sglang.srt.model_executor.model_runner"
RUNNER_IMPORTS = ("KVIndexTranslator", "fused_draft_host_allocator", "IdSpace")


@dataclass(frozen=True)
class CheckedBackend:
    """One checked backend: its table, its builders, ``imports`` (the names its builders need SGLang's own code of:
    the modules they are imported from, along each import to the module that defines them, are executed with the
    backend's; where a release keeps them is its record's ``attention_modules``, generated from its wheel),
    and ``hardware`` (the GPU a launch line names for its kernels); ``launch_note``: what the line notes where the
    table's width depends on the batch (a bucket of one is what the builds ran)."""

    table: GraphTable
    builders: GraphBackend
    imports: tuple[str, ...]
    hardware: str
    # what a launch line notes of running the builds as they ran here (each request alone in a bucket of one)
    launch_note: str | None = None

    def __post_init__(self) -> None:
        if self.table.backend is not self.builders.backend:
            raise ValueError(f"{self.table.name}'s builders are {self.builders.backend.label}'s")

    @property
    def backend(self) -> AttentionBackend:
        return self.table.backend
