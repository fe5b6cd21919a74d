"""The DSA indexer's key cache under decode context parallelism: the locations it holds against the locations the
allocator hands out (the twin of SGLang's ``DSATokenToKVPool.__init__`` and its paged allocator, executed in
``fuzz.engines.sglang.real.runtime.dsa_index``; ``tests/test_dsa_index.py`` holds them equal).

A DeepSeek sparse-attention model stores an index key per KV location at ``loc // page`` with no bounds check, at
the allocator's own location: under DCP the allocator spans ``size * D`` tokens in pages of ``page * D`` (every rank
keeps every index key), so the cache must hold every such location.  Sized from the pool's ``size`` alone it holds
about ``size + page`` of them (whole pages): at D >= 2 the allocator's upper pages store past it
[cite: dsa-index-buf-size].  Sized ``(size + page) * D - page`` it holds every one of the allocator's (exactly,
where the page divides the size) [cite: dsa-index-buf-size-dcp].
"""

from __future__ import annotations

# DSA's page on a CUDA GPU: the pool asserts its (index) page is 64 [cite: dsa-page-64].
DSA_PAGE = 64


def index_buf_size(size: int, page: int, dcp: int, widened: bool) -> int:
    """The pool's ``index_buf_size`` (the target's, not the draft's replicated pool): ``size`` before the DCP
    sizing, ``(size + page) * D - page`` with it."""
    return (size + page) * dcp - page if widened else size


def index_locations(size: int, page: int, dcp: int, widened: bool) -> int:
    """The locations the index key cache holds: ``(index_buf_size + page + 1) // page`` pages of ``page`` each
    [cite: dsa-index-rows]."""
    return (index_buf_size(size, page, dcp, widened) + page + 1) // page * page


def dcp_largest_location(size: int, page: int, dcp: int) -> int:
    """The largest location the allocator of a pool of ``size`` tokens hands out at DCP size ``dcp``: the paged
    allocator over ``size * dcp`` tokens in pages of ``page * dcp`` [cite: dcp-allocator-size], its pages
    numbered from 1 (page 0 is the padding page) [cite: paged-free-pages], so its last page ends at
    ``(pages + 1) * page * dcp - 1``."""
    alloc_page = page * dcp
    return (size * dcp // alloc_page + 1) * alloc_page - 1
