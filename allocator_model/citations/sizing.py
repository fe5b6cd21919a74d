"""Citations: the sizing functions, the pools and the launch rules."""

from __future__ import annotations

from .base import (
    _ALLOCATOR_BASE,
    _COMMON,
    _CONFIGURATOR,
    _DFLASH_INFO,
    _DFLASH_INFO_V2,
    _EAGLE_INFO_V2,
    _EAGLE_TREE_ASSERT_V2,
    _EAGLE_UTILS,
    _KV_CACHE_HOOK,
    _MEMORY_POOL,
    _MIXIN,
    _NGRAM_INFO,
    _OVERRIDES,
    _PAGED,
    _PAGED_CLAMP,
    _SCHEDULER,
    _SERVER_ARGS,
    _SIZING,
    _SPEC_HOOK,
    _SPEC_INFO,
    _SRT,
    _UNIFIED_EXTRA,
    _UNIFIED_POOL,
    Cite,
)

FACTS: dict[str, tuple[Cite, ...]] = {
    # -- the sizing functions (mem_cache/common.py to 0.5.15, allocation_sizing.py from 0.5.16) --------------
    # The three sizing functions, together (0.5.13 is the first release with all three).
    "common-sizing-functions": (
        Cite("0.5.13", _COMMON, "def get_alloc_len_per_decode"),
        Cite("0.5.14", _COMMON, "def get_alloc_len_per_decode"),
        Cite("0.5.15", _COMMON, "def get_alloc_len_per_decode"),
    ),
    # L: max(S * K, Dmax), with the page-duplicated tree term.
    "alloc-len-per-decode": (
        Cite("0.5.13", _COMMON, "def get_alloc_len_per_decode", whole=True),
        Cite("0.5.15", _COMMON, "def get_alloc_len_per_decode", whole=True),
    ),
    # When L takes the tree term: 0.5.13 asks page and topk only; 0.5.15 also ``has_draft_kv``.
    "tree-term-condition": (
        Cite("0.5.13", _COMMON, "if page_size == 1 or spec_topk == 1:"),
        Cite("0.5.15", _COMMON, "not spec_algo.has_draft_kv()"),
    ),
    # The row headroom 4 + Dmax, raised to R only when spec is on, page_size > 1 and topk > 1.
    "common-headroom": (
        Cite("0.5.13", _COMMON, "def get_req_to_token_extra_context_len", whole=True),
        Cite("0.5.15", _COMMON, "def get_req_to_token_extra_context_len", whole=True),
    ),
    # The sizing's page is server_args.page_size alone (#35424).
    "alloc-page-server-page-size": (Cite("0.5.15", _COMMON, "page_size = server_args.page_size"),),
    # The covered headroom adds page - 1 to the reserve.
    "headroom-page-tail": (Cite("0.5.16", _SIZING, "kv_allocated_len is page-aligned"),),
    # UNO without speculative_num_draft_tokens raises.
    "uno-needs-draft-tokens": (Cite("0.5.23", _SIZING, "if spec_algo.is_uno():"),),
    # -- the pool builders (model_runner_kv_cache_mixin.py to 0.5.15, kv_cache_configurator.py from 0.5.16) --
    # The standard row: context_len + get_req_to_token_extra_context_len().
    "standard-row-extra": (Cite("0.5.23", _CONFIGURATOR, "def _build_req_to_token_pool"),),
    # The unified Mamba builder's row headroom: 4 + speculative_num_draft_tokens (the launch D).
    "unified-mamba-row-extra": (
        Cite("0.5.15", _MIXIN, "extra_max_context_len = 4"),
        Cite("0.5.23", _CONFIGURATOR, _UNIFIED_EXTRA),
    ),
    # The unified Mamba + SWA builder's row headroom: 4 + D.
    "unified-mamba-swa-row-extra": (Cite("0.5.23", _CONFIGURATOR, _UNIFIED_EXTRA, nth=2),),
    # The unified SWA builder's row headroom: 4 + D (to 0.5.20; from 0.5.21 it builds the standard row).
    "unified-swa-row-extra": (
        Cite("0.5.15", _MIXIN, "extra_max_context_len = 4", nth=2),
        Cite("0.5.20", _CONFIGURATOR, "extra_max_context_len = 4", nth=3),
    ),
    # The unified pool's row is model_context_len + extra_max_context_len wide.
    "unified-row-width": (Cite("0.5.23", _UNIFIED_POOL, "max_context_len=model_context_len + extra_max_context_len"),),
    # The token-to-KV allocator of the standard, SWA and HiSparse kinds.
    "allocator-builder": (
        Cite("0.5.16", _CONFIGURATOR, "def _build_token_to_kv_pool_allocator"),
        Cite("0.5.23", _CONFIGURATOR, "def _build_token_to_kv_pool_allocator", whole=True),
    ),
    # The paged allocator's page is page_size * dcp_size.
    "paged-allocator-page-dcp": (
        Cite("0.5.15", _MIXIN, "PagedTokenToKVPoolAllocator(", nth=2),
        Cite("0.5.23", _CONFIGURATOR, "paged_allocator_cls = ("),
    ),
    # SWATokenToKVPoolAllocator / PureSWATokenToKVPoolAllocator at the bare page_size.
    "swa-allocator-page": (
        Cite("0.5.23", _CONFIGURATOR, "elif self.is_hybrid_swa and sizes.full_max_total_num_tokens"),
    ),
    # HiSparseTokenToKVPoolAllocator at the bare page_size.
    "hisparse-allocator-page": (Cite("0.5.23", _CONFIGURATOR, "if get_memory().enable_hisparse:"),),
    # UnifiedMambaTokenToKVPoolAllocator widens its page by the DCP size.
    "unified-mamba-allocator-page-dcp": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_mamba.py", "dcp_size = get_parallel().attn_dcp_size"),
    ),
    # The unified SWA allocators keep the bare page_size.
    "unified-swa-allocator-page": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_hybrid_swa.py", "self.page_size = page_size"),
    ),
    # -- launch rules --------------------------------------------------------------------------------------
    # The speculative algorithms unified memory accepts: none (0.5.15-0.5.17), DSPARK (0.5.18-0.5.21), then
    # DSPARK, EAGLE, EAGLE3 and DFLASH.
    "unified-spec-algorithms": (
        Cite("0.5.15", _SERVER_ARGS, "assert self.speculative_algorithm is None, (", whole=True),
        Cite("0.5.16", _SERVER_ARGS, "assert self.speculative_algorithm is None, (", whole=True),
        Cite("0.5.21", _KV_CACHE_HOOK, 'assert cfg.speculative_algorithm in (None, "DSPARK"), (', whole=True),
        Cite("0.5.23", _KV_CACHE_HOOK, "assert cfg.speculative_algorithm in (", whole=True),
    ),
    # Unified memory under DCP takes the DCP-aware MLA backends only, and with speculation not flashinfer: the
    # rest (trtllm_mla, cutedsl_mla; tokenspeed_mla to 0.5.22) run at page 32 or 64.
    "unified-dcp-spec-backends": (
        Cite("0.5.20", _KV_CACHE_HOOK, 'dcp_allowed = {"flashinfer", "trtllm_mla", "cutedsl_mla", "tokenspeed_mla"}'),
        Cite("0.5.21", _SRT + "arg_groups/overrides.py", "TensorRT-LLM MLA only supports page_size of 32 or 64"),
        Cite("0.5.22", _SRT + "arg_groups/overrides.py", "tokenspeed_mla only supports page_size of 32 or 64"),
        Cite("0.5.23", _KV_CACHE_HOOK, "def _assert_spec_verify_backends(", whole=True),
    ),
    # HiSparse refuses adaptive speculation (its swap state is sized statically).
    "hisparse-refuses-adaptive": (
        Cite("0.5.22", _SRT + "arg_groups/hisparse_hook.py", '"--speculative-adaptive is not supported."'),
        Cite("0.5.23", _SRT + "arg_groups/hisparse_hook.py", '"--speculative-adaptive is not supported."'),
    ),
    # UNO's linear mode (topk 1) runs one draft step.
    "uno-linear-steps": (
        Cite("0.5.20", _SRT + "arg_groups/speculative_hook.py", 'logger.warning("UNO uses %s=1; overriding %s."'),
        Cite("0.5.23", _SRT + "arg_groups/speculative_hook.py", 'logger.warning("UNO uses %s=1; overriding %s."'),
    ),
    # Unified memory takes a linear draft chain only (topk 1).
    "unified-topk-1": (
        Cite("0.5.23", _KV_CACHE_HOOK, "assert cfg.speculative_eagle_topk in (None, 1), (", whole=True),
    ),
    # Unified memory with DCP > 1: MLA models only, never hybrid SWA.
    # 0.5.22+: a mamba-hybrid host under unified memory needs an EAGLE/DFLASH draft fused, and DCP declines fusion.
    "unified-mamba-draft-must-fuse": (
        Cite("0.5.23", _CONFIGURATOR, "--enable-unified-memory + EAGLE/EAGLE3/DFLASH on a mamba-hybrid"),
    ),
    "dcp-declines-draft-fusion": (Cite("0.5.23", _CONFIGURATOR, "if get_parallel().attn_dcp_size > 1:"),),
    "spec-is-eagle": (Cite("0.5.23", _SPEC_INFO, "def is_eagle(self) -> bool:"),),
    "unified-dcp-mla-only": (Cite("0.5.23", _KV_CACHE_HOOK, "def _validate_unified_memory_dcp"),),
    # Unified memory requires dcp_size 1 (to 0.5.19).
    "unified-dcp-refused": (
        Cite("0.5.15", _SERVER_ARGS, "assert self.dcp_size == 1, ("),
        Cite("0.5.18", _SERVER_ARGS, "assert self.dcp_size == 1, (", whole=True),
        Cite("0.5.19", _KV_CACHE_HOOK, "assert cfg.dcp_size == 1, ("),
    ),
    # The dcp_size server argument (absent from 0.5.14).
    "dcp-size-argument": (Cite("0.5.15", _SERVER_ARGS, "dcp_size: A["),),
    # HiSparse under speculation needs topk 1.
    "hisparse-spec-topk-1": (
        Cite(
            "0.5.23",
            _SRT + "arg_groups/hisparse_hook.py",
            "if enable_spec and (cfg.speculative_eagle_topk or 1) != 1:",
            whole=True,
        ),
    ),
    # Page-interleave (--enable-kv-cache-sharding) is PD-prefill only.
    "kv-shard-prefill-only": (
        Cite("0.5.23", _SRT + "arg_groups/kv_shard_hook.py", 'if cfg.disaggregation_mode != "prefill":', whole=True),
    ),
    # Adaptive spec resolves speculative_num_steps to the middle candidate ...
    "adaptive-launch-steps": (
        Cite(
            "0.5.23",
            _SRT + "arg_groups/speculative_hook.py",
            "if cfg.speculative_num_steps is None:",
            nth=5,
            whole=True,
        ),
    ),
    # ... and its step slot starts there.
    "adaptive-initial-steps": (
        Cite(
            "0.5.23",
            _SRT + "speculative/adaptive_spec_params.py",
            "if initial_steps in self.candidate_steps:",
            whole=True,
        ),
    ),
    # -- the deployments a user gets by default (``defaults``: what a representative case moves toward) --------
    # EAGLE's auto-chosen (S, K, D) per target architecture.
    "eagle-auto-params": (
        Cite("0.5.18", _SPEC_HOOK, "def _auto_choose_speculative_params", whole=True),
        Cite("0.5.23", _SPEC_HOOK, "def _auto_choose_speculative_params", whole=True),
    ),
    # DSPARK's default gamma ...
    "dspark-default-gamma": (
        Cite("0.5.18", _SRT + "speculative/dspark_components/dspark_config.py", "DEFAULT_DSPARK_GAMMA = 7"),
        Cite("0.5.23", _SRT + "speculative/dspark_components/dspark_config.py", "DEFAULT_DSPARK_GAMMA = 7"),
    ),
    # ... and its D, gamma + 1.
    "dspark-draft-tokens": (
        Cite("0.5.18", _SPEC_HOOK, "verify_window = int(gamma) + 1"),
        Cite("0.5.23", _SPEC_HOOK, "verify_window = int(gamma) + 1"),
    ),
    # DFLASH's default block size (its D) where the draft's config gives none.
    "dflash-default-block-size": (
        Cite("0.5.18", _SPEC_HOOK, "inferred_block_size = 16"),
        Cite("0.5.23", _SPEC_HOOK, "inferred_block_size = 16"),
    ),
    # The page where no backend forces one: 1 (64 on MUSA and ROCm's 5-D layout, not CUDA deployments).
    "page-size-default": (
        Cite("0.5.18", _OVERRIDES, "def _page_size_default", whole=True),
        Cite("0.5.23", _OVERRIDES, "def _page_size_default", whole=True),
    ),
    # The pages the MLA backends and TRT-LLM's force.
    "backend-page-sizes": (
        Cite("0.5.18", _OVERRIDES, "def _mla_backend_page_constraints", whole=True),
        Cite("0.5.23", _OVERRIDES, "def _mla_backend_page_constraints", whole=True),
    ),
    # FA4's page for non-MLA models on SM100.
    "fa4-page-size": (
        Cite("0.5.18", _OVERRIDES, "def _fa4_page_constraint", whole=True),
        Cite("0.5.23", _OVERRIDES, "def _fa4_page_constraint", whole=True),
    ),
    # The overlap scheduler is on unless --disable-overlap-schedule.
    "overlap-default-on": (
        Cite("0.5.18", _SERVER_ARGS, "disable_overlap_schedule: A[", whole=True),
        Cite("0.5.23", _SRT + "arg_groups/fields/schedule.py", "disable_overlap_schedule: A[", whole=True),
    ),
    # -- speculative workers (0.5.13's create_worker) and their enum -----------------------------------------
    "spec-algorithms-enum": (Cite("0.5.15", _SPEC_INFO, "DFLASH = auto()"),),
    # EAGLE, EAGLE3 and STANDALONE always run the v2 worker.
    "spec-v2-workers": (Cite("0.5.13", _SPEC_INFO, "always use the V2 worker"),),
    # DFLASH and FROZEN_KV_MTP refuse overlap and run v1 workers.
    "dflash-frozen-kv-mtp-v1-workers": (
        Cite("0.5.13", _SPEC_INFO, "enable_overlap = not server_args.disable_overlap_schedule"),
    ),
    # NGRAM refuses overlap and runs a v1 worker.
    "ngram-v1-worker": (Cite("0.5.13", _SPEC_INFO, "elif self.is_ngram():", whole=True),),
    # v1 verify allocates exactly D at seq_len ...
    "ngram-v1-verify-alloc": (Cite("0.5.13", _NGRAM_INFO, "def prepare_for_verify("),),
    "dflash-v1-verify-alloc": (Cite("0.5.13", _DFLASH_INFO, "def prepare_for_verify("),),
    # ... and sets kv_allocated_len = kv_committed_len.
    "ngram-v1-allocated-is-committed": (Cite("0.5.13", _NGRAM_INFO, "req.kv_allocated_len = req.kv_committed_len"),),
    "dflash-v1-allocated-is-committed": (Cite("0.5.13", _DFLASH_INFO, "req.kv_allocated_len = req.kv_committed_len"),),
    # -- the decode path -------------------------------------------------------------------------------------
    # Decode growth nxt = max(cur, kv_committed_len + R), not page-rounded (#31616).
    "eagle-growth-unrounded": (
        Cite("0.5.13", _EAGLE_INFO_V2, "nxt = max(cur, r.kv_committed_len + double_alloc)"),
        Cite("0.5.14", _EAGLE_INFO_V2, "nxt = max(cur, r.kv_committed_len + double_alloc)"),
        Cite("0.5.15", _EAGLE_UTILS, "nxt = max(cur, r.kv_committed_len + double_alloc)"),
    ),
    # DFLASH's growth max(cur, committed + 2 * block), not page-rounded.
    "dflash-growth-unrounded": (
        Cite("0.5.14", _DFLASH_INFO_V2, "max(cur_alloc_len, committed_len + 2 * block_size)"),
        Cite("0.5.15", _DFLASH_INFO_V2, "max(cur_alloc_len, committed_len + 2 * block_size)"),
    ),
    # Prepare-for-decode pre-claims the in-flight bonus token in kv_committed_len (to 0.5.14) ...
    "eagle-v2-preclaims-bonus": (
        Cite("0.5.13", _EAGLE_INFO_V2, "Pre-claim bonus slot here"),
        Cite("0.5.14", _EAGLE_INFO_V2, "Pre-claim bonus slot here"),
    ),
    # ... and from 0.5.15 reads the honest kv_committed_len (the bonus is committed in resolve).
    "eagle-decode-honest-committed": (
        Cite("0.5.15", _EAGLE_UTILS, "max(cur, ...) clamps so adaptive downswitch"),
        Cite("0.5.18", _EAGLE_UTILS, "max(cur, ...) clamps so adaptive downswitch"),
        Cite("0.5.23", _EAGLE_UTILS, "double_alloc = get_alloc_reserve_per_decode()"),
    ),
    # Decode rounds with the real allocator's page.
    "decode-rounds-with-allocator-page": (
        Cite("0.5.23", _EAGLE_UTILS, "page_size = batch.token_to_kv_pool_allocator.page_size"),
    ),
    # EAGLE's prepare-for-decode asserts the allocation end fits the row at page > 1 and topk > 1 (#26972).
    "eagle-tree-row-assert": (
        Cite("0.5.13", _EAGLE_INFO_V2, "(get_global_server_args().speculative_eagle_topk or 1) > 1:", whole=True),
        Cite("0.5.16", _EAGLE_UTILS, "(get_server_args().speculative_eagle_topk or 1) > 1:", whole=True),
        Cite("0.5.18", _EAGLE_UTILS, _EAGLE_TREE_ASSERT_V2, whole=True),
        Cite("0.5.23", _EAGLE_UTILS, _EAGLE_TREE_ASSERT_V2, whole=True),
    ),
    # UNO's prepare-for-decode raises when max(next_lengths) passes the row.
    "uno-row-guard": (
        Cite("0.5.23", _SRT + "speculative/uno_info.py", "row_width = int(batch.req_to_token_pool.req_to_token"),
    ),
    # Which prepare-for-decode runs: the DFLASH family and UNO their own, every other algorithm EAGLE's.
    "spec-decode-dispatch": (
        Cite("0.5.23", _SRT + "speculative/spec_utils.py", "if batch.spec_algorithm.is_dflash_family():", whole=True),
    ),
    # Non-speculative decode allocates at the batch's seq_lens.
    "decode-default-alloc-at-seq-lens": (
        Cite("0.5.23", _SRT + "mem_cache/allocation.py", "def alloc_for_decode_default", whole=True),
    ),
    # -- the scheduler ---------------------------------------------------------------------------------------
    # max_new_tokens clamped to max_req_len - input - 1.
    "scheduler-max-req-len-clamp": (Cite("0.5.23", _SCHEDULER, "max_new_tokens = max(", whole=True),),
    # The allocator's memory clamp: capacity - ceil_p(input) - p - 1 with p the allocator's page (0.5.21+) ...
    "allocator-memory-clamp": (
        Cite("0.5.21", _ALLOCATOR_BASE, "def max_new_tokens_for_memory", whole=True),
        Cite("0.5.23", _ALLOCATOR_BASE, "def max_new_tokens_for_memory", whole=True),
    ),
    # ... which the scheduler calls with the logical (DCP-wide) capacity.
    "scheduler-memory-clamp-allocator": (
        Cite("0.5.21", _SCHEDULER, "self.token_to_kv_pool_allocator.max_new_tokens_for_memory("),
        Cite("0.5.23", _SCHEDULER, "self.token_to_kv_pool_allocator.max_new_tokens_for_memory(", whole=True),
    ),
    # The scheduler's inline clamp with the server's page_size and the capacity times the DCP size (0.5.17-0.5.20).
    "scheduler-memory-clamp-dcp": (
        Cite("0.5.17", _SCHEDULER, _PAGED_CLAMP),
        Cite("0.5.18", _SCHEDULER, _PAGED_CLAMP),
        Cite("0.5.20", _SCHEDULER, _PAGED_CLAMP),
    ),
    # The scheduler's inline clamp with the server's page_size and the capacity alone (0.5.13-0.5.16).
    "scheduler-memory-clamp": (
        Cite("0.5.13", _SCHEDULER, _PAGED_CLAMP),
        Cite("0.5.15", _SCHEDULER, _PAGED_CLAMP),
        Cite("0.5.16", _SCHEDULER, _PAGED_CLAMP),
    ),
    # max_req_len = min(context_len - 1, kv_capacity - 1); max_req_input_len = max_req_len - 5.
    # A decode step the KV pool cannot hold retracts requests ...
    "retract-on-full-pool": (Cite("0.5.23", _SCHEDULER, "kv_full_retract_flag = not batch.check_decode_mem()"),),
    # ... keeping at least one running.
    "retract-keeps-one": (
        Cite("0.5.13", _SRT + "managers/schedule_batch.py", "# Always keep at least one request"),
        Cite("0.5.23", _SRT + "managers/schedule_batch.py", "# Always keep at least one request"),
    ),
    "max-req-len": (Cite("0.5.23", _SRT + "managers/tp_worker.py", "max_req_len = min(", nth=2),),
    # The scheduler checks a new prompt's length ...
    "validate-input-length-call": (Cite("0.5.23", _SCHEDULER, "error_msg = validate_input_length("),),
    # ... and aborts one of max_req_input_len tokens or more.
    "validate-input-length": (
        Cite("0.5.23", _SRT + "managers/utils.py", "if len(req.origin_input_ids) >= max_req_input_len:"),
    ),
    # -- the allocator builders' inputs (fuzz/engines/sglang/real/allocators.py, builders.py) ---------------------
    # The configurator module's platform probe, at import.
    "configurator-is-npu-probe": (Cite("0.5.23", _CONFIGURATOR, "_is_npu = is_npu()"),),
    # The builders' isinstance of the DeepSeek V4 pool.
    "configurator-dsv4-isinstance": (
        Cite("0.5.23", _CONFIGURATOR, "isinstance(token_to_kv_pool, DeepSeekV4TokenToKVPool)"),
    ),
    # -- the DSA indexer's key cache (``dsa_index``) ------------------------------------------------------------
    # index_buf_size from the pool's size alone (0.5.16-0.5.21; a local of __init__ before), widened by the DCP size
    # from 0.5.22; its buffer's rows and a token's bytes in them; the 64-token page it asserts; the DCP allocator.
    "dsa-index-buf-size": (Cite("0.5.18", _MEMORY_POOL, "index_buf_size = size"),),
    "dsa-index-buf-size-dcp": (
        Cite("0.5.23", _MEMORY_POOL, "else (size + self.page_size) * dcp_size - self.page_size"),
    ),
    "dsa-index-rows": (
        Cite("0.5.13", _MEMORY_POOL, "(index_buf_size + page_size + 1) // self.page_size"),
        Cite("0.5.23", _SRT + "mem_cache/index_key_cache.py", "num_pages = (index_buf_size + pool.page_size + 1)"),
    ),
    "dsa-index-row-bytes": (
        Cite("0.5.13", _MEMORY_POOL, "index_head_dim + index_head_dim // self.quant_block_size * 4"),
        Cite("0.5.23", _SRT + "mem_cache/index_key_cache.py", "index_head_dim // pool.quant_block_size * 4"),
    ),
    "dsa-page-64": (
        Cite("0.5.18", _MEMORY_POOL, "assert self.page_size == 64"),
        Cite("0.5.23", _MEMORY_POOL, "assert physical_page_size == 64"),
    ),
    "dcp-allocator-size": (
        Cite("0.5.18", _CONFIGURATOR, "sizes.max_total_num_tokens * get_parallel().attn_dcp_size,"),
        Cite("0.5.23", _CONFIGURATOR, "sizes.max_total_num_tokens * get_parallel().attn_dcp_size,"),
    ),
    "paged-free-pages": (Cite("0.5.23", _PAGED, "1, self.num_pages + 1, dtype=torch.int64, device=self.device"),),
}
