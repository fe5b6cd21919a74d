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

_KERNELS = "sglang/kernels/"
_FA3 = _SRT + "layers/attention/flashattention_backend.py"
_ATTENTION_REGISTRY = _SRT + "layers/attention/attention_registry.py"
_DRAFT_UTILS = _SRT + "speculative/draft_utils.py"
_EAGLE_WORKER_COMMON = _SRT + "speculative/eagle_worker_common.py"
_TRTLLM_MLA = _SRT + "layers/attention/trtllm_mla_backend.py"

_TRITON = _SRT + "layers/attention/triton_backend.py"

FACTS: dict[str, tuple[Cite, ...]] = {
    # triton's draft decode kv_indices: a row per step of num_seqs * topk * C slots, C the model's context length; the
    # kernel stores each branch's seq_len + step + 1 slots at an offset masked by that length alone.
    "triton-draft-width": (
        Cite("0.5.13", _SPEC_UTILS, "return num_seqs * topk * max_context_len"),
        Cite("0.5.23", _SPEC_UTILS, "return num_seqs * topk * max_context_len"),
    ),
    "triton-draft-topk-factor": (
        Cite("0.5.18", _SPEC_UTILS, "dropping it under-allocates and overflows the row (#27338, #27460)"),
        Cite("0.5.23", _SPEC_UTILS, "dropping it under-allocates and overflows the row (#27338, #27460)"),
    ),
    "triton-draft-pool-len": (
        Cite("0.5.18", _TRITON, "self.pool_len = model_runner.req_to_token_pool.req_to_token.shape[1]"),
        Cite("0.5.23", _TRITON, "self.pool_len = model_runner.req_to_token_pool.req_to_token.shape[1]"),
    ),
    "triton-context-len": (Cite("0.5.23", _TRITON, "self.max_context_len = model_runner.model_config.context_len"),),
    "triton-draft-store": (
        Cite("0.5.13", _SRT + "speculative/triton_ops/cache_locs.py", "kv_offset = cum_seq_len * topk + bid * iters"),
        Cite("0.5.23", _KERNELS + "ops/speculative/cache_locs.py", "kv_offset = cum_seq_len * topk + bid * iters"),
    ),
    "unified-mamba-builder-inputs": (Cite("0.5.23", _CONFIGURATOR, "def _init_unified_mamba_pools("),),
    # The ModelRunner's page_size is the server's (the scheduled page) ...
    "model-runner-page-size": (
        Cite("0.5.15", _MODEL_RUNNER, "self.page_size = server_args.page_size"),
        Cite("0.5.23", _MODEL_RUNNER, "self.page_size = get_schedule().page_size"),
    ),
    # ... handed to the KVCacheConfigurator.
    "configurator-handed-page-size": (Cite("0.5.23", _MODEL_RUNNER, "page_size=self.page_size,"),),
    # 0.5.15's ModelRunner keeps the server's dcp_size and enable_hisparse.
    "model-runner-dcp-size": (Cite("0.5.15", _MODEL_RUNNER, "self.dcp_size = server_args.dcp_size"),),
    "model-runner-enable-hisparse": (
        Cite("0.5.15", _MODEL_RUNNER, "self.enable_hisparse = server_args.enable_hisparse"),
    ),
    # 0.5.15's ModelRunner mixin builds the pools: _init_pools ...
    "mixin-init-pools": (Cite("0.5.15", _MIXIN, "def _init_pools(self: ModelRunner):"),),
    # ... the token-to-KV allocator in it ...
    "mixin-allocator-built": (Cite("0.5.15", _MIXIN, "if self.token_to_kv_pool_allocator is None:"),),
    # ... its NPU branch ...
    "mixin-npu-allocator-branch": (Cite("0.5.15", _MIXIN, "elif _is_npu and ("),),
    # ... the local is_dsv4_model, from the model's hf_config ...
    "mixin-is-dsv4-model": (Cite("0.5.15", _MIXIN, "is_dsv4_model = is_deepseek_v4(self.model_config.hf_config)"),),
    # ... and the unified pools' builders.
    "mixin-unified-pools": (Cite("0.5.15", _MIXIN, "def _init_unified_mamba_pools"),),
    # unified_memory_pool.py's init_unified_*_pools construct each unified allocator with their page_size.
    "unified-mamba-allocator-built": (
        Cite("0.5.23", _UNIFIED_POOL, "allocator = UnifiedMambaTokenToKVPoolAllocator("),
    ),
    "unified-swa-allocator-built": (Cite("0.5.23", _UNIFIED_POOL, "allocator = UnifiedSWATokenToKVPoolAllocator("),),
    "unified-mamba-swa-allocator-built": (
        Cite("0.5.23", _UNIFIED_POOL, "allocator = UnifiedMambaSWATokenToKVPoolAllocator("),
    ),
    # TokenToKVPoolAllocator pages at 1: super().__init__(size, 1, ...).
    "token-allocator-page-1": (Cite("0.5.23", _TOKEN, "super().__init__(size, 1, dtype, device"),),
    # The allocators' constructors.
    "paged-allocator-init": (Cite("0.5.23", _PAGED, "def __init__("),),
    "token-allocator-init": (Cite("0.5.23", _TOKEN, "def __init__("),),
    # PagedTokenToKVPoolAllocator.alloc_extend launches alloc_extend_kernel, then checks the free list
    # (``if num_new_pages > len(self.free_pages)`` at the span's end; 0.5.13-0.5.21) ...
    "paged-extend-kernel-before-check": (
        Cite("0.5.13", _PAGED, "alloc_extend_kernel[(bs,)]("),
        Cite("0.5.21", _PAGED, "alloc_extend_kernel[(bs,)]("),
    ),
    # ... 0.5.22 on, checks it first (the kernel at the span's end).
    "paged-extend-check-before-kernel": (Cite("0.5.22", _PAGED, "if num_new_pages > len(self.free_pages):"),),
    # The current platform: in tree unless externally registered ...
    "platform-is-out-of-tree": (
        Cite("0.5.23", _SRT + "platforms/device_mixin.py", "def is_out_of_tree(self) -> bool:", whole=True),
    ),
    # ... with the default paged allocator (None) in tree.
    "platform-paged-allocator-cls": (
        Cite("0.5.23", _SRT + "platforms/interface.py", "def get_paged_allocator_cls(self)"),
    ),
    # 0.5.13-0.5.15's mem_cache/common.py calls the platform probes at import.
    "common-platform-probes": (Cite("0.5.15", _COMMON, "_is_npu = is_npu()"),),
    # -- ReqToTokenPool and the tree cache -------------------------------------------------------------------
    "req-to-token-pool-class": (Cite("0.5.23", _MEMORY_POOL, "class ReqToTokenPool:"),),
    # Row 0 is a padding row ...
    "req-to-token-padding-row": (Cite("0.5.23", _MEMORY_POOL, "+1 padding row at index 0"),),
    # ... of size + 1 rows, each max_context_len wide ...
    "req-to-token-row-width": (Cite("0.5.23", _MEMORY_POOL, "self._alloc_size = size + 1"),),
    # ... and requests take rows 1..size.
    "req-to-token-free-slots": (Cite("0.5.23", _MEMORY_POOL, "self.free_slots = list(range(1, self._alloc_size))"),),
    # A plain pool has no auxiliary cache.
    "req-to-token-aux-cache": (Cite("0.5.23", _MEMORY_POOL, "self._aux_cache: Any = None"),),
    # evict_from_tree_cache returns at once for a chunk cache (0.5.13-0.5.22).
    "evict-returns-for-chunk-cache": (Cite("0.5.19", _COMMON, "if tree_cache.is_chunk_cache():", whole=True),),
    # 0.5.23 asks supports_prefix_sharing() instead.
    "evict-asks-prefix-sharing": (
        Cite("0.5.23", _COMMON, "tree_cache is not None and tree_cache.supports_prefix_sharing()"),
    ),
    # The OOM messages ask the tree cache for its available and evictable sizes.
    "available-and-evictable-str": (Cite("0.5.23", _COMMON, "def available_and_evictable_str(", whole=True),),
    # Allocation rounds with the allocator's page under DCP, else the tree cache's.
    "alloc-page-size-dcp": (Cite("0.5.23", _ALLOCATION, "def _alloc_page_size(batch: ScheduleBatch)", whole=True),),
    # The tree cache's free_kv_row frees the row slices through free_kv_row_segments.
    "free-kv-row": (
        Cite("0.5.23", _SRT + "mem_cache/base_prefix_cache.py", "def free_kv_row(self, kv: Any, ranges", whole=True),
    ),
    # -- ScheduleBatch and Req (managers/schedule_batch.py) --------------------------------------------------
    "schedule-batch-class": (
        Cite("0.5.23", _SCHEDULE_BATCH, "class ScheduleBatch(ScheduleBatchDisaggregationDecodeMixin):"),
    ),
    # is_spec_v2: the algorithm supports spec v2 ...
    "is-spec-v2": (Cite("0.5.13", _SCHEDULE_BATCH, "def is_spec_v2(self):", whole=True),),
    # ... which EAGLE (not FROZEN_KV_MTP) and STANDALONE do ...
    "supports-spec-v2": (Cite("0.5.13", _SPEC_INFO, "def supports_spec_v2(self) -> bool:", whole=True),),
    # ... and only then does prepare_for_decode run the draft input's prepare_for_decode (0.5.13).
    "spec-v2-runs-draft-prepare": (Cite("0.5.13", _SCHEDULE_BATCH, "if self.is_spec_v2:", nth=2),),
    # 0.5.13's NgramVerifyInput (no EagleDraftInputV2Mixin).
    "ngram-verify-input-class": (Cite("0.5.13", _NGRAM_INFO, "class NgramVerifyInput(SpecInput):"),),
    # maybe_evict_swa first asks whether the tree cache supports SWA ...
    "maybe-evict-swa": (Cite("0.5.23", _SCHEDULE_BATCH, "def maybe_evict_swa(self):"),),
    # ... and probes it with hasattr(tree_cache, "release_swa_prefix_lock").
    "maybe-evict-swa-probes-release-lock": (Cite("0.5.23", _SCHEDULE_BATCH, "hasattr(", nth=2),),
    "req-class": (Cite("0.5.23", _SCHEDULE_BATCH, "class Req(ReqDllmMixin):"),),
    "req-kv-holds-kv": (Cite("0.5.23", _SCHEDULE_BATCH, "def holds_kv(self) -> bool:", whole=True),),
    "req-kv-holds-mamba": (Cite("0.5.23", _SCHEDULE_BATCH, "def holds_mamba(self) -> bool:", whole=True),),
    # 0.5.18's EAGLE decode reads r.kv.kv_allocated_len and r.kv_committed_len.
    "eagle-reads-req-lengths": (Cite("0.5.18", _EAGLE_UTILS, "cur = r.kv.kv_allocated_len"),),
    # DFLASH's and UNO's prepare read req.sampling_params.top_k ...
    "dflash-reads-top-k": (Cite("0.5.23", _DFLASH_INFO_V2, "top_k = int(req.sampling_params.top_k)"),),
    "uno-reads-top-k": (Cite("0.5.23", _UNO_INFO, "top_k = int(req.sampling_params.top_k)"),),
    # ... a field of SamplingParams.
    "sampling-params-top-k": (Cite("0.5.23", _SRT + "sampling/sampling_params.py", "top_k: int = TOP_K_ALL"),),
    # -- the decode write path's allocation --------------------------------------------------------------------
    # get_last_loc takes the triton kernel unless a backend is ascend or torch_native.
    "get-last-loc-dispatch": (Cite("0.5.23", _ALLOCATION, "prefill_backend, decode_backend = attention_backends()"),),
    # Before 0.5.18's accessors the backend is read off the flags (0.5.15) or server_args (0.5.16): the
    # triton check ...
    "backend-triton-check": (
        Cite("0.5.15", _COMMON, "if support_triton(get_flags().attn.backend):"),
        Cite("0.5.16", _ALLOCATION, "if support_triton(get_server_args().attention_backend):"),
    ),
    # ... and get_last_loc's dispatch.
    "backend-last-loc": (
        Cite("0.5.15", _COMMON, "attn_backend = get_flags().attn.backend"),
        Cite("0.5.16", _ALLOCATION, "attn_backend = get_server_args().attention_backend"),
    ),
    # alloc_for_extend leaves kv_committed_len = kv_allocated_len = seq_len.
    "alloc-for-extend-lengths": (Cite("0.5.23", _ALLOCATION, "req.kv.kv_allocated_len = seq_len"),),
    # From 0.5.19 alloc_for_decode grows kv_allocated_len and kv_committed_len.
    "decode-grows-both-lengths": (Cite("0.5.19", _ALLOCATION, "req.kv.kv_allocated_len += token_per_req"),),
    # alloc_for_decode_default reads batch.model_config.is_encoder_decoder.
    "decode-default-reads-encoder-decoder": (Cite("0.5.23", _ALLOCATION, "if batch.model_config.is_encoder_decoder:"),),
    # The writer kernel indexes req_to_token as row * pool_len + col ...
    "kernel-row-stride": (Cite("0.5.23", _ALLOCATION, "tl.load(req_pool_indices + pid) * pool_len"),),
    # ... with pool_len the row width.
    "kernel-pool-len-is-width": (Cite("0.5.23", _ALLOCATION, "req_to_token.shape[1],", nth=3),),
    # The paged allocator's alloc: whole pages.
    "paged-alloc": (Cite("0.5.23", _PAGED, "def alloc(self, need_size: int):", whole=True),),
    # alloc_extend takes its pages off free_pages; freed pages go back to it.
    "paged-alloc-extend-takes-pages": (Cite("0.5.23", _PAGED, "self.free_pages = self.free_pages[num_new_pages:]"),),
    "paged-release-page-ids": (Cite("0.5.23", _PAGED, "self.free_pages = torch.cat((*page_ids, self.free_pages))"),),
    # The paged allocator takes the triton kernels where the platform supports triton ...
    "paged-uses-triton-kernels": (
        Cite("0.5.23", _PAGED, "self.use_triton_kernels = current_platform.capabilities.supports_triton"),
    ),
    # ... in alloc_extend and alloc_decode.
    "paged-alloc-extend-triton": (Cite("0.5.23", _PAGED, "if self.use_triton_kernels:"),),
    "paged-alloc-decode-triton": (Cite("0.5.23", _PAGED, "if self.use_triton_kernels:", nth=2),),
    # -- the tail free (mem_cache/common.py) -------------------------------------------------------------------
    "tail-free": (Cite("0.5.23", _COMMON, "def _release_overallocated_kv_indices("),),
    # It aligns the start to the allocator's page (0.5.17+) ...
    "tail-free-allocator-page": (Cite("0.5.17", _COMMON, "page_size = allocator.page_size"),),
    # ... to the server's page_size in 0.5.16.
    "tail-free-server-page": (Cite("0.5.16", _COMMON, "page_size = global_server_args.page_size"),),
    # It frees req_to_token slices (int32).
    "tail-free-row-slice": (Cite("0.5.18", _COMMON, "if start_p < end_p:"),),
    # No thinking-token stripping: the tail free asks strip_thinking_cache.
    "tail-free-strip-thinking": (Cite("0.5.23", _COMMON, "not get_serving().strip_thinking_cache"),),
    # -- the invariant checker (managers/scheduler_components/invariant_checker.py) ---------------------------
    "checker-kv-page-invariants": (Cite("0.5.23", _CHECKER, "def _check_kv_page_invariants(self):"),),
    # SGLANG_CHECK_KV_PAGE_INVARIANTS turns it on in the self checks.
    "checker-kv-page-switch": (Cite("0.5.23", _CHECKER, "if envs.SGLANG_CHECK_KV_PAGE_INVARIANTS.get():"),),
    # The self checks are decorated with scheduler_stage_method.
    "checker-stage-method": (Cite("0.5.23", _CHECKER, "@scheduler_stage_method("),),
    # The checker probes getattr(tree_cache, "slots", None) (streaming sessions).
    "checker-probes-slots": (Cite("0.5.16", _CHECKER, 'getattr(self.tree_cache, "slots", None)'),),
    # Through 0.5.20 it divides slot ids by its page_size; 0.5.21+ by the allocator's.
    "checker-divides-by-server-page": (Cite("0.5.19", _CHECKER, "owner_pages = rtt[idx][mask] // self.page_size"),),
    "checker-divides-by-allocator-page": (
        Cite("0.5.21", _CHECKER, "owner_pages = owner_locs // sub_allocs[0].page_size"),
    ),
    # The scheduler's page_size is the scheduled one ...
    "scheduler-page-size": (Cite("0.5.19", _SCHEDULER, "self.page_size = get_schedule().page_size"),),
    # ... and it hands it to the checker.
    "checker-handed-page-size": (Cite("0.5.19", _SCHEDULER, "page_size=self.page_size,", nth=3),),
    # raise_error_or_warn: strict raises ValueError.
    "raise-error-or-warn": (Cite("0.5.23", _UTILS, "def raise_error_or_warn("),),
    # -- the overlap scheduler ---------------------------------------------------------------------------------
    "scheduler-overlap-loop": (Cite("0.5.23", _SCHEDULER, "def event_loop_overlap(self):"),),
    # Batch N+1 is built (prepare_for_decode inside get_next_batch_to_run) ...
    "overlap-builds-next-batch": (Cite("0.5.23", _SCHEDULER, "plan = self.get_next_batch_to_run(", nth=2),),
    # ... and launched ...
    "overlap-launches-batch": (Cite("0.5.23", _SCHEDULER, "if batch:", nth=2),),
    # ... before batch N's result is processed.
    "overlap-processes-last-batch": (Cite("0.5.23", _SCHEDULER, "# Process the last batch"),),
    # -- the draft inputs ----------------------------------------------------------------------------------------
    "dflash-create-idle-input": (Cite("0.5.23", _DFLASH_INFO_V2, "def create_idle_input("),),
    # UNO checks one seed token and one frontier per request ...
    "uno-checks-seed-counts": (Cite("0.5.23", _UNO_INFO, "if self.future_indices is None:"),),
    # ... and a positive forward_width.
    "uno-forward-width-positive": (Cite("0.5.23", _UNO_INFO, "if self.forward_width < 1:", whole=True),),
    # Module-level imports of third-party packages on the CUDA branch ...
    "eagle-v2-imports-sgl-kernel": (Cite("0.5.13", _EAGLE_INFO_V2, "if is_cuda() or is_musa():", whole=True),),
    # ... and unconditionally.
    "spec-utils-imports-hf-hub": (Cite("0.5.23", _SPEC_UTILS, "from huggingface_hub import snapshot_download"),),
    # -- the runtime context and platform (runtime_context.py, utils/common.py, platforms/) -------------------
    # attention_backends(): the (prefill, decode) pair of exec.kernel ...
    "attention-backends": (Cite("0.5.23", _RUNTIME_CONTEXT, "def attention_backends() -> tuple:", whole=True),),
    # ... the split fields falling back to attention_backend.
    "attention-backends-of": (
        Cite("0.5.23", _SRT + "arg_groups/model_override_base.py", "def attention_backends_of(cfg: Any)", whole=True),
    ),
    # 0.5.15's flags carry the resolved attention backends.
    "attn-flags": (Cite("0.5.15", _RUNTIME_CONTEXT, "class AttnFlags(_StaticFlags):", whole=True),),
    # get_parallel().dcp_enabled: dcp_size > 1.
    "runtime-context-dcp-enabled": (Cite("0.5.23", _RUNTIME_CONTEXT, "dcp_enabled=cfg.dcp_size > 1"),),
    # The lazy Mamba extra buffer: on only with the radix cache and the "extra_buffer_lazy" strategy.
    "mamba-extra-buffer-lazy": (
        Cite("0.5.17", _SERVER_ARGS, "def enable_mamba_extra_buffer_lazy(self) -> bool:", whole=True),
        Cite("0.5.18", _RUNTIME_CONTEXT, "def mamba_extra_buffer_lazy_enabled() -> bool:", whole=True),
    ),
    # spec_prepare_for_decode asks it.
    "spec-prepare-reads-mamba-lazy": (
        Cite("0.5.17", _SPEC_UTILS, "if server_args.enable_mamba_extra_buffer_lazy():", nth=2),
        Cite("0.5.23", _SPEC_UTILS, "if get_exec().mamba.enable_mamba_extra_buffer_lazy:", nth=2),
    ),
    # support_triton: the platform supports triton and the backend is not torch_native/intel_amx.
    "support-triton": (Cite("0.5.23", _UTILS, "def support_triton(backend: str) -> bool:", whole=True),),
    # is_cuda_alike: is_cuda() or is_hip() or is_sail().
    "is-cuda-alike": (Cite("0.5.23", _UTILS, "def is_cuda_alike():", whole=True),),
    # is_confidential_compute: an NVML probe.
    "is-confidential-compute": (Cite("0.5.23", _UTILS, "def is_confidential_compute() -> bool:"),),
    # is_pin_memory_available: False under confidential computing, else the platform's answer ...
    "utils-pin-memory": (Cite("0.5.23", _UTILS, "def is_pin_memory_available(device=None) -> bool:", whole=True),),
    # ... which on CUDA is False for a "cpu" device, else True.
    "cuda-pin-memory": (Cite("0.5.23", _CUDA, "def is_pin_memory_available(self, device=None) -> bool:", whole=True),),
    # The CUDA platform supports triton.
    "cuda-supports-triton": (Cite("0.5.23", _CUDA, "capabilities = PlatformCapabilities("),),
    # rank_consensus: all TP/PP ranks call the function alike ...
    "rank-consensus": (Cite("0.5.23", _SRT + "utils/rank_consensus_checker.py", "def rank_consensus("),),
    # ... used on the unified SWA allocators' evict_to_free_tokens.
    "rank-consensus-unified-swa": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_hybrid_swa.py", "@rank_consensus("),
    ),
    "rank-consensus-unified-mamba-swa": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_hybrid_swa.py", "@rank_consensus(", nth=2),
    ),
    # FA3's CUDA-graph page tables (fuzz/engines/sglang/real/runtime/attention.py) and their stand-ins.
    # The kernel-API logger: its level is SGLANG_KERNEL_API_LOGLEVEL, 0 by default ...
    "kernel-api-log-level": (
        Cite(
            "0.5.23",
            _KERNELS + "kernel_api_logging.py",
            '_KERNEL_API_LOG_LEVEL = _get_env("SGLANG_KERNEL_API_LOGLEVEL"',
        ),
    ),
    # ... at which debug_kernel_api gives the function back.
    "debug-kernel-api-off": (
        Cite("0.5.23", _KERNELS + "kernel_api_logging.py", "if _KERNEL_API_LOG_LEVEL == 0:", nth=2, whole=True),
    ),
    # The fa3 backend asserts SM80 (not MLA) or SM90.
    "fa3-requires-sm80-or-sm90": (
        Cite("0.5.23", _ATTENTION_REGISTRY, "assert (major == 8 and not runner.use_mla_backend) or major == 9"),
    ),
    # trtllm_mha: SGLang refuses it below SM90, keeps pages 16/32/64/128 only (any other becomes 64), and topk 1.
    "trtllm-mha-requires-sm90": (
        Cite("0.5.23", _SRT + "arg_groups/attention_hook.py", "TRTLLM MHA backend for decode is only supported on"),
    ),
    "trtllm-mha-pages": (Cite("0.5.23", _SRT + "arg_groups/overrides.py", "if page_size not in [16, 32, 64, 128]:"),),
    "trtllm-mha-topk-1": (
        Cite("0.5.23", _SRT + "arg_groups/speculative_hook.py", "trtllm_mha backend only supports topk = 1"),
    ),
    # Without a precomputed split schedule FA3 takes its per-layer path.
    "fa3-scheduler-metadata-optional": (
        Cite("0.5.23", _FA3, "# scheduler_metadata unset uses the existing per-layer metadata path."),
    ),
    # The target's tree-mask scratch is only kept and handed out.
    "fa3-verify-mask-handed-out": (Cite("0.5.23", _FA3, "def verify_mask(self) -> Optional[VerifyMask]:", whole=True),),
    # get_compiler_backend on an in-tree platform without HPU/NPU/MPS.
    "compiler-backend-inductor": (Cite("0.5.23", _UTILS, 'return "inductor"'),),
    # attention TP: tp // attn_dp // attn_cp.
    "derive-attn-tp-size": (Cite("0.5.23", _RUNTIME_CONTEXT, "return tp_size // attn_dp_size // attn_cp_size"),),
    # The launch defaults the attention backends read off server_args (0.5.13-0.5.17).
    "server-args-is-embedding-default": (Cite("0.5.13", _SERVER_ARGS, "is_embedding: bool = False"),),
    "server-args-deterministic-default": (
        Cite("0.5.13", _SERVER_ARGS, "enable_deterministic_inference: bool = False"),
    ),
    "server-args-kv-cache-dtype-default": (Cite("0.5.13", _SERVER_ARGS, 'kv_cache_dtype: str = "auto"'),),
    # The draft extend's forward batch carries the length after its D tokens.
    "draft-extend-seq-lens-include-drafts": (
        Cite("0.5.18", _EAGLE_WORKER_COMMON, "forward_batch.seq_lens = forward_batch.seq_lens + num_draft_tokens"),
        Cite(
            "0.5.23",
            _EAGLE_WORKER_COMMON,
            "post_seq_lens if fused_lengths else forward_batch.seq_lens + num_draft_tokens",
        ),
    ),
    # The backends fa3 runs on: the target's ...
    "fa3-target-backend": (Cite("0.5.23", _ATTENTION_REGISTRY, "return FlashAttentionBackend(runner)"),),
    # ... the draft worker's multi-step backend for its decode steps ...
    "fa3-draft-decode-backend": (Cite("0.5.23", _DRAFT_UTILS, "FlashAttentionMultiStepBackend("),),
    # ... and the draft worker's own backend for its extend.
    "fa3-draft-extend-backend": (
        Cite("0.5.23", _DRAFT_UTILS, "self.draft_model_runner, skip_prefill=False, fa_impl_ver=fa_impl_ver"),
    ),
    # FlashMLA: SGLang sets page 64 for it, and its multi-step draft backend refuses topk > 1.
    "flashmla-page-64": (Cite("0.5.23", _SRT + "arg_groups/overrides.py", "FlashMLA only supports a page_size of 64"),),
    # Before 0.5.16 the draft worker builds no FlashMLA backend for its extend (FlashInfer's MLA backend runs it).
    "flashmla-no-draft-extend": (
        Cite("0.5.15", _SRT + "speculative/draft_utils.py", "flashmla prefill backend is not yet supported for draft"),
    ),
    # FlashMLA's graph table: one page past the context's whole pages; its builder's 4096-token grid block.
    "flashmla-width": (
        Cite(
            "0.5.23", _SRT + "layers/attention/flashmla_backend.py", "(self.max_context_len + PAGE_SIZE) // PAGE_SIZE"
        ),
    ),
    "flashmla-grid-block": (
        Cite("0.5.23", _KERNELS + "ops/attention/kv_indices.py", "_FLASHMLA_CREATE_KV_BLOCK_SIZE = 4096"),
    ),
    "flashmla-topk-1": (
        Cite("0.5.23", _SRT + "layers/attention/flashmla_backend.py", "Currently FlashMLA only supports topk=1"),
    ),
    # The launch defaults FlashInfer's MLA backend (FlashMLA's base) reads: no PD disaggregation, the chunked prefix
    # cache and the ragged prefill wrapper on.
    "disagg-mode-default": (Cite("0.5.23", _SRT + "arg_groups/fields/disagg.py", '] = "null"'),),
    "chunked-prefix-cache-default": (
        Cite("0.5.23", _SRT + "arg_groups/fields/schedule.py", "disable_chunked_prefix_cache: A[", whole=True),
    ),
    # trtllm_mla: its graph table's pages (the context's, padded to trtllm-gen's 128 tokens and the builder's
    # 4096-token block), the pages and GPU SGLang takes for it, its refusal of topk > 1 at page > 1.
    "trtllm-mla-sized-from-context": (
        Cite("0.5.23", _TRTLLM_MLA, "max_blocks_per_seq = self._calc_padded_blocks(self.max_context_len)"),
    ),
    "trtllm-mla-width": (
        Cite("0.5.23", _TRTLLM_MLA, "def _calc_padded_blocks(self, max_seq_len: int) -> int:", whole=True),
    ),
    "trtllm-gen-block-128": (Cite("0.5.23", _TRTLLM_MLA, "TRTLLM_BLOCK_CONSTRAINT = 128"),),
    "trtllm-mla-pages": (
        Cite("0.5.23", _SRT + "arg_groups/overrides.py", "TensorRT-LLM MLA only supports page_size of 32 or 64"),
    ),
    "trtllm-mla-topk-1": (Cite("0.5.23", _SRT + "arg_groups/speculative_hook.py", "_PAGE_TREE_SPEC_BACKENDS = ("),),
    "trtllm-mla-requires-sm100": (
        Cite("0.5.23", _SRT + "arg_groups/overrides.py", "TRTLLM MLA backend is only supported on Blackwell GPUs"),
    ),
    # Its constructor's stand-ins: programmatic dependent launch from SM90, a JIT prebuild it keeps nothing of, the
    # fused KV-write gate (a JIT build's outcome); before 0.5.17 its plain decode reads the batch's lengths.
    "pdl-from-sm90": (Cite("0.5.23", _KERNELS + "jit/utils/arch.py", "return get_jit_cuda_arch().major >= 9"),),
    "trtllm-mla-jit-prebuild": (Cite("0.5.23", _TRTLLM_MLA, "_jit_fixup_module(self.q_data_type)"),),
    "trtllm-mla-fused-kv-gate": (
        Cite("0.5.23", _KERNELS + "ops/attention/set_mla_kv_concat_q.py", "set_mla_kv_concat_q_module(nope_bytes"),
    ),
    "trtllm-mla-decode-batch-lengths": (Cite("0.5.16", _TRTLLM_MLA, "seq_lens=forward_batch.seq_lens,", nth=3),),
    "flashinfer-mla-ragged-default": (
        Cite("0.5.23", _SRT + "arg_groups/fields/exec_.py", "flashinfer_mla_disable_ragged: A[", whole=True),
    ),
}
