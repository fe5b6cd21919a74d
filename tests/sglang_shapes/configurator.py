# ruff: noqa: F821 - sliced by kvrow-fuzz, never imported: its names are SGLang's
"""A pool configurator in the shape of 0.5.23's ``mem_cache/kv_cache_configurator.py``, for the tests.

Written here in this project's words, not SGLang's code: the standard
builder sizes its rows with the sizing file's headroom (0.5.23
``kv_cache_configurator.py``'s ``_build_req_to_token_pool``); the unified Mamba builder sets its
own ``extra_max_context_len`` = 4 + D (``_init_unified_mamba_pools``; the Mamba+SWA one the
same in ``_init_unified_mamba_swa_pools``); the unified SWA builder delegates to the standard one.
The allocator builder keeps the branches of 0.5.23's
``_build_token_to_kv_pool_allocator`` that decide the page: an
Ascend branch behind the module's ``_is_npu`` probe, DeepSeek V4's pool, the
SWA allocator at the bare page, the HiSparse one at the bare page, the token
allocator (no page: 1) at page 1 without DCP, else the paged allocator at
page_size * attn_dcp_size; then DeepSeek V4's HiSparse wrapper around
whichever was built.  The unified builders hand ``page_size=self.page_size``
to ``unified_memory_pool.py``'s ``init_unified_*_pools`` (0.5.23),
as ``unified_memory_pool.py`` here does to the allocator classes of
``unified_allocators.py``.
Never imported: ``fuzz.engines.sglang.real.builders`` slices it, and
``tests/test_sarif.py`` places it beside a sizing file.
"""

_is_npu = is_npu()


class KVCacheConfigurator:
    def _build_req_to_token_pool(self, *, max_num_reqs):
        extra_max_context_len = get_req_to_token_extra_context_len()
        return make_pool(extra_max_context_len)

    def _init_unified_mamba_pools(self):
        setup_mamba()
        extra_max_context_len = 4
        if get_spec().speculative_num_draft_tokens is not None:
            extra_max_context_len += get_spec().speculative_num_draft_tokens
        return init_unified_mamba_pools(page_size=self.page_size, extra_max_context_len=extra_max_context_len)

    def _init_unified_swa_pools(self):
        self._build_req_to_token_pool(max_num_reqs=1)
        return init_unified_swa_pools(page_size=self.page_size)

    def _build_token_to_kv_pool_allocator(self, *, sizes, token_to_kv_pool, is_dsv4_model, token_to_kv_pool_allocator):
        if token_to_kv_pool_allocator is None:
            if _is_npu and get_exec().kernel.attention_backend == "ascend":
                token_to_kv_pool_allocator = AscendAllocator(
                    sizes.max_total_num_tokens, page_size=get_schedule().page_size
                )
            elif isinstance(token_to_kv_pool, DeepSeekV4TokenToKVPool):
                token_to_kv_pool_allocator = Paged(sizes.full_max_total_num_tokens, page_size=get_schedule().page_size)
            elif self.is_hybrid_swa:
                token_to_kv_pool_allocator = SWAAllocator(sizes.swa, page_size=get_schedule().page_size)
            elif get_memory().enable_hisparse:
                token_to_kv_pool_allocator = HiSparse(sizes.max_total_num_tokens, page_size=get_schedule().page_size)
            elif get_schedule().page_size == 1 and not get_parallel().dcp_enabled:
                token_to_kv_pool_allocator = TokenToKVPoolAllocator(sizes.max_total_num_tokens)
            else:
                token_to_kv_pool_allocator = Paged(
                    sizes.max_total_num_tokens * get_parallel().attn_dcp_size,
                    page_size=get_schedule().page_size * get_parallel().attn_dcp_size,
                )
            if get_memory().enable_hisparse and is_dsv4_model:
                token_to_kv_pool_allocator = DeepSeekV4HiSparseWrapper(token_to_kv_pool_allocator)
        return token_to_kv_pool_allocator
