# ruff: noqa: F821 - sliced by kvrow-fuzz, never imported: its names are SGLang's
"""``mem_cache/unified_memory_pool.py`` in the shape of 0.5.23, for the tests; this project's words.

Each ``init_unified_*_pools`` builds one buffer and hands its ``page_size``
to the allocator class (0.5.23); the Mamba state's
own sub-allocator stays at page 1.
"""


def init_unified_mamba_pools(*, page_size, extra_max_context_len):
    buffer = make_unified_buffer(page_size, extra_max_context_len)
    allocator = UnifiedMambaTokenToKVPoolAllocator(unified_buffer=buffer, page_size=page_size)
    state = MambaSlotAllocator(allocator.mamba_end, page_size=1)
    return allocator, state


def init_unified_swa_pools(*, page_size):
    return UnifiedSWATokenToKVPoolAllocator(unified_buffer=make_unified_buffer(page_size, 4), page_size=page_size)
