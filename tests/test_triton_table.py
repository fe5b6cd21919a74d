"""triton's draft decode kv_indices as a checked table (issue 36, stage 3): the model's twin, its tensor twin, the
closed form and its sweep, the findings, the launch line.  SGLang's own multi-step backend is held to the twin in
``test_triton_builders.py``.

The twin: one row per draft step s in 0..S-1, ``topk * C`` slots wide upstream (``draft_kv_indices_buffer_width``
of one request: the last of a full bucket), step s storing ``seq + s + 1`` slots masked by that length alone, the
reader of step s < S - 1 told that length (``kv_indptr``), step S - 1's row read by nobody.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from graph_twin import reduced
from hypothesis import given, settings
from hypothesis import strategies as st

from allocator_model.config import ServingConfig
from allocator_model.page_tables import (
    LENGTH_GRID,
    AttentionBackend,
    GraphSizing,
    Mode,
    TableWidth,
    graph_builds,
    steps,
)
from allocator_model.revisions import get_revision
from fuzz.engines import engine_of
from fuzz.engines.sglang.page_tables import TRITON, TRITON_TABLE, pinned_out
from fuzz.engines.sglang.page_tables import observe as observe_table
from fuzz.findings.kinds import Property
from fuzz.prove.proof import ProveOptions
from fuzz.prove.tables import prove_table
from fuzz.tables import judge, table, tables
from fuzz.targets.resolve import resolve_target
from strategies.configs import serving_configs

T = AttentionBackend.TRITON
EAGLE5 = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 5, "speculative_eagle_topk": 1,
          "speculative_num_draft_tokens": 6}  # fmt: skip


def sizing(revision: str) -> GraphSizing:
    return get_revision(revision).graph_sizing(T)


def case(committed: int, lag: int) -> dict[str, Any]:
    return {"committed_len": committed, "num_steps": None, "prior": None, "device_lag": lag}


def test_the_table_is_declared_hunted_and_named_for_its_steps() -> None:
    names = [t.name for t in tables() if t.engine == "sglang"]
    assert names.index("req_to_token") < names.index("triton_draft_kv_indices")
    assert table("triton_draft_kv_indices") is TRITON_TABLE and TRITON_TABLE.hunted
    assert "draft decode steps (S >= 2) at topk 1" in TRITON.coverage


def test_it_fills_every_draft_steps_row_and_only_the_draft_steps() -> None:
    """S rows (the last read by nobody: published 0), in slots whatever the page; no speculation, a verify-only
    algorithm and S = 1 run no multi-step draft: not this table's launches."""
    cfg = ServingConfig.resolve(context_len=64, page_size=16, **EAGLE5)
    rt = cfg.launch_runtime
    draft = [s for m, s in steps(cfg, rt, T) if m is Mode.DRAFT_DECODE]
    assert draft == [0, 1, 2, 3, 4]
    assert [s for m, s in steps(cfg, rt) if m is Mode.DRAFT_DECODE] == [0, 1, 2, 3]  # FA3's: the S - 1 that run
    built = graph_builds(cfg, rt, 10, sizing("sglang-0.5.23"), 80)
    assert [(b.mode, b.width, b.page_size, b.written, b.published) for b in built] == [
        (Mode.DRAFT_DECODE, 64, 1, 11 + s, 11 + s if s < 4 else 0) for s in range(5)
    ]
    assert all(b.buffer == "cuda_graph_kv_indices" and not b.spilled and not b.foreign for b in built)
    plain = ServingConfig.resolve(context_len=64, page_size=16)
    dflash = ServingConfig.resolve(context_len=64, page_size=16, speculative_algorithm="DFLASH")
    one = ServingConfig.resolve(context_len=64, page_size=16, **{**EAGLE5, "speculative_num_steps": 1,
                                                                 "speculative_num_draft_tokens": 2})  # fmt: skip
    for c in (plain, dflash, one):
        assert graph_builds(c, c.launch_runtime, 10, sizing("sglang-0.5.23"), 80) == []
        assert not TRITON.takes(c)
    assert TRITON.takes(cfg)


def test_near_the_limit_each_step_past_the_context_spills_into_the_next_steps_row() -> None:
    """C = 64, S = 5, device length 61: step s stores 62 + s slots of a 64-slot row: steps 2, 3 and 4 spill 0, 1, 2
    ... past it (the last past the buffer), and steps 3 tell their reader 65 slots; the reference sizes the row from
    req_to_token's (C plus the draft's headroom): nothing past it."""
    cfg = ServingConfig.resolve(context_len=64, page_size=1, **EAGLE5)
    built = graph_builds(cfg, cfg.launch_runtime, 61, sizing("sglang-0.5.23"), 72)
    assert [(b.written, b.spilled, b.published) for b in built] == [
        (62, 0, 62), (63, 0, 63), (64, 0, 64), (64, 1, 65), (64, 2, 0)
    ]  # fmt: skip
    assert built[3].foreign == 0  # 65 slots of a 72-slot req_to_token row: all the request's own
    ref = graph_builds(cfg, cfg.launch_runtime, 61, sizing("reference"), 72)
    assert all(b.width == 72 and not b.spilled for b in ref)


