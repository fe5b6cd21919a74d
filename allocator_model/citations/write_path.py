"""Citations: the decode write path and its stand-ins."""

from __future__ import annotations

from .base import (
    _ALLOCATION,
    _CHECKER,
    _COMMON,
    _CONFIGURATOR,
    _CUDA,
    _DFLASH_INFO_V2,
    _EAGLE_INFO_V2,
    _EAGLE_UTILS,
    _MEMORY_POOL,
    _MIXIN,
    _MODEL_RUNNER,
    _NGRAM_INFO,
    _PAGED,
    _RUNTIME_CONTEXT,
    _SCHEDULE_BATCH,
    _SCHEDULER,
    _SERVER_ARGS,
    _SPEC_INFO,
    _SPEC_UTILS,
    _SRT,
    _TOKEN,
    _UNIFIED_POOL,
    _UNO_INFO,
    _UTILS,
    Cite,
)

FACTS: dict[str, tuple[Cite, ...]] = {
    "unified-mamba-builder-inputs": (Cite("0.5.23", _CONFIGURATOR, 865, 930, "def _init_unified_mamba_pools("),),
    # The ModelRunner's page_size is the server's (the scheduled page) ...
    "model-runner-page-size": (
        Cite("0.5.15", _MODEL_RUNNER, 407, None, "self.page_size = server_args.page_size"),
        Cite("0.5.23", _MODEL_RUNNER, 399, None, "self.page_size = get_schedule().page_size"),
    ),
    # ... handed to the KVCacheConfigurator.
    "configurator-handed-page-size": (Cite("0.5.23", _MODEL_RUNNER, 668, None, "page_size=self.page_size,"),),
    # 0.5.15's ModelRunner keeps the server's dcp_size and enable_hisparse.
    "model-runner-dcp-size": (Cite("0.5.15", _MODEL_RUNNER, 382, None, "self.dcp_size = server_args.dcp_size"),),
    "model-runner-enable-hisparse": (
        Cite("0.5.15", _MODEL_RUNNER, 426, None, "self.enable_hisparse = server_args.enable_hisparse"),
    ),
    # 0.5.15's ModelRunner mixin builds the pools: _init_pools ...
    "mixin-init-pools": (Cite("0.5.15", _MIXIN, 503, None, "def _init_pools(self: ModelRunner):"),),
    # ... the token-to-KV allocator in it ...
    "mixin-allocator-built": (Cite("0.5.15", _MIXIN, 1045, 1163, "if self.token_to_kv_pool_allocator is None:"),),
    # ... its NPU branch ...
    "mixin-npu-allocator-branch": (Cite("0.5.15", _MIXIN, 1056, None, "elif _is_npu and ("),),
    # ... the local is_dsv4_model, from the model's hf_config ...
    "mixin-is-dsv4-model": (
        Cite("0.5.15", _MIXIN, 627, None, "is_dsv4_model = is_deepseek_v4(self.model_config.hf_config)"),
    ),
    # ... and the unified pools' builders.
    "mixin-unified-pools": (Cite("0.5.15", _MIXIN, 352, 499, "def _init_unified_mamba_pools"),),
    # unified_memory_pool.py's init_unified_*_pools construct each unified allocator with their page_size.
    "unified-mamba-allocator-built": (
        Cite("0.5.23", _UNIFIED_POOL, 1763, None, "allocator = UnifiedMambaTokenToKVPoolAllocator("),
    ),
    "unified-swa-allocator-built": (
        Cite("0.5.23", _UNIFIED_POOL, 2255, None, "allocator = UnifiedSWATokenToKVPoolAllocator("),
    ),
    "unified-mamba-swa-allocator-built": (
        Cite("0.5.23", _UNIFIED_POOL, 2479, None, "allocator = UnifiedMambaSWATokenToKVPoolAllocator("),
    ),
    # TokenToKVPoolAllocator pages at 1: super().__init__(size, 1, ...).
    "token-allocator-page-1": (Cite("0.5.23", _TOKEN, 39, None, "super().__init__(size, 1, dtype, device"),),
    # The allocators' constructors.
    "paged-allocator-init": (Cite("0.5.23", _PAGED, 143, None, "def __init__("),),
    "token-allocator-init": (Cite("0.5.23", _TOKEN, 31, None, "def __init__("),),
    # PagedTokenToKVPoolAllocator.alloc_extend launches alloc_extend_kernel, then checks the free list
    # (``if num_new_pages > len(self.free_pages)`` at the span's end; 0.5.13-0.5.21) ...
    "paged-extend-kernel-before-check": (
        Cite("0.5.13", _PAGED, 170, 189, "alloc_extend_kernel[(bs,)]("),
        Cite("0.5.21", _PAGED, 206, 225, "alloc_extend_kernel[(bs,)]("),
    ),
    # ... 0.5.22 on, checks it first (the kernel at the span's end).
    "paged-extend-check-before-kernel": (Cite("0.5.22", _PAGED, 238, 246, "if num_new_pages > len(self.free_pages):"),),
    # The current platform: in tree unless externally registered ...
    "platform-is-out-of-tree": (
        Cite("0.5.23", _SRT + "platforms/device_mixin.py", 151, 153, "def is_out_of_tree(self) -> bool:"),
    ),
    # ... with the default paged allocator (None) in tree.
    "platform-paged-allocator-cls": (
        Cite("0.5.23", _SRT + "platforms/interface.py", 164, 165, "def get_paged_allocator_cls(self)"),
    ),
    # 0.5.13-0.5.15's mem_cache/common.py calls the platform probes at import.
    "common-platform-probes": (Cite("0.5.15", _COMMON, 33, 37, "_is_npu = is_npu()"),),
    # -- ReqToTokenPool and the tree cache -------------------------------------------------------------------
    "req-to-token-pool-class": (Cite("0.5.23", _MEMORY_POOL, 376, None, "class ReqToTokenPool:"),),
    # Row 0 is a padding row ...
    "req-to-token-padding-row": (Cite("0.5.23", _MEMORY_POOL, 400, 402, "+1 padding row at index 0"),),
    # ... of size + 1 rows, each max_context_len wide ...
    "req-to-token-row-width": (Cite("0.5.23", _MEMORY_POOL, 402, 407, "self._alloc_size = size + 1"),),
    # ... and requests take rows 1..size.
    "req-to-token-free-slots": (
        Cite("0.5.23", _MEMORY_POOL, 409, None, "self.free_slots = list(range(1, self._alloc_size))"),
    ),
    # A plain pool has no auxiliary cache.
    "req-to-token-aux-cache": (Cite("0.5.23", _MEMORY_POOL, 411, None, "self._aux_cache: Any = None"),),
    # evict_from_tree_cache returns at once for a chunk cache (0.5.13-0.5.22).
    "evict-returns-for-chunk-cache": (Cite("0.5.19", _COMMON, 172, 173, "if tree_cache.is_chunk_cache():"),),
    # 0.5.23 asks supports_prefix_sharing() instead.
    "evict-asks-prefix-sharing": (
        Cite("0.5.23", _COMMON, 286, None, "tree_cache is not None and tree_cache.supports_prefix_sharing()"),
    ),
    # The OOM messages ask the tree cache for its available and evictable sizes.
    "available-and-evictable-str": (Cite("0.5.23", _COMMON, 479, 480, "def available_and_evictable_str("),),
    # Allocation rounds with the allocator's page under DCP, else the tree cache's.
    "alloc-page-size-dcp": (Cite("0.5.23", _ALLOCATION, 352, 360, "def _alloc_page_size(batch: ScheduleBatch)"),),
    # The tree cache's free_kv_row frees the row slices through free_kv_row_segments.
    "free-kv-row": (
        Cite("0.5.23", _SRT + "mem_cache/base_prefix_cache.py", 497, 512, "def free_kv_row(self, kv: Any, ranges"),
    ),
    # -- ScheduleBatch and Req (managers/schedule_batch.py) --------------------------------------------------
    "schedule-batch-class": (
        Cite("0.5.23", _SCHEDULE_BATCH, 2456, None, "class ScheduleBatch(ScheduleBatchDisaggregationDecodeMixin):"),
    ),
    # is_spec_v2: the algorithm supports spec v2 ...
    "is-spec-v2": (Cite("0.5.13", _SCHEDULE_BATCH, 2460, 2463, "def is_spec_v2(self):"),),
    # ... which EAGLE (not FROZEN_KV_MTP) and STANDALONE do ...
    "supports-spec-v2": (Cite("0.5.13", _SPEC_INFO, 148, 149, "def supports_spec_v2(self) -> bool:"),),
    # ... and only then does prepare_for_decode run the draft input's prepare_for_decode (0.5.13).
    "spec-v2-runs-draft-prepare": (Cite("0.5.13", _SCHEDULE_BATCH, 2508, None, "if self.is_spec_v2:"),),
    # 0.5.13's NgramVerifyInput (no EagleDraftInputV2Mixin).
    "ngram-verify-input-class": (Cite("0.5.13", _NGRAM_INFO, 51, None, "class NgramVerifyInput(SpecInput):"),),
    # maybe_evict_swa first asks whether the tree cache supports SWA ...
    "maybe-evict-swa": (Cite("0.5.23", _SCHEDULE_BATCH, 4068, 4069, "def maybe_evict_swa(self):"),),
    # ... and probes it with hasattr(tree_cache, "release_swa_prefix_lock").
    "maybe-evict-swa-probes-release-lock": (Cite("0.5.23", _SCHEDULE_BATCH, 4074, 4075, "hasattr("),),
    "req-class": (Cite("0.5.23", _SCHEDULE_BATCH, 1033, None, "class Req(ReqDllmMixin):"),),
    "req-kv-holds-kv": (Cite("0.5.23", _SCHEDULE_BATCH, 1003, 1004, "def holds_kv(self) -> bool:"),),
    "req-kv-holds-mamba": (Cite("0.5.23", _SCHEDULE_BATCH, 1007, 1008, "def holds_mamba(self) -> bool:"),),
    # 0.5.18's EAGLE decode reads r.kv.kv_allocated_len and r.kv_committed_len.
    "eagle-reads-req-lengths": (Cite("0.5.18", _EAGLE_UTILS, 914, 923, "cur = r.kv.kv_allocated_len"),),
    # DFLASH's and UNO's prepare read req.sampling_params.top_k ...
    "dflash-reads-top-k": (Cite("0.5.23", _DFLASH_INFO_V2, 164, None, "top_k = int(req.sampling_params.top_k)"),),
    "uno-reads-top-k": (Cite("0.5.23", _UNO_INFO, 123, None, "top_k = int(req.sampling_params.top_k)"),),
    # ... a field of SamplingParams.
    "sampling-params-top-k": (
        Cite("0.5.23", _SRT + "sampling/sampling_params.py", 159, None, "top_k: int = TOP_K_ALL"),
    ),
    # -- the decode write path's allocation --------------------------------------------------------------------
    # get_last_loc takes the triton kernel unless a backend is ascend or torch_native.
    "get-last-loc-dispatch": (
        Cite("0.5.23", _ALLOCATION, 113, 137, "prefill_backend, decode_backend = attention_backends()"),
    ),
    # Before 0.5.18's accessors the backend is read off the flags (0.5.15) or server_args (0.5.16): the
    # triton check ...
    "backend-triton-check": (
        Cite("0.5.15", _COMMON, 137, None, "if support_triton(get_flags().attn.backend):"),
        Cite("0.5.16", _ALLOCATION, 68, None, "if support_triton(get_server_args().attention_backend):"),
    ),
    # ... and get_last_loc's dispatch.
    "backend-last-loc": (
        Cite("0.5.15", _COMMON, 178, None, "attn_backend = get_flags().attn.backend"),
        Cite("0.5.16", _ALLOCATION, 109, None, "attn_backend = get_server_args().attention_backend"),
    ),
    # alloc_for_extend leaves kv_committed_len = kv_allocated_len = seq_len.
    "alloc-for-extend-lengths": (Cite("0.5.23", _ALLOCATION, 484, 485, "req.kv.kv_allocated_len = seq_len"),),
    # From 0.5.19 alloc_for_decode grows kv_allocated_len and kv_committed_len.
    "decode-grows-both-lengths": (Cite("0.5.19", _ALLOCATION, 581, 582, "req.kv.kv_allocated_len += token_per_req"),),
    # alloc_for_decode_default reads batch.model_config.is_encoder_decoder.
    "decode-default-reads-encoder-decoder": (
        Cite("0.5.23", _ALLOCATION, 658, None, "if batch.model_config.is_encoder_decoder:"),
    ),
    # The writer kernel indexes req_to_token as row * pool_len + col ...
    "kernel-row-stride": (Cite("0.5.23", _ALLOCATION, 705, None, "tl.load(req_pool_indices + pid) * pool_len"),),
    # ... with pool_len the row width.
    "kernel-pool-len-is-width": (Cite("0.5.23", _ALLOCATION, 761, None, "req_to_token.shape[1],"),),
    # The paged allocator's alloc: whole pages.
    "paged-alloc": (Cite("0.5.23", _PAGED, 181, 202, "def alloc(self, need_size: int):"),),
    # alloc_extend takes its pages off free_pages; freed pages go back to it.
    "paged-alloc-extend-takes-pages": (
        Cite("0.5.23", _PAGED, 276, None, "self.free_pages = self.free_pages[num_new_pages:]"),
    ),
    "paged-release-page-ids": (
        Cite("0.5.23", _PAGED, 380, None, "self.free_pages = torch.cat((*page_ids, self.free_pages))"),
    ),
    # The paged allocator takes the triton kernels where the platform supports triton ...
    "paged-uses-triton-kernels": (
        Cite("0.5.23", _PAGED, 155, None, "self.use_triton_kernels = current_platform.capabilities.supports_triton"),
    ),
    # ... in alloc_extend and alloc_decode.
    "paged-alloc-extend-triton": (Cite("0.5.23", _PAGED, 245, None, "if self.use_triton_kernels:"),),
    "paged-alloc-decode-triton": (Cite("0.5.23", _PAGED, 303, None, "if self.use_triton_kernels:"),),
    # -- the tail free (mem_cache/common.py) -------------------------------------------------------------------
    "tail-free": (Cite("0.5.23", _COMMON, 447, None, "def _release_overallocated_kv_indices("),),
    # It aligns the start to the allocator's page (0.5.17+) ...
    "tail-free-allocator-page": (Cite("0.5.17", _COMMON, 182, 193, "page_size = allocator.page_size"),),
    # ... to the server's page_size in 0.5.16.
    "tail-free-server-page": (Cite("0.5.16", _COMMON, 181, 192, "page_size = global_server_args.page_size"),),
    # It frees req_to_token slices (int32).
    "tail-free-row-slice": (Cite("0.5.18", _COMMON, 258, 261, "if start_p < end_p:"),),
    # No thinking-token stripping: the tail free asks strip_thinking_cache.
    "tail-free-strip-thinking": (Cite("0.5.23", _COMMON, 456, None, "not get_serving().strip_thinking_cache"),),
    # -- the invariant checker (managers/scheduler_components/invariant_checker.py) ---------------------------
    "checker-kv-page-invariants": (Cite("0.5.23", _CHECKER, 350, None, "def _check_kv_page_invariants(self):"),),
    # SGLANG_CHECK_KV_PAGE_INVARIANTS turns it on in the self checks.
    "checker-kv-page-switch": (Cite("0.5.23", _CHECKER, 347, None, "if envs.SGLANG_CHECK_KV_PAGE_INVARIANTS.get():"),),
    # The self checks are decorated with scheduler_stage_method.
    "checker-stage-method": (Cite("0.5.23", _CHECKER, 312, None, "@scheduler_stage_method("),),
    # The checker probes getattr(tree_cache, "slots", None) (streaming sessions).
    "checker-probes-slots": (Cite("0.5.16", _CHECKER, 330, None, 'getattr(self.tree_cache, "slots", None)'),),
    # Through 0.5.20 it divides slot ids by its page_size; 0.5.21+ by the allocator's.
    "checker-divides-by-server-page": (
        Cite("0.5.19", _CHECKER, 371, None, "owner_pages = rtt[idx][mask] // self.page_size"),
    ),
    "checker-divides-by-allocator-page": (
        Cite("0.5.21", _CHECKER, 441, None, "owner_pages = owner_locs // sub_allocs[0].page_size"),
    ),
    # The scheduler's page_size is the scheduled one ...
    "scheduler-page-size": (Cite("0.5.19", _SCHEDULER, 476, None, "self.page_size = get_schedule().page_size"),),
    # ... and it hands it to the checker.
    "checker-handed-page-size": (Cite("0.5.19", _SCHEDULER, 2235, None, "page_size=self.page_size,"),),
    # raise_error_or_warn: strict raises ValueError.
    "raise-error-or-warn": (Cite("0.5.23", _UTILS, 5064, 5066, "def raise_error_or_warn("),),
    # -- the overlap scheduler ---------------------------------------------------------------------------------
    "scheduler-overlap-loop": (Cite("0.5.23", _SCHEDULER, 2061, None, "def event_loop_overlap(self):"),),
    # Batch N+1 is built (prepare_for_decode inside get_next_batch_to_run) ...
    "overlap-builds-next-batch": (Cite("0.5.23", _SCHEDULER, 2084, None, "plan = self.get_next_batch_to_run("),),
    # ... and launched ...
    "overlap-launches-batch": (Cite("0.5.23", _SCHEDULER, 2108, 2109, "if batch:"),),
    # ... before batch N's result is processed.
    "overlap-processes-last-batch": (Cite("0.5.23", _SCHEDULER, 2117, 2119, "# Process the last batch"),),
    # -- the draft inputs ----------------------------------------------------------------------------------------
    "dflash-create-idle-input": (Cite("0.5.23", _DFLASH_INFO_V2, 105, None, "def create_idle_input("),),
    # UNO checks one seed token and one frontier per request ...
    "uno-checks-seed-counts": (Cite("0.5.23", _UNO_INFO, 88, 95, "if self.future_indices is None:"),),
    # ... and a positive forward_width.
    "uno-forward-width-positive": (Cite("0.5.23", _UNO_INFO, 49, 50, "if self.forward_width < 1:"),),
    # Module-level imports of third-party packages on the CUDA branch ...
    "eagle-v2-imports-sgl-kernel": (Cite("0.5.13", _EAGLE_INFO_V2, 69, 74, "if is_cuda() or is_musa():"),),
    # ... and unconditionally.
    "spec-utils-imports-hf-hub": (
        Cite("0.5.23", _SPEC_UTILS, 11, None, "from huggingface_hub import snapshot_download"),
    ),
    # -- the runtime context and platform (runtime_context.py, utils/common.py, platforms/) -------------------
    # attention_backends(): the (prefill, decode) pair of exec.kernel ...
    "attention-backends": (Cite("0.5.23", _RUNTIME_CONTEXT, 2010, 2022, "def attention_backends() -> tuple:"),),
    # ... the split fields falling back to attention_backend.
    "attention-backends-of": (
        Cite("0.5.23", _SRT + "arg_groups/model_override_base.py", 138, 152, "def attention_backends_of(cfg: Any)"),
    ),
    # 0.5.15's flags carry the resolved attention backends.
    "attn-flags": (Cite("0.5.15", _RUNTIME_CONTEXT, 281, 288, "class AttnFlags(_StaticFlags):"),),
    # get_parallel().dcp_enabled: dcp_size > 1.
    "runtime-context-dcp-enabled": (Cite("0.5.23", _RUNTIME_CONTEXT, 169, None, "dcp_enabled=cfg.dcp_size > 1"),),
    # The lazy Mamba extra buffer: on only with the radix cache and the "extra_buffer_lazy" strategy.
    "mamba-extra-buffer-lazy": (
        Cite("0.5.17", _SERVER_ARGS, 8642, 8646, "def enable_mamba_extra_buffer_lazy(self) -> bool:"),
        Cite("0.5.18", _RUNTIME_CONTEXT, 1385, 1390, "def mamba_extra_buffer_lazy_enabled() -> bool:"),
    ),
    # spec_prepare_for_decode asks it.
    "spec-prepare-reads-mamba-lazy": (
        Cite("0.5.17", _SPEC_UTILS, 1031, None, "if server_args.enable_mamba_extra_buffer_lazy():"),
        Cite("0.5.23", _SPEC_UTILS, 1253, None, "if get_exec().mamba.enable_mamba_extra_buffer_lazy:"),
    ),
    # support_triton: the platform supports triton and the backend is not torch_native/intel_amx.
    "support-triton": (Cite("0.5.23", _UTILS, 1484, 1488, "def support_triton(backend: str) -> bool:"),),
    # is_cuda_alike: is_cuda() or is_hip() or is_sail().
    "is-cuda-alike": (Cite("0.5.23", _UTILS, 163, 164, "def is_cuda_alike():"),),
    # is_confidential_compute: an NVML probe.
    "is-confidential-compute": (Cite("0.5.23", _UTILS, 5085, None, "def is_confidential_compute() -> bool:"),),
    # is_pin_memory_available: False under confidential computing, else the platform's answer ...
    "utils-pin-memory": (Cite("0.5.23", _UTILS, 579, 584, "def is_pin_memory_available(device=None) -> bool:"),),
    # ... which on CUDA is False for a "cpu" device, else True.
    "cuda-pin-memory": (Cite("0.5.23", _CUDA, 60, 63, "def is_pin_memory_available(self, device=None) -> bool:"),),
    # The CUDA platform supports triton.
    "cuda-supports-triton": (Cite("0.5.23", _CUDA, 106, 107, "capabilities = PlatformCapabilities("),),
    # rank_consensus: all TP/PP ranks call the function alike ...
    "rank-consensus": (Cite("0.5.23", _SRT + "utils/rank_consensus_checker.py", 28, 60, "def rank_consensus("),),
    # ... used on the unified SWA allocators' evict_to_free_tokens.
    "rank-consensus-unified-swa": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_hybrid_swa.py", 1222, None, "@rank_consensus("),
    ),
    "rank-consensus-unified-mamba-swa": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_hybrid_swa.py", 1865, None, "@rank_consensus("),
    ),
}
