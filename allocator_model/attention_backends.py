"""The attention backends whose tables are checked, and what each one's builders do that the tables depend on:
the page its kernel takes, what a draft step publishes, whether its table holds tokens, whether one launch fills
every draft step's row and whether SGLang asserts those rows fit first."""

from __future__ import annotations

from fuzz.common.compat import StrEnum


class AttentionBackend(StrEnum):
    """SGLang's ``--attention-backend`` names, for the backends whose tables are checked."""

    FA3 = "fa3"
    TRTLLM_MHA = "trtllm_mha"
    FLASHMLA = "flashmla"
    TRTLLM_MLA = "trtllm_mla"
    TRITON = "triton"
    FLASHINFER = "flashinfer"
    # ``--attention-backend flashinfer`` on an MLA model: SGLang's registry builds ``FlashInferMLAAttnBackend`` for it
    # [cite: flashinfer-mla-on-mla-models], its own tables
    FLASHINFER_MLA = "flashinfer_mla"

    @property
    def label(self) -> str:
        """The backend as prose names it (FA3, FlashMLA), else its flag's value."""
        names = {"fa3": "FA3", "flashmla": "FlashMLA", "flashinfer": "FlashInfer", "flashinfer_mla": "FlashInfer MLA"}
        return names.get(str(self.value), str(self.value))

    @property
    def flag(self) -> str:
        """The ``--attention-backend`` value that runs it (FlashInfer MLA: ``flashinfer``, on an MLA model)."""
        return AttentionBackend.FLASHINFER.value if self is AttentionBackend.FLASHINFER_MLA else str(self.value)

    @property
    def fixed_page(self) -> int | None:
        """The page its builders and kernel take whatever the launch's (FlashMLA's ``PAGE_SIZE``, 64: SGLang sets
        ``--page-size 64`` for it), None where they follow the launch's page."""
        return FLASHMLA_PAGE if self is AttentionBackend.FLASHMLA else None

    @property
    def probe_page(self) -> int | None:
        """The page a probe of its builders runs at: its fixed page, or trtllm_mla's 64 (one it takes: at a small
        page its width pads to blocks of 4096 / page pages, a slow probe); None: any."""
        return FLASHMLA_PAGE if self in (AttentionBackend.FLASHMLA, AttentionBackend.TRTLLM_MLA) else None

    @property
    def draft_steps_publish_their_step(self) -> bool:
        """Whether a draft decode step s publishes ``seq + s + 1`` (FA3's, trtllm_mha's ``seqlen_offset``) rather
        than ``seq`` (the MLA backends' multi-step draft backends build each step's table from the batch's
        lengths, an inner decode view of it; FlashInfer MLA's steps plan its kernel over the batch's host lengths
        [cite: flashinfer-mla-draft-host-lengths])."""
        return self not in (AttentionBackend.FLASHMLA, AttentionBackend.TRTLLM_MLA, AttentionBackend.FLASHINFER_MLA)

    @property
    def counts_tokens(self) -> bool:
        """Whether its table holds one KV slot per token rather than one page per column (triton's and FlashInfer's
        draft kv_indices): its width and lengths are in tokens whatever the launch's page."""
        return self in DRAFT_KV_INDICES_BACKENDS

    @property
    def fills_every_draft_step(self) -> bool:
        """Whether its draft decode fills a row for each of the S draft steps in one launch (triton's and
        FlashInfer's ``generate_draft_decode_kv_indices``, over a grid of S steps), the last row written though no
        step reads it; the others build the S - 1 steps that run."""
        return self in DRAFT_KV_INDICES_BACKENDS


# The backends whose table is their multi-step draft's kv_indices, a row of token slots per draft step filled by
# ``generate_draft_decode_kv_indices`` in one launch (``GraphSizing.draft_kv_indices``).
DRAFT_KV_INDICES_BACKENDS = frozenset(
    {AttentionBackend.TRITON, AttentionBackend.FLASHINFER, AttentionBackend.FLASHINFER_MLA}
)
# Those whose multi-step draft asserts first that every step's slots fit its row [cite: flashinfer-draft-assert]
# [cite: flashinfer-mla-draft-assert].
DRAFT_ROWS_ASSERTED = frozenset({AttentionBackend.FLASHINFER, AttentionBackend.FLASHINFER_MLA})


FLASHMLA_PAGE = 64
# FlashMLA's table builder, ``create_flashmla_kv_indices_triton``: one program per block of 4096 tokens of the row
# (64 pages of 64 [cite: flashmla-grid-block]), masked by the published length alone.
FLASHMLA_BLOCK_TOKENS = 4096
# trtllm-gen's constraint on a table's pages: a multiple of 128 tokens' worth (``TRTLLM_BLOCK_CONSTRAINT``
# [cite: trtllm-gen-block-128]); trtllm_mla pads its width to it and to the builder's grid block alike.
TRTLLM_BLOCK_TOKENS = 128
