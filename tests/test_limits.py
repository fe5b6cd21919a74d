"""Every size is bounded: past a documented limit, one line and exit 2 before any tensor is made."""

from __future__ import annotations

import json

import pytest

from allocator_model.config import LIMITS, TENSOR_BUDGET, ConfigError, ServingConfig
from fuzz.cli import main
from fuzz.findings.regression import regression_files

BASE = next(p for p in regression_files() if "0.5.23--write-within-row" in p)


def case_with(tmp_path, text: str):
    path = tmp_path / "case.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_each_limit_is_checked_when_a_configuration_is_built(name):
    with pytest.raises(ConfigError, match=f"{name} .* past this tool's limit of {LIMITS[name]}"):
        ServingConfig.resolve(
            **{
                "context_len": 64,
                "speculative_algorithm": "EAGLE",
                "speculative_eagle_topk": 2,
                "speculative_num_steps": 2,
                "speculative_num_draft_tokens": 4,
                name: LIMITS[name] + 1,
            }
        )


def test_the_pool_must_fit_the_tensor_budget():
    with pytest.raises(ConfigError, match=f"budget of {TENSOR_BUDGET}"):
        ServingConfig.resolve(context_len=LIMITS["context_len"], max_running_requests=LIMITS["max_running_requests"])


@pytest.mark.parametrize(
    "field, value",
    [("context_len", 10**9), ("page_size", 2**40), ("max_running_requests", 10**9), ("context_len", 10**400)],
)
def test_a_case_file_past_a_limit_is_one_line_and_exit_2(tmp_path, capsys, field, value):
    with open(BASE) as f:
        doc = json.load(f)
    doc["config"][field] = value
    assert main(["repro", str(case_with(tmp_path, json.dumps(doc)))]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "past this tool's limit" in err
    assert len(err) < 300  # a huge number is not echoed in full


@pytest.mark.parametrize(
    "text, says", [("[" * 100_000 + "]" * 100_000, "nested too deeply"), (" " * (1 << 20) + "{}", "over 1048576 bytes")]
)
def test_a_hostile_json_file_is_one_line_and_exit_2(tmp_path, capsys, text, says):
    assert main(["repro", str(case_with(tmp_path, text))]) == 2
    _, err = capsys.readouterr()
    assert says in err and len(err.strip().splitlines()) == 1


def test_a_pin_past_a_limit_is_refused_before_any_work(capsys):
    assert main(["run", "--target", "reference", "--pin", "page_size=1099511627776"]) == 2
    assert "page_size 1099511627776 is past this tool's limit of 4096" in capsys.readouterr().err
