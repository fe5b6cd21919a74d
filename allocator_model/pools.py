"""KV pool kinds: the deployment dimension that decides a row's width and the allocator's page.

SGLang builds a different ``req_to_token`` pool and token-to-KV allocator
depending on the model and a few flags (``mem_cache/kv_cache_configurator.py``).
Two numbers matter here, and they differ by kind (read in the released
wheels; each ``[cite: KEY]`` is a release, file and line in
``allocator_model.citations``):

| kind              | selected by                                             | row width W         | alloc page |
|-------------------|---------------------------------------------------------|---------------------|------------|
| standard          | MHA/MLA models, non-unified hybrid Mamba, PD decode     | C + extra           | P * dcp    |
| swa               | hybrid sliding-window models (SWA, PureSWA, NPU, DSV4)  | C + extra           | P          |
| hisparse          | ``--enable-hisparse`` (non-SWA)                         | C + extra           | P          |
| unified-mamba     | ``--enable-unified-memory``, Mamba / linear attention   | C + 4 + D upstream  | P * dcp    |
| unified-mamba-swa | ``--enable-unified-memory``, Mamba + SWA (0.5.19+)      | C + 4 + D upstream  | P          |
| unified-swa       | ``--enable-unified-memory``, hybrid SWA                 | C + 4 + D to 0.5.20 | P          |

* Row widths: ``_build_req_to_token_pool`` sizes every standard row with
  ``get_req_to_token_extra_context_len()`` [cite: standard-row-extra]; the
  unified builders pass ``extra_max_context_len = 4 +
  speculative_num_draft_tokens`` (the launch D, not Dmax; no reserve, no page
  term): ``_init_unified_mamba_pools`` [cite: unified-mamba-row-extra],
  ``_init_unified_mamba_swa_pools`` [cite: unified-mamba-swa-row-extra], and
  ``_init_unified_swa_pools`` up to 0.5.20 [cite: unified-swa-row-extra]
  (from 0.5.21 it calls ``_build_req_to_token_pool``).
  ``unified_memory_pool.py`` makes the row ``model_context_len +
  extra_max_context_len`` wide [cite: unified-row-width].
* Allocator pages: ``_build_token_to_kv_pool_allocator``
  [cite: allocator-builder]: the paged allocator at P * dcp
  [cite: paged-allocator-page-dcp]; ``SWATokenToKVPoolAllocator`` /
  ``PureSWA...`` at P [cite: swa-allocator-page];
  ``HiSparseTokenToKVPoolAllocator`` at P [cite: hisparse-allocator-page];
  ``UnifiedMambaTokenToKVPoolAllocator`` at P * dcp
  (``allocator/unified_mamba.py``, 0.5.20+; before, DCP was refused)
  [cite: unified-mamba-allocator-page-dcp]; the unified SWA allocators at P
  (``allocator/unified_hybrid_swa.py``) [cite: unified-swa-allocator-page].
  Decode rounds with the real allocator's page
  [cite: decode-rounds-with-allocator-page].
  A real target reads every kind's page out of its own code
  (``fuzz.engines.sglang.real.allocators``); ``pool_alloc_page`` is the twin held
  equal to it (``tests/test_allocator_pages.py``, ``fidelity``).
* Launch rules (``arg_groups/kv_cache_hook.py``): unified memory takes only
  algorithms of ``Revision.unified_spec`` (0.5.23: DSPARK, EAGLE, EAGLE3,
  DFLASH [cite: unified-spec-algorithms]), topk 1 [cite: unified-topk-1],
  and DCP > 1 only for an MLA model that is not hybrid SWA
  [cite: unified-dcp-mla-only]: never for the unified SWA kinds.  HiSparse
  under speculation needs topk 1 (``hisparse_hook.py``)
  [cite: hisparse-spec-topk-1].

Not modeled as kinds: page-interleave (``--enable-kv-cache-sharding``) is
PD-prefill only (``kv_shard_hook.py``) [cite: kv-shard-prefill-only], so it
never decodes; the MLX
stub is not a CUDA deployment.
"""

from __future__ import annotations

