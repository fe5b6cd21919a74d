"""The committed-length bound comes out of the admission and finish rules."""

import pytest

from allocator_model.config import ServingConfig
from allocator_model.scheduler import max_committed_len_at_decode_alloc


@pytest.mark.parametrize("overlap", [False, True])
def test_bound_is_c_minus_4_since_0_5_19(overlap):
    cfg = ServingConfig.resolve(context_len=1000, enable_overlap=overlap)
    assert max_committed_len_at_decode_alloc(cfg, overlap_drops_finishing=True) == 996


def test_0_5_18_overlap_allows_c_minus_3():
    cfg = ServingConfig.resolve(context_len=1000, enable_overlap=True)
    assert max_committed_len_at_decode_alloc(cfg, overlap_drops_finishing=False) == 997
    assert max_committed_len_at_decode_alloc(cfg.replace(enable_overlap=False), overlap_drops_finishing=False) == 996


def test_capacity_bounds_too():
    cfg = ServingConfig.resolve(context_len=1000, max_total_num_tokens=500)
    assert max_committed_len_at_decode_alloc(cfg) == 496
