"""Where SGLang says so: every release, file and line the project's prose cites, in one table.

A docstring or comment that rests on SGLang's source names the fact, not the
line: ``the unified builders size the row 4 + D [cite: unified-mamba-row-extra]``.
``CITATIONS`` maps each fact's key (short, kebab-case) to its ``Cite`` in every
release the prose relies on: one home per fact per release, so a line number
is written once, here, and nowhere else.

Each ``Cite`` names the wheel member (``sglang/srt/...``, the path inside the
release's wheel), the 1-based line (and the last line of a range) and
``text``, a short exact substring of line ``line`` in that release: a
mis-typed or drifted number fails ``tests/test_citations.py``, whose network
test reads every cited line out of the real wheels.  The same test holds
every ``[cite: KEY]`` in the product code to a key here, every key here to a
citation there, and the product code free of bare ``X.Y.Z file.py NNN``
line citations.  ``text`` is a few characters, never more of SGLang's source.

Pure data: this module imports nothing of the project (and nothing heavy).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cite", "CITATIONS", "CITE_PATTERN"]

# How prose cites a fact: ``[cite: KEY]`` (one key each; several facts, several brackets).
CITE_PATTERN = r"\[cite: ([a-z0-9]+(?:-[a-z0-9]+)*)\]"


@dataclass(frozen=True, slots=True)
class Cite:
    """One fact's place in one release: ``text`` is on line ``line`` of ``member`` (through ``end``, if a range)."""

    release: str  # "0.5.23" (a modeled release) or "main"
    member: str  # the path inside the wheel: "sglang/srt/mem_cache/kv_cache_configurator.py"
    line: int  # 1-based
    end: int | None  # the last line of a range; None: the one line
    text: str  # a short exact substring of line ``line``

    @property
    def lines(self) -> str:
        """``1571`` or ``1571-1572``."""
        return str(self.line) if self.end is None else f"{self.line}-{self.end}"

    def __str__(self) -> str:
        return f"{self.release} {self.member}:{self.lines}"


_SRT = "sglang/srt/"
_COMMON = _SRT + "mem_cache/common.py"
_SIZING = _SRT + "mem_cache/allocation_sizing.py"
_CONFIGURATOR = _SRT + "mem_cache/kv_cache_configurator.py"
_MIXIN = _SRT + "model_executor/model_runner_kv_cache_mixin.py"
_SERVER_ARGS = _SRT + "server_args.py"
_KV_CACHE_HOOK = _SRT + "arg_groups/kv_cache_hook.py"
_SCHEDULER = _SRT + "managers/scheduler.py"
_ALLOCATOR_BASE = _SRT + "mem_cache/allocator/base.py"
_EAGLE_UTILS = _SRT + "speculative/eagle_utils.py"
_EAGLE_INFO_V2 = _SRT + "speculative/eagle_info_v2.py"
_DFLASH_INFO_V2 = _SRT + "speculative/dflash_info_v2.py"
_SPEC_INFO = _SRT + "speculative/spec_info.py"
_NGRAM_INFO = _SRT + "speculative/ngram_info.py"
_DFLASH_INFO = _SRT + "speculative/dflash_info.py"
_UNO_INFO = _SRT + "speculative/uno_info.py"
_SPEC_UTILS = _SRT + "speculative/spec_utils.py"
_ALLOCATION = _SRT + "mem_cache/allocation.py"
_MEMORY_POOL = _SRT + "mem_cache/memory_pool.py"
_UNIFIED_POOL = _SRT + "mem_cache/unified_memory_pool.py"
_PAGED = _SRT + "mem_cache/allocator/paged.py"
_TOKEN = _SRT + "mem_cache/allocator/token.py"
_MODEL_RUNNER = _SRT + "model_executor/model_runner.py"
_SCHEDULE_BATCH = _SRT + "managers/schedule_batch.py"
_CHECKER = _SRT + "managers/scheduler_components/invariant_checker.py"
_RUNTIME_CONTEXT = _SRT + "runtime_context.py"
_UTILS = _SRT + "utils/common.py"
_CUDA = _SRT + "platforms/cuda.py"

_PAGED_CLAMP = "paged_input_len = -(-input_len // self.page_size)"
_UNIFIED_EXTRA = "non-shared path's extra_max_context_len computation"
_EAGLE_TREE_ASSERT_V2 = "(get_spec().speculative_eagle_topk or 1) > 1:"