from fuzz.common.compat import StrEnum

from .numeric import Int


class KVPool(StrEnum):
    STANDARD = "standard"
    SWA = "swa"
    HISPARSE = "hisparse"
    UNIFIED_MAMBA = "unified-mamba"
    UNIFIED_MAMBA_SWA = "unified-mamba-swa"
    UNIFIED_SWA = "unified-swa"

    @property
    def variant(self) -> str:
        """The ``@variant`` its bug groups carry (``paged@unified-mamba``): none for the standard pool."""
        return "" if self is KVPool.STANDARD else self.value

    @property
    def unified(self) -> bool:
        """Built under ``--enable-unified-memory`` (one pool for KV and state)."""
        return self in UNIFIED

    @property
    def bare_page(self) -> bool:
        """The allocator keeps the bare page_size under DCP (not page_size * attn_dcp_size)."""
        return self in BARE_PAGE

    @property
    def refuses_dcp(self) -> bool:
        """DCP > 1 is refused at launch (unified memory with a hybrid SWA model)."""
        return self in (KVPool.UNIFIED_MAMBA_SWA, KVPool.UNIFIED_SWA)

    @property
    def needs_topk_1(self) -> bool:
        """Speculation is accepted with topk 1 only (unified memory; HiSparse)."""
        return self.unified or self is KVPool.HISPARSE

    @property
    def flags(self) -> str:
        """How an SGLang user gets this kind: launch flags and the kind of model."""
        return FLAGS[self]

    @property
    def builder(self) -> str:
        """The ``KVCacheConfigurator`` method that sizes this kind's rows (``kv_cache_configurator.py``)."""
        return ROW_BUILDERS.get(self, ROW_BUILDERS[KVPool.STANDARD])


UNIFIED = frozenset({KVPool.UNIFIED_MAMBA, KVPool.UNIFIED_MAMBA_SWA, KVPool.UNIFIED_SWA})
BARE_PAGE = frozenset({KVPool.SWA, KVPool.HISPARSE, KVPool.UNIFIED_MAMBA_SWA, KVPool.UNIFIED_SWA})
FLAGS: dict[KVPool, str] = {
    KVPool.STANDARD: "an MHA/MLA model (the default pool)",
    KVPool.SWA: "a hybrid sliding-window model",
    KVPool.HISPARSE: "--enable-hisparse",
    KVPool.UNIFIED_MAMBA: "--enable-unified-memory with a Mamba/linear-attention model",
    KVPool.UNIFIED_MAMBA_SWA: "--enable-unified-memory with a Mamba + sliding-window model",
    KVPool.UNIFIED_SWA: "--enable-unified-memory with a hybrid sliding-window model",
}

# Algorithms unified memory accepts (0.5.23, ``arg_groups/kv_cache_hook.py``) [cite: unified-spec-algorithms]; older
# releases accept fewer (``Revision.unified_spec``).
UNIFIED_SPEC = frozenset({"DSPARK", "EAGLE", "EAGLE3", "DFLASH"})

ROW_BUILDERS: dict[KVPool, str] = {
    KVPool.STANDARD: "_build_req_to_token_pool",
    KVPool.UNIFIED_MAMBA: "_init_unified_mamba_pools",
    KVPool.UNIFIED_MAMBA_SWA: "_init_unified_mamba_swa_pools",
    KVPool.UNIFIED_SWA: "_init_unified_swa_pools",
}

# The extra of a unified builder's row: 4 + the launch draft count (``_init_unified_*_pools``).
UNIFIED_BASE_EXTRA = 4


def pool_alloc_page(kind: KVPool, page_size: Int, attn_dcp_size: Int) -> Int:
    """P_a, the page the kind's allocator hands out: page_size for a bare-page kind, else page_size * attn_dcp_size."""
    return page_size if kind.bare_page else page_size * attn_dcp_size


def unified_row_extra(num_draft_tokens: Int) -> Int:
    """A unified builder's ``extra_max_context_len``: 4 + D (launch D, 0 without speculation); W = C + this."""
    return UNIFIED_BASE_EXTRA + num_draft_tokens
