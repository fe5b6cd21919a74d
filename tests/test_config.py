"""Configuration validation: what server_args accepts, with one-line errors for the rest."""

import json

import pytest

from allocator_model.algorithms import Algorithm
from allocator_model.config import ConfigError, ServingConfig


def test_defaults_follow_sglang_auto_values():
    assert ServingConfig.resolve(context_len=100, speculative_algorithm="eagle").launch_runtime.num_draft_tokens == 4
    ngram = ServingConfig.resolve(context_len=100, speculative_algorithm="NGRAM")
    assert (ngram.speculative_num_steps, ngram.speculative_eagle_topk, ngram.speculative_num_draft_tokens) == (
        1,
        10,
        12,
    )
    dflash = ServingConfig.resolve(context_len=100, speculative_algorithm="DFLASH")
    assert (dflash.speculative_num_steps, dflash.speculative_eagle_topk, dflash.speculative_num_draft_tokens) == (
        1,
        1,
        16,
    )


def test_topk_one_forces_d_equals_s_plus_one():
    cfg = ServingConfig.resolve(
        context_len=100, speculative_algorithm="EAGLE3", speculative_num_steps=5, speculative_eagle_topk=1
    )
    assert cfg.speculative_num_draft_tokens == 6


def test_adaptive_default_has_dmax_8_and_one_runtime_per_candidate():
    cfg = ServingConfig.resolve(context_len=100, speculative_algorithm="EAGLE", speculative_adaptive=True)
    assert cfg.max_speculative_num_draft_tokens == 8
    assert [(rt.num_steps, rt.num_draft_tokens) for rt in cfg.runtimes()] == [(0, 1), (1, 2), (3, 4), (5, 6), (7, 8)]


@pytest.mark.parametrize(
    "args, needle",
    [
        (dict(context_len=100, page_size=0), "page_size must be >= 1"),
        (
            dict(context_len=100, speculative_algorithm="EAGLE", speculative_eagle_topk=0),
            "speculative_eagle_topk must be >= 1",
        ),
        (dict(context_len=0), "context_len must be >= 1"),
        (dict(context_len=100, attn_dcp_size=3, tp_size=4), "divisible by attn_dcp_size"),
        (dict(context_len=100, speculative_algorithm="MEDUSA"), "unknown speculative_algorithm"),
        (
            dict(context_len=100, speculative_algorithm="UNO", attn_dcp_size=2, speculative_num_draft_tokens=4),
            "UNO needs tp_size 1",
        ),
        (
            dict(context_len=100, speculative_algorithm="UNO", speculative_num_steps=4, speculative_num_draft_tokens=4),
            ">= num_steps + 1",
        ),
        (dict(context_len=100, speculative_algorithm="UNO", speculative_num_draft_tokens=129), "<= 128"),
        (
            dict(
                context_len=100,
                speculative_algorithm="UNO",
                speculative_num_draft_tokens=128,
                speculative_eagle_topk=17,
            ),
            "<= 2048",
        ),
        (dict(context_len=100, speculative_algorithm="DSPARK", speculative_num_draft_tokens=1), "gamma + 1 >= 2"),
        (dict(context_len=100, speculative_algorithm="DFLASH", speculative_num_steps=2), "speculative_num_steps 1"),
        (dict(context_len=100, speculative_algorithm="NGRAM", speculative_adaptive=True), "EAGLE and EAGLE3 only"),
        (
            dict(context_len=100, speculative_algorithm="EAGLE", speculative_adaptive=True, speculative_eagle_topk=2),
            "topk 1",
        ),
        (dict(context_len=100, speculative_num_steps=3), "speculative_algorithm is None"),
        (dict(context_len=100, page_sizes=3), "unknown configuration field"),
        (dict(context_len="100"), "must be an integer"),
    ],
)
def test_invalid_configurations_get_one_line_errors(args, needle):
    with pytest.raises(ConfigError) as e:
        ServingConfig.resolve(**args)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_round_trips_through_sglang_names():
    cfg = ServingConfig.resolve(
        context_len=777,
        page_size=16,
        attn_dcp_size=2,
        speculative_algorithm="EAGLE",
        speculative_adaptive=True,
        speculative_adaptive_candidate_steps=[1, 3],
    )
    assert ServingConfig.from_dict(cfg.to_dict()) == cfg


def test_algorithm_names_become_enum_members_and_stay_plain_names_in_json():
    cfg = ServingConfig.resolve(context_len=100, speculative_algorithm="eagle3")
    assert cfg.speculative_algorithm is Algorithm.EAGLE3 and cfg.speculative_algorithm == "EAGLE3"
    direct = ServingConfig(
        context_len=100,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
    )
    assert direct.speculative_algorithm is Algorithm.EAGLE
    text = json.dumps(cfg.to_dict())
    assert '"speculative_algorithm": "EAGLE3"' in text
    assert ServingConfig.from_dict(json.loads(text)) == cfg
    assert f"{cfg.speculative_algorithm}" == "EAGLE3" and "speculative_algorithm=EAGLE3" in cfg.short()
