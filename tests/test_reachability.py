"""Every reported decode state is one the modeled scheduler reaches, and the report says how.

A decode case starts a request at kv_allocated_len = kv_committed_len = N.
A fresh prefill reaches that only for N <= min(C, capacity) - 7 (SGLang
refuses longer prompts); past it, only the re-prefill of a retracted request
(prompt plus outputs) does.
"""

from __future__ import annotations

import json

from allocator_model.batch import RunningBatch
from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.revisions import REFERENCE
from allocator_model.scenario import DecodeScenario, PriorStep
from allocator_model.scheduler import max_prompt_len, reached_by
from fuzz.common.profiles import get_profile
from fuzz.engines.sglang.decode.engine import campaign
from fuzz.findings import casefile
from fuzz.targets.resolve import resolve_target

C64 = ServingConfig.resolve(context_len=64, enable_overlap=False)


def test_the_longest_admitted_prompt_is_min_of_context_and_capacity_minus_7():
    assert max_prompt_len(C64) == 57
    assert max_prompt_len(C64.replace(max_total_num_tokens=40)) == 33


def test_a_state_past_the_prompt_limit_is_reached_by_retraction():
    assert reached_by(C64, 57).startswith("a prompt of 57 tokens")
    assert reached_by(C64, 58).startswith("a retracted request re-prefilled")
    scenario = DecodeScenario(
        ServingConfig.resolve(context_len=64, speculative_algorithm="EAGLE"), 60, prior=PriorStep(2)
    )
    assert scenario.start_len == 58
    assert scenario.reached_by().endswith("then one decode step accepting 2")


def test_the_retraction_path_reaches_such_a_state_in_the_lifecycle_model():
    batch = RunningBatch(C64, ModelSizing(REFERENCE), REFERENCE)
    for step in (
        {"op": "admit", "input_len": 57, "max_new_tokens": 1 << 30},
        {"op": "prefill", "rid": 0, "chunk": None},
        {"op": "decode", "accepted": [[0, 1]]},
        {"op": "decode", "accepted": [[0, 1]]},
        {"op": "retract", "rid": 0},
        {"op": "prefill", "rid": 0, "chunk": None},
    ):
        batch.apply(step)
    kv = batch.requests[0].kv
    assert kv is not None and kv.kv_committed_len == kv.kv_allocated_len == 60 > max_prompt_len(C64)


def test_every_decode_finding_and_its_case_file_say_how_it_is_reached(tmp_path):
    result = campaign(
        resolve_target("reference@sglang-0.5.18"),
        get_profile("ci"),
        on_finding=lambda f: casefile.save(f, str(tmp_path)),
    )
    assert result.findings
    for f in result.findings:  # a table's case of a decode scenario (FA3's page table) says it, and the replay
        if f.case.get("table") == "dsa_index_key_cache":  # a pool size and an allocator page: how the pool fills
            assert f.reached_by is not None and f.reached_by.startswith("a DSA model under --dcp-size ")
        else:
            scenario = DecodeScenario.from_dict(f.config, f.case["data"] if "table" in f.case else f.case)
            assert f.reached_by is not None and f.reached_by.startswith(scenario.reached_by())
        assert f.to_json()["reached_by"] == f.reached_by
        with open(f.case_path) as fh:
            assert json.load(fh)["reached_by"] == f.reached_by
