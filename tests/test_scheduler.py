"""The committed-length bound comes out of the admission, finish and memory rules, per release."""

import pytest

from allocator_model.config import ServingConfig
from allocator_model.scheduler import clamp_max_new_tokens, max_committed_len_at_decode_alloc, max_prompt_len


def test_without_overlap_the_bound_is_c_minus_4():
    cfg = ServingConfig.resolve(context_len=1000, enable_overlap=False)
    for drops in (False, True):
        for in_flight in (False, True):
            assert (
                max_committed_len_at_decode_alloc(cfg, overlap_drops_finishing=drops, counts_in_flight=in_flight) == 996
            )


@pytest.mark.parametrize(
    "spec, drops_finishing, counts_in_flight, bound, releases",
    [
        (True, True, False, 996, "0.5.19+: the honest (stale) committed length; a request with nothing in flight"),
        (True, False, False, 996, "0.5.15-0.5.18: the honest committed length, finishing requests kept"),
        (True, False, True, 997, "0.5.13-0.5.14: the in-flight bonus token pre-claimed"),
        (False, True, False, 996, "non-spec decode allocates at seq_len, in-flight token included; 0.5.19+ drop"),
        (False, False, False, 997, "non-spec decode before 0.5.19 keeps the request the in-flight batch finishes"),
    ],
)
def test_overlap_bound_per_release(spec, drops_finishing, counts_in_flight, bound, releases):
    args = {"speculative_algorithm": "EAGLE"} if spec else {}
    cfg = ServingConfig.resolve(context_len=1000, enable_overlap=True, **args)
    got = max_committed_len_at_decode_alloc(
        cfg, overlap_drops_finishing=drops_finishing, counts_in_flight=counts_in_flight
    )
    assert got == bound, releases


def test_capacity_bounds_too_through_the_memory_clamp():
    """cap 500 at page 16: max_new <= cap - ceil_16(input) - 17, so input + output <= 483 (a page-aligned prompt)."""
    cfg = ServingConfig.resolve(context_len=1000, page_size=16, max_total_num_tokens=500, enable_overlap=False)
    assert clamp_max_new_tokens(cfg, 32, 10_000) == 500 - 32 - 16 - 1
    assert clamp_max_new_tokens(cfg, 33, 10_000) == 500 - 48 - 16 - 1  # the prompt's last page is rounded up
    assert max_committed_len_at_decode_alloc(cfg) == 483 - 2
    no_cap = cfg.replace(max_total_num_tokens=None)
    assert clamp_max_new_tokens(no_cap, 32, 10_000) == 998 - 32


def test_prompts_of_min_c_capacity_minus_6_or_more_are_refused():
    assert max_prompt_len(ServingConfig.resolve(context_len=1000)) == 993
    assert max_prompt_len(ServingConfig.resolve(context_len=1000, max_total_num_tokens=500)) == 493
