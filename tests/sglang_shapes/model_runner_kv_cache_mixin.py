# ruff: noqa: F821 - sliced by kvrow-fuzz, never imported: its names are SGLang's
"""``model_executor/model_runner_kv_cache_mixin.py`` in the shape of 0.5.15, for the tests; this project's words.

Before the configurator (0.5.13-0.5.15) the ModelRunner built the pools:
the unified Mamba builder sizes its row 4 + D from ``server_args`` (0.5.15's
``_init_unified_mamba_pools``) and hands ``page_size=self.page_size`` to
``init_unified_mamba_pools``; ``_init_pools`` builds the allocator (its ``if self.token_to_kv_pool_allocator
is None:`` branch) into ``self.token_to_kv_pool_allocator`` from the ModelRunner's
own ``page_size``, ``dcp_size`` and ``enable_hisparse``, with
``is_dsv4_model`` a local of its own.
"""

_is_npu = is_npu()


class ModelRunnerKVCacheMixin:
    def _init_unified_mamba_pools(self, max_num_reqs):
        extra_max_context_len = 4
        if self.server_args.speculative_num_draft_tokens is not None:
            extra_max_context_len += self.server_args.speculative_num_draft_tokens
        bundle = init_unified_mamba_pools(page_size=self.page_size, extra_max_context_len=extra_max_context_len)
        self.token_to_kv_pool_allocator = bundle.token_to_kv_pool_allocator

    def _init_pools(self):
        if self.server_args.enable_unified_memory:
            self._init_unified_mamba_pools(self.max_running_requests)
            return
        is_dsv4_model = is_deepseek_v4(self.model_config.hf_config)
        self.req_to_token_pool = make_pool(get_req_to_token_extra_context_len(self.server_args))
        if self.token_to_kv_pool_allocator is None:
            if _is_npu:
                self.token_to_kv_pool_allocator = AscendAllocator(page_size=self.page_size)
            elif self.is_hybrid_swa and self.full_max_total_num_tokens == 0:
                self.token_to_kv_pool_allocator = PureSWAAllocator(page_size=self.page_size)
            elif self.is_hybrid_swa:
                self.token_to_kv_pool_allocator = SWAAllocator(page_size=self.page_size)
            elif self.enable_hisparse:
                self.token_to_kv_pool_allocator = HiSparse(page_size=self.page_size)
            elif self.page_size == 1 and self.dcp_size == 1:
                self.token_to_kv_pool_allocator = TokenToKVPoolAllocator(self.max_total_num_tokens)
            else:
                self.token_to_kv_pool_allocator = Paged(page_size=self.page_size * self.dcp_size)
            if self.enable_hisparse and is_dsv4_model:
                self.token_to_kv_pool_allocator = DeepSeekV4HiSparseWrapper(self.token_to_kv_pool_allocator)