CITATIONS: dict[str, tuple[Cite, ...]] = {
    # -- the sizing functions (mem_cache/common.py to 0.5.15, allocation_sizing.py from 0.5.16) --------------
    # The three sizing functions, together (0.5.13 is the first release with all three).
    "common-sizing-functions": (
        Cite("0.5.13", _COMMON, 155, 210, "def get_alloc_len_per_decode"),
        Cite("0.5.14", _COMMON, 211, 267, "def get_alloc_len_per_decode"),
        Cite("0.5.15", _COMMON, 215, 266, "def get_alloc_len_per_decode"),
    ),
    # L: max(S * K, Dmax), with the page-duplicated tree term.
    "alloc-len-per-decode": (
        Cite("0.5.13", _COMMON, 155, 182, "def get_alloc_len_per_decode"),
        Cite("0.5.15", _COMMON, 215, 240, "def get_alloc_len_per_decode"),
    ),
    # When L takes the tree term: 0.5.13 asks page and topk only; 0.5.15 also ``has_draft_kv``.
    "tree-term-condition": (
        Cite("0.5.13", _COMMON, 172, None, "if page_size == 1 or spec_topk == 1:"),
        Cite("0.5.15", _COMMON, 231, None, "not spec_algo.has_draft_kv()"),
    ),
    # The row headroom 4 + Dmax, raised to R only when spec is on, page_size > 1 and topk > 1.
    "common-headroom": (
        Cite("0.5.13", _COMMON, 194, 210, "def get_req_to_token_extra_context_len"),
        Cite("0.5.15", _COMMON, 252, 266, "def get_req_to_token_extra_context_len"),
    ),
    # The sizing's page is server_args.page_size alone (#35424).
    "alloc-page-server-page-size": (Cite("0.5.15", _COMMON, 226, None, "page_size = server_args.page_size"),),
    # The covered headroom adds page - 1 to the reserve.
    "headroom-page-tail": (Cite("0.5.16", _SIZING, 55, 62, "kv_allocated_len is page-aligned"),),
    # UNO without speculative_num_draft_tokens raises.
    "uno-needs-draft-tokens": (Cite("0.5.23", _SIZING, 47, 49, "if spec_algo.is_uno():"),),
    # -- the pool builders (model_runner_kv_cache_mixin.py to 0.5.15, kv_cache_configurator.py from 0.5.16) --
    # The standard row: context_len + get_req_to_token_extra_context_len().
    "standard-row-extra": (Cite("0.5.23", _CONFIGURATOR, 1571, 1572, "def _build_req_to_token_pool"),),
    # The unified Mamba builder's row headroom: 4 + speculative_num_draft_tokens (the launch D).
    "unified-mamba-row-extra": (
        Cite("0.5.15", _MIXIN, 368, 370, "extra_max_context_len = 4"),
        Cite("0.5.23", _CONFIGURATOR, 883, 886, _UNIFIED_EXTRA),
    ),
    # The unified Mamba + SWA builder's row headroom: 4 + D.
    "unified-mamba-swa-row-extra": (Cite("0.5.23", _CONFIGURATOR, 972, 975, _UNIFIED_EXTRA),),
    # The unified SWA builder's row headroom: 4 + D (to 0.5.20; from 0.5.21 it builds the standard row).
    "unified-swa-row-extra": (
        Cite("0.5.15", _MIXIN, 433, 438, "extra_max_context_len = 4"),
        Cite("0.5.20", _CONFIGURATOR, 843, 845, "extra_max_context_len = 4"),
    ),
    # The unified pool's row is model_context_len + extra_max_context_len wide.
    "unified-row-width": (
        Cite(
            "0.5.23",
            _UNIFIED_POOL,
            1717,
            None,
            "max_context_len=model_context_len + extra_max_context_len",
        ),
    ),
    # The token-to-KV allocator of the standard, SWA and HiSparse kinds.
    "allocator-builder": (
        Cite("0.5.16", _CONFIGURATOR, 1368, 1524, "def _build_token_to_kv_pool_allocator"),
        Cite("0.5.23", _CONFIGURATOR, 2795, 2988, "def _build_token_to_kv_pool_allocator"),
    ),
    # The paged allocator's page is page_size * dcp_size.
    "paged-allocator-page-dcp": (
        Cite("0.5.15", _MIXIN, 1141, 1143, "PagedTokenToKVPoolAllocator("),
        Cite("0.5.23", _CONFIGURATOR, 2925, 2937, "paged_allocator_cls = ("),
    ),
    # SWATokenToKVPoolAllocator / PureSWATokenToKVPoolAllocator at the bare page_size.
    "swa-allocator-page": (
        Cite("0.5.23", _CONFIGURATOR, 2865, 2884, "elif self.is_hybrid_swa and sizes.full_max_total_num_tokens"),
    ),
    # HiSparseTokenToKVPoolAllocator at the bare page_size.
    "hisparse-allocator-page": (Cite("0.5.23", _CONFIGURATOR, 2886, 2900, "if get_memory().enable_hisparse:"),),
    # UnifiedMambaTokenToKVPoolAllocator widens its page by the DCP size.
    "unified-mamba-allocator-page-dcp": (
        Cite(
            "0.5.23", _SRT + "mem_cache/allocator/unified_mamba.py", 62, 74, "dcp_size = get_parallel().attn_dcp_size"
        ),
    ),
    # The unified SWA allocators keep the bare page_size.
    "unified-swa-allocator-page": (
        Cite("0.5.23", _SRT + "mem_cache/allocator/unified_hybrid_swa.py", 100, None, "self.page_size = page_size"),
    ),
    # -- launch rules --------------------------------------------------------------------------------------
    # The speculative algorithms unified memory accepts: none (0.5.15-0.5.17), DSPARK (0.5.18-0.5.21), then
    # DSPARK, EAGLE, EAGLE3 and DFLASH.
    "unified-spec-algorithms": (
        Cite("0.5.15", _SERVER_ARGS, 5889, 5892, "assert self.speculative_algorithm is None, ("),
        Cite("0.5.16", _SERVER_ARGS, 6829, 6832, "assert self.speculative_algorithm is None, ("),
        Cite("0.5.21", _KV_CACHE_HOOK, 545, 550, 'assert cfg.speculative_algorithm in (None, "DSPARK"), ('),
        Cite("0.5.23", _KV_CACHE_HOOK, 588, 600, "assert cfg.speculative_algorithm in ("),
    ),
    # Unified memory takes a linear draft chain only (topk 1).
    "unified-topk-1": (Cite("0.5.23", _KV_CACHE_HOOK, 601, 607, "assert cfg.speculative_eagle_topk in (None, 1), ("),),
    # Unified memory with DCP > 1: MLA models only, never hybrid SWA.
    "unified-dcp-mla-only": (Cite("0.5.23", _KV_CACHE_HOOK, 719, 760, "def _validate_unified_memory_dcp"),),
    # Unified memory requires dcp_size 1 (to 0.5.19).
    "unified-dcp-refused": (
        Cite("0.5.15", _SERVER_ARGS, 5900, None, "assert self.dcp_size == 1, ("),
        Cite("0.5.18", _SERVER_ARGS, 8344, 8349, "assert self.dcp_size == 1, ("),
        Cite("0.5.19", _KV_CACHE_HOOK, 256, None, "assert cfg.dcp_size == 1, ("),
    ),
    # The dcp_size server argument (absent from 0.5.14).
    "dcp-size-argument": (Cite("0.5.15", _SERVER_ARGS, 823, None, "dcp_size: A["),),
    # HiSparse under speculation needs topk 1.
    "hisparse-spec-topk-1": (
        Cite(
            "0.5.23",
            _SRT + "arg_groups/hisparse_hook.py",
            118,
            122,
            "if enable_spec and (cfg.speculative_eagle_topk or 1) != 1:",
        ),
    ),
    # Page-interleave (--enable-kv-cache-sharding) is PD-prefill only.
    "kv-shard-prefill-only": (
        Cite("0.5.23", _SRT + "arg_groups/kv_shard_hook.py", 99, 104, 'if cfg.disaggregation_mode != "prefill":'),
    ),
    # Adaptive spec resolves speculative_num_steps to the middle candidate ...
    "adaptive-launch-steps": (
        Cite("0.5.23", _SRT + "arg_groups/speculative_hook.py", 1409, 1414, "if cfg.speculative_num_steps is None:"),
    ),
    # ... and its step slot starts there.
    "adaptive-initial-steps": (
        Cite(
            "0.5.23",
            _SRT + "speculative/adaptive_spec_params.py",
            178,
            181,
            "if initial_steps in self.candidate_steps:",
        ),
    ),
    # -- speculative workers (0.5.13's create_worker) and their enum -----------------------------------------
    "spec-algorithms-enum": (Cite("0.5.15", _SPEC_INFO, 35, 41, "DFLASH = auto()"),),
    # EAGLE, EAGLE3 and STANDALONE always run the v2 worker.
    "spec-v2-workers": (Cite("0.5.13", _SPEC_INFO, 192, 210, "always use the V2 worker"),),
    # DFLASH and FROZEN_KV_MTP refuse overlap and run v1 workers.
    "dflash-frozen-kv-mtp-v1-workers": (
        Cite("0.5.13", _SPEC_INFO, 168, 190, "enable_overlap = not server_args.disable_overlap_schedule"),
    ),
    # NGRAM refuses overlap and runs a v1 worker.
    "ngram-v1-worker": (Cite("0.5.13", _SPEC_INFO, 211, 219, "elif self.is_ngram():"),),
    # v1 verify allocates exactly D at seq_len ...
    "ngram-v1-verify-alloc": (Cite("0.5.13", _NGRAM_INFO, 77, 110, "def prepare_for_verify("),),
    "dflash-v1-verify-alloc": (Cite("0.5.13", _DFLASH_INFO, 180, 220, "def prepare_for_verify("),),
    # ... and sets kv_allocated_len = kv_committed_len.
    "ngram-v1-allocated-is-committed": (
        Cite("0.5.13", _NGRAM_INFO, 275, None, "req.kv_allocated_len = req.kv_committed_len"),
    ),
    "dflash-v1-allocated-is-committed": (
        Cite("0.5.13", _DFLASH_INFO, 460, None, "req.kv_allocated_len = req.kv_committed_len"),
    ),
    # -- the decode path -------------------------------------------------------------------------------------
    # Decode growth nxt = max(cur, kv_committed_len + R), not page-rounded (#31616).
    "eagle-growth-unrounded": (
        Cite("0.5.13", _EAGLE_INFO_V2, 165, None, "nxt = max(cur, r.kv_committed_len + double_alloc)"),
        Cite("0.5.14", _EAGLE_INFO_V2, 55, None, "nxt = max(cur, r.kv_committed_len + double_alloc)"),
        Cite("0.5.15", _EAGLE_UTILS, 794, None, "nxt = max(cur, r.kv_committed_len + double_alloc)"),
    ),
    # DFLASH's growth max(cur, committed + 2 * block), not page-rounded.
    "dflash-growth-unrounded": (
        Cite("0.5.14", _DFLASH_INFO_V2, 186, None, "max(cur_alloc_len, committed_len + 2 * block_size)"),
        Cite("0.5.15", _DFLASH_INFO_V2, 158, None, "max(cur_alloc_len, committed_len + 2 * block_size)"),
    ),
    # Prepare-for-decode pre-claims the in-flight bonus token in kv_committed_len (to 0.5.14) ...
    "eagle-v2-preclaims-bonus": (
        Cite("0.5.13", _EAGLE_INFO_V2, 171, 172, "Pre-claim bonus slot here"),
        Cite("0.5.14", _EAGLE_INFO_V2, 61, 62, "Pre-claim bonus slot here"),
    ),
    # ... and from 0.5.15 reads the honest kv_committed_len (the bonus is committed in resolve).
    "eagle-decode-honest-committed": (
        Cite("0.5.15", _EAGLE_UTILS, 791, 794, "max(cur, ...) clamps so adaptive downswitch"),
        Cite("0.5.18", _EAGLE_UTILS, 915, 917, "max(cur, ...) clamps so adaptive downswitch"),
        Cite("0.5.23", _EAGLE_UTILS, 866, 872, "double_alloc = get_alloc_reserve_per_decode()"),
    ),
    # Decode rounds with the real allocator's page.
    "decode-rounds-with-allocator-page": (
        Cite("0.5.23", _EAGLE_UTILS, 865, None, "page_size = batch.token_to_kv_pool_allocator.page_size"),
    ),
    # EAGLE's prepare-for-decode asserts the allocation end fits the row at page > 1 and topk > 1 (#26972).
    "eagle-tree-row-assert": (
        Cite("0.5.13", _EAGLE_INFO_V2, 183, 190, "(get_global_server_args().speculative_eagle_topk or 1) > 1:"),
        Cite("0.5.16", _EAGLE_UTILS, 847, 854, "(get_server_args().speculative_eagle_topk or 1) > 1:"),
        Cite("0.5.18", _EAGLE_UTILS, 940, 947, _EAGLE_TREE_ASSERT_V2),
        Cite("0.5.23", _EAGLE_UTILS, 891, 898, _EAGLE_TREE_ASSERT_V2),
    ),
    # UNO's prepare-for-decode raises when max(next_lengths) passes the row.
    "uno-row-guard": (
        Cite(
            "0.5.23", _SRT + "speculative/uno_info.py", 141, 146, "row_width = int(batch.req_to_token_pool.req_to_token"
        ),
    ),
    # Which prepare-for-decode runs: the DFLASH family and UNO their own, every other algorithm EAGLE's.
    "spec-decode-dispatch": (
        Cite("0.5.23", _SRT + "speculative/spec_utils.py", 1259, 1270, "if batch.spec_algorithm.is_dflash_family():"),
    ),
    # Non-speculative decode allocates at the batch's seq_lens.
    "decode-default-alloc-at-seq-lens": (
        Cite("0.5.23", _SRT + "mem_cache/allocation.py", 625, 688, "def alloc_for_decode_default"),
    ),
    # -- the scheduler ---------------------------------------------------------------------------------------
    # max_new_tokens clamped to max_req_len - input - 1.
    "scheduler-max-req-len-clamp": (Cite("0.5.23", _SCHEDULER, 2710, 2716, "max_new_tokens = max("),),
    # The allocator's memory clamp: capacity - ceil_p(input) - p - 1 with p the allocator's page (0.5.21+) ...
    "allocator-memory-clamp": (
        Cite("0.5.21", _ALLOCATOR_BASE, 79, 96, "def max_new_tokens_for_memory"),
        Cite("0.5.23", _ALLOCATOR_BASE, 88, 105, "def max_new_tokens_for_memory"),
    ),
    # ... which the scheduler calls with the logical (DCP-wide) capacity.
    "scheduler-memory-clamp-allocator": (
        Cite("0.5.21", _SCHEDULER, 2545, None, "self.token_to_kv_pool_allocator.max_new_tokens_for_memory("),
        Cite("0.5.23", _SCHEDULER, 2723, 2729, "self.token_to_kv_pool_allocator.max_new_tokens_for_memory("),
    ),
    # The scheduler's inline clamp with the server's page_size and the capacity times the DCP size (0.5.17-0.5.20).
    "scheduler-memory-clamp-dcp": (
        Cite("0.5.17", _SCHEDULER, 2131, 2142, _PAGED_CLAMP),
        Cite("0.5.18", _SCHEDULER, 2197, 2208, _PAGED_CLAMP),
        Cite("0.5.20", _SCHEDULER, 2531, 2542, _PAGED_CLAMP),
    ),
    # The scheduler's inline clamp with the server's page_size and the capacity alone (0.5.13-0.5.16).
    "scheduler-memory-clamp": (
        Cite("0.5.13", _SCHEDULER, 1770, 1782, _PAGED_CLAMP),
        Cite("0.5.15", _SCHEDULER, 1895, 1907, _PAGED_CLAMP),
        Cite("0.5.16", _SCHEDULER, 1906, 1914, _PAGED_CLAMP),
    ),
    # max_req_len = min(context_len - 1, kv_capacity - 1); max_req_input_len = max_req_len - 5.
    "max-req-len": (Cite("0.5.23", _SRT + "managers/tp_worker.py", 568, 572, "max_req_len = min("),),
    # The scheduler checks a new prompt's length ...
    "validate-input-length-call": (Cite("0.5.23", _SCHEDULER, 3246, None, "error_msg = validate_input_length("),),
    # ... and aborts one of max_req_input_len tokens or more.
    "validate-input-length": (
        Cite("0.5.23", _SRT + "managers/utils.py", 272, None, "if len(req.origin_input_ids) >= max_req_input_len:"),
    ),
    # -- the allocator builders' inputs (fuzz/targets/sglang/allocators.py, builders.py) ---------------------
    # The configurator module's platform probe, at import.
    "configurator-is-npu-probe": (Cite("0.5.23", _CONFIGURATOR, 163, None, "_is_npu = is_npu()"),),
    # The builders' isinstance of the DeepSeek V4 pool.
    "configurator-dsv4-isinstance": (
        Cite("0.5.23", _CONFIGURATOR, 2854, None, "isinstance(token_to_kv_pool, DeepSeekV4TokenToKVPool)"),
    ),
    # The unified Mamba builder computes the model's and the budget's quantities before the pool call.
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
