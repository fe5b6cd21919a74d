"""The sizing functions reproduce the reference doc's numbers."""

import pytest

from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.numeric import ceil_to_page
from allocator_model.revisions import REVISIONS
from allocator_model.sizing import alloc_len_per_decode, page_aligned_decode_alloc_len, tree_pages_per_branch


def sizing(rev):
    return ModelSizing(REVISIONS[rev])


def cfg(**kw):
    return ServingConfig.resolve(**{"context_len": 4096, **kw})


def test_ceil_to_page():
    assert [ceil_to_page(x, 4) for x in (0, 1, 4, 5)] == [0, 4, 4, 8]


def test_alloc_len_branches():
    assert alloc_len_per_decode(None, None, None, None, 64) == 1
    assert alloc_len_per_decode("EAGLE", 5, 4, 8, 1) == 20  # page 1: max(S*K, Dmax)
    assert alloc_len_per_decode("NGRAM", 1, 10, 12, 64) == 12  # no draft KV: no tree term
    assert alloc_len_per_decode("UNO", 3, 2, 8, 64) == 9  # Dmax + 1
    assert tree_pages_per_branch(16, 5) == 2 and tree_pages_per_branch(16, 1) == 1
    assert alloc_len_per_decode("EAGLE", 5, 4, 8, 16) == 2 * 16 * 4
    assert alloc_len_per_decode("EAGLE", 5, 4, 8, 16, tree_footprint=False) == 20


def test_seed_bug_numbers_width_c_plus_71():
    c = cfg(page_size=64, attn_dcp_size=8, speculative_algorithm="EAGLE")
    assert sizing("sglang-0.5.18").req_to_token_extra_context_len(c) == 71  # R 8 + 64 - 1
    assert sizing("sglang-0.5.18").alloc_page_size(c) == 64
    assert sizing("sglang-0.5.23").alloc_page_size(c) == 512
    assert sizing("sglang-0.5.23").req_to_token_extra_context_len(c) == 8 + 511


@pytest.mark.parametrize(
    "kw, reserve, extra_upstream",
    [
        (dict(speculative_algorithm="DSPARK", speculative_num_draft_tokens=17), 34, 21),
        (dict(speculative_algorithm="DFLASH"), 32, 20),
        (
            dict(
                speculative_algorithm="EAGLE",
                speculative_num_steps=5,
                speculative_eagle_topk=4,
                speculative_num_draft_tokens=8,
            ),
            40,
            12,
        ),
    ],
)
def test_page1_gap_upstream_and_fix_in_reference(kw, reserve, extra_upstream):
    c = cfg(**kw)
    assert sizing("sglang-0.5.23").alloc_reserve_per_decode(c, c.launch_runtime) == reserve
    assert sizing("sglang-0.5.23").req_to_token_extra_context_len(c) == extra_upstream
    assert sizing("reference").req_to_token_extra_context_len(c) == reserve  # R + 1 - 1


def test_reference_headroom_covers_every_adaptive_runtime():
    c = cfg(page_size=16, speculative_algorithm="EAGLE", speculative_adaptive=True)
    s = sizing("reference")
    assert s.req_to_token_extra_context_len(c) >= max(s.alloc_reserve_per_decode(c, rt) for rt in c.runtimes()) + 15


def test_growth_is_aligned_and_never_shrinks():
    assert page_aligned_decode_alloc_len(100, 96, 8, 16) == 112
    assert page_aligned_decode_alloc_len(100, 96, 8, 16, aligned=False) == 108
    assert page_aligned_decode_alloc_len(100, 200, 8, 16) == 200  # adaptive downswitch (#23336)


def test_uno_headroom_applies_at_page_one_upstream():
    c = cfg(speculative_algorithm="UNO", speculative_num_steps=1, speculative_num_draft_tokens=8)  # topk 1: one step
    assert sizing("sglang-0.5.23").req_to_token_extra_context_len(c) == 18  # R = 2 * 9


def test_headroom_is_an_enum_and_a_plain_name_still_works():
    from allocator_model.revisions import REFERENCE, Headroom

    assert REVISIONS["sglang-0.5.23"].headroom is Headroom.PAGED and REFERENCE.headroom.every_runtime
    assert REFERENCE.but("x", "a revision given a plain name", headroom="none").headroom is Headroom.NONE
