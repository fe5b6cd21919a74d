"""req_to_token and the allocator behave like SGLang's: flat-offset writes, LIFO rows, whole pages."""

import torch

from allocator_model.allocator import TokenToKVPoolAllocator, allocator_page_size
from allocator_model.config import ServingConfig
from allocator_model.req_to_token import GUARD, ReqToTokenPool


def test_first_request_gets_the_last_row_and_rows_are_lifo():
    pool = ReqToTokenPool(4, 10)
    assert [pool.alloc(), pool.alloc()] == [4, 3]
    pool.free(3)
    assert pool.alloc() == 3


def test_write_past_the_width_lands_in_the_next_row():
    pool = ReqToTokenPool(4, 10)
    rec = pool.write(2, 8, 13, torch.arange(100, 105))
    assert pool.req_to_token[2, 8:10].tolist() == [100, 101]
    assert pool.req_to_token[3, 0:3].tolist() == [102, 103, 104]
    assert [(s.victim_row, s.col_start, s.col_end) for s in rec.spills] == [(3, 0, 3)]
    assert rec.overshoot == 3


def test_write_past_the_last_row_lands_in_the_guard():
    pool = ReqToTokenPool(2, 10, guard_rows=1)
    before = pool.snapshot()
    rec = pool.write(2, 9, 12, torch.arange(1, 4))
    assert rec.spills[0].victim_row == GUARD
    assert [(s.victim_row, s.col_start, s.col_end) for s in pool.changed_outside(before, 2)] == [(GUARD, 0, 2)]


def test_slice_reads_clamp_at_the_width():
    pool = ReqToTokenPool(2, 10)
    pool.write(1, 0, 12, torch.arange(1, 13))
    assert len(pool.read(1, 0, 12)) == 10  # the spilled two are invisible to their owner


def test_allocator_page_follows_dcp():
    assert allocator_page_size(ServingConfig.resolve(context_len=10, page_size=1, attn_dcp_size=4)) == 4
    assert allocator_page_size(ServingConfig.resolve(context_len=10)) == 1


def test_alloc_extend_fills_the_last_page_then_whole_pages():
    a = TokenToKVPoolAllocator(64, 4)
    first = a.alloc_extend("r", 0, 6, None)
    assert first.tolist() == [4, 5, 6, 7, 8, 9]  # pages 1 and 2; page 0 is reserved
    more = a.alloc_extend("r", 6, 10, int(first[-1]))
    assert more.tolist() == [10, 11, 12, 13]
    assert a.owned_pages("r") == [1, 2, 3]


def test_free_is_page_granular_and_catches_double_and_foreign_frees():
    a = TokenToKVPoolAllocator(64, 4)
    x = a.alloc_extend("x", 0, 4, None)
    y = a.alloc_extend("y", 0, 4, None)
    assert a.free(x, "x") == []
    assert a.free(x, "x")[0].owner is None  # double free
    assert a.free(y, "x")[0].owner == "y"  # freeing someone else's page


def test_out_of_memory_returns_none_and_takes_nothing():
    a = TokenToKVPoolAllocator(8, 4)  # pages 1 and 2 usable; page 0 is padding
    assert a.alloc_extend("r", 0, 12, None) is None
    assert a.available_size() == 8
