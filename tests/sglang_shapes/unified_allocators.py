# ruff: noqa: F821 - sliced by kvrow-fuzz, never imported: its names are SGLang's
"""The unified allocator classes in the shape of 0.5.23, for the tests; this project's words.

Unified Mamba widens its page under DCP, in the base call and again on
itself (0.5.23 ``allocator/unified_mamba.py``, its ``__init__``'s DCP branch); the unified SWA
allocator inherits its base's ``__init__``, which keeps the bare page
(``allocator/unified_hybrid_swa.py``).  Placed in a test checkout as
``allocator/unified_mamba.py`` (the shape reads both classes from there).
"""


class UnifiedMambaTokenToKVPoolAllocator(BaseTokenToKVPoolAllocator):
    def __init__(self, *, unified_buffer, page_size=1):
        slots = unified_buffer.max_slots("full")
        dcp_size = get_parallel().attn_dcp_size
        super().__init__(size=(slots - 1) * dcp_size, page_size=page_size * dcp_size)
        self.page_size = page_size * dcp_size
        self.mamba_end = SubAllocator(unified_buffer, page_size=1)


class UnifiedSWAAllocatorBase(SWATokenToKVPoolAllocator):
    def __init__(self, *, unified_buffer, page_size=1):
        self.unified_buffer = unified_buffer
        self.page_size = page_size


class UnifiedSWATokenToKVPoolAllocator(UnifiedSWAAllocatorBase):
    def budget(self):
        return self.page_size
