"""A backend's CUDA-graph page table as this engine checks it (``GraphTable``): each checked backend declares its
own (``backends``); the tables' behaviour (their cases, accesses, closed form and proof) is ``page_tables``'."""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.page_tables import JUDGED_LAUNCHES, AttentionBackend, Build
from allocator_model.pools import KVPool
from fuzz.tables import CodeRef

NEXT_ROW = "the next request of the batch (its graph row), or past the buffer for the bucket's last row"
NEXT_STEP_ROW = (
    "the next draft step's row (its first requests' slots; on a GPU the two stores race), or past the buffer for "
    "the last step's"
)
# Whose pages a builder copies from past the request's req_to_token row (its flat layout: the next row's).
FOREIGN = "another request's req_to_token row (the next one, for a read past its own): KV pages the kernel attends over"


@dataclass(frozen=True)
class GraphTable:
    """One backend's CUDA-graph page table, as this engine checks it: its name, where SGLang sizes, fills and
    reads it, and which launches run it (``takes``: its pages, topk 1 where the backend refuses more, the draft's
    multi-step launches for a table of its steps)."""

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
    # the table holds the draft's decode steps alone (triton's multi-step kv_indices): judged on the EAGLE family's
    # launches with S >= 2 (SGLang builds no multi-step draft backend for one step)
    draft_steps_only: bool = False
    lengths: str = "cache_seqlens"  # SGLang's name of the lengths its kernel reads each row to
    # the models its builders serve, where the backend's flag runs another class for others (said in every verdict
    # on the table: a clean one covers these alone); "" for all the flag serves
    models: str = ""

    @property
    def name(self) -> str:
        return f"{self.backend.value}_draft_kv_indices" if self.draft_steps_only else f"{self.backend.value}_page_table"

    @property
    def kernel(self) -> str:
        return f"{self.backend.label}'s kernel"

    @property
    def kernel_kind(self) -> str:
        """What the reading kernel is written in (it runs on the GPU alone: never here)."""
        return "triton" if self.backend is AttentionBackend.TRITON else "CUDA"

    def next_row(self, b: Build) -> str:
        """Whose the cells past ``b``'s row are: the next batch row (past the buffer for the bucket's last); on a
        table of draft steps, the next step's row (past the buffer for the last step)."""
        if self.draft_steps_only:
            return NEXT_STEP_ROW
        return NEXT_ROW

    @property
    def coverage(self) -> str:
        """The launches it is judged on, as a verdict says it (``takes``, and ``page_tables.judged``)."""
        listed = ", ".join(map(str, self.pages))
        pages = f"page {self.pages[0]}-{self.pages[-1]}" if len(self.pages) > 8 else f"page {listed}"
        launches = DRAFT_STEP_LAUNCHES if self.draft_steps_only else JUDGED_LAUNCHES
        return f"the standard pool without DCP, {pages}, {launches}" + (f", {self.models}" if self.models else "")

    def takes(self, cfg: ServingConfig) -> bool:
        """Whether the table is judged on ``cfg``: a standard pool without decode context parallelism (DCP runs the
        MLA backends; unified memory translates the tables through its own map), at a page the backend keeps, at a
        topk it accepts."""
        standard = cfg.kv_pool is KVPool.STANDARD and cfg.attn_dcp_size == 1
        topk = not self.topk_1_only or cfg.speculative_algorithm is None or cfg.topk == 1
        return standard and cfg.page_size in self.pages and topk and (not self.draft_steps_only or draft_steps(cfg))


def draft_steps(cfg: ServingConfig) -> bool:
    """Whether ``cfg`` runs a multi-step draft decode: the EAGLE family at S >= 2 steps."""
    return cfg.speculative_algorithm in algo.EAGLE_FAMILY and (cfg.speculative_num_steps or 0) >= 2


DRAFT_STEP_LAUNCHES = "the EAGLE family's draft decode steps (S >= 2) at topk 1"