def test_a_spill_names_the_next_steps_row_and_the_run_judges_it() -> None:
    cfg = ServingConfig.resolve(context_len=64, page_size=1, enable_overlap=True, **EAGLE5)
    t = resolve_target("reference@sglang-0.5.23")
    data = case(cfg.context_len - 1 - 5, 5)
    accesses = observe_table(TRITON, t, cfg, data)
    write = next(a for a in accesses if a.changed_outside)
    assert write.native.mode is Mode.DRAFT_DECODE and "cuda_graph_kv_indices" in write.step and "slots" in write.step
    assert "next draft step's row" in (write.changed_outside[0].owner or "")
    props = {b.prop for b in judge(TRITON_TABLE, accesses)}
    assert Property.WRITE_WITHIN_ROW in props and Property.READ_WITHIN_ROW in props
    assert judge(TRITON_TABLE, observe_table(TRITON, resolve_target("reference"), cfg, data)) == []


@st.composite
def triton_sizings(draw: st.DrawFn) -> GraphSizing:
    """A revision's triton sizing, or FlashInfer's (its rows asserted first), or any draft-step sizing of the family
    (its width's source, clamped or not)."""
    if draw(st.booleans()):
        drawn = sizing(draw(st.sampled_from(["reference", "sglang-0.5.13", "sglang-0.5.23"])))
        return GraphSizing.draft_kv_indices(drawn.width, AttentionBackend.FLASHINFER) if draw(st.booleans()) else drawn
    draft = frozenset({Mode.DRAFT_DECODE})
    block = draw(st.sampled_from([None, LENGTH_GRID]))
    return GraphSizing(draw(st.sampled_from(list(TableWidth))), block, draft if block is not None else frozenset(),
                       backend=T, modes=draft)  # fmt: skip


@settings(max_examples=150, deadline=None, database=None)
@given(cfg=serving_configs(), s=triton_sizings(), lead=st.integers(-8, 80))
def test_the_tensor_twin_is_the_builds_reduced(cfg: ServingConfig, s: GraphSizing, lead: int) -> None:
    """``reach_grid`` (what prove sweeps) equals each row's widest build of ``graph_builds`` (what run judges), for
    a table of the draft steps too."""
    seq = max(1, cfg.context_len - 4 + min(lead, 0))
    row = cfg.context_len + 4 + lead % 17
    for rt in cfg.runtimes():
        built = graph_builds(cfg, rt, seq, s, row)
        w, write, read = reduced(cfg, rt, seq, row, s)
        assert write == max((b.read_pages if b.stopped_by else b.written + b.spilled for b in built), default=0)
        if not any(b.stopped_by for b in built):  # a stopped step reads nothing
            assert read == max((b.read_pages for b in built), default=0)
        else:  # what the grid says it reads is then never judged: its write passes the row first (``_profiles``)
            assert write > w
        assert all(b.width == w for b in built)


def prover(spec: str, algorithm: str | None, space: str = "tiny") -> Any:
    t = resolve_target(spec)
    return t, engine_of(t).prover(t, ProveOptions(space=space, algorithm=algorithm))


@pytest.mark.parametrize("algorithm", ["EAGLE", "EAGLE3"])
def test_the_sweep_counts_what_the_closed_form_finds_and_the_reference_is_clean(algorithm: str) -> None:
    t, p = prover("reference@sglang-0.5.23", algorithm)
    swept = prove_table(t, TRITON_TABLE, p)
    one_by_one = prove_table(t, dataclasses.replace(TRITON_TABLE, sweep=None), p)
    assert swept.refused is None and swept.configurations == one_by_one.configurations > 0
    assert {s: (g.configurations, g.worst) for s, g in swept.groups.items()} == {
        s: (g.configurations, g.worst) for s, g in one_by_one.groups.items()
    }
    assert {g.signature.prop for g in swept.groups.values()} == {Property.WRITE_WITHIN_ROW}
    assert all(g.witness is not None for g in swept.groups.values())
    t, p = prover("reference", algorithm)
    clean = prove_table(t, TRITON_TABLE, p)
    assert clean.refused is None and clean.configurations > 0 and not clean.groups


def test_a_space_without_draft_steps_is_not_judged() -> None:
    t, p = prover("reference@sglang-0.5.23", "DFLASH")
    proof = prove_table(t, TRITON_TABLE, p)
    assert proof.configurations == 0 and proof.refused and "draft decode steps" in proof.refused
    assert "draft decode steps" in (pinned_out(TRITON, {"speculative_algorithm": "NGRAM"}) or "")
    assert "one step" in (pinned_out(TRITON, {"speculative_num_steps": 1}) or "")
    assert pinned_out(TRITON, {"speculative_algorithm": "EAGLE3", "page_size": 48}) is None


def test_the_launch_line_names_triton() -> None:
    cfg = ServingConfig.resolve(context_len=4096, page_size=1, **EAGLE5)
    line = engine_of(resolve_target("reference")).launch_line(cfg, TRITON.name)
    assert line is not None and "--attention-backend triton" in line
    assert "decode CUDA graph off" in line and "batch_size * topk * C" in line  # how one request reaches the rows
    fa3 = engine_of(resolve_target("reference")).launch_line(cfg, "fa3_page_table") or ""
    assert "batch_size" not in fa3
