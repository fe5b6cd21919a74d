"""FA3's CUDA-graph page table as a checked table (issue 36, stage 1): the model's twins, the closed form and its
sweep, the findings, the launch line.  SGLang's own builders are held to the twin in ``test_fa3_builders.py``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from graph_twin import reduced
from hypothesis import given, settings
from hypothesis import strategies as st

from allocator_model.config import ServingConfig
from allocator_model.page_tables import GraphSizing, Mode, TableWidth, graph_builds, judged, steps
from allocator_model.revisions import get_revision
from fuzz.common.defaults import ALL_ALGORITHMS
from fuzz.engines import engine_of
from fuzz.engines.sglang.page_tables import FA3, FA3_PAGE_TABLE, FA3_TABLE
from fuzz.engines.sglang.page_tables import observe as observe_table
from fuzz.findings.kinds import Property
from fuzz.prove.proof import ProveOptions
from fuzz.prove.tables import prove_table
from fuzz.tables import judge, table, tables
from fuzz.targets.resolve import resolve_target
from strategies.configs import serving_configs

EAGLE = {"speculative_algorithm": "EAGLE"}  # SGLang's auto shape: (S, K, D) = (3, 1, 4)


def target(spec: str) -> Any:
    return resolve_target(spec)


def case(committed: int, lag: int) -> dict[str, Any]:
    return {"committed_len": committed, "num_steps": None, "prior": None, "device_lag": lag}


def breaches(spec: str, cfg: ServingConfig, data: dict[str, Any]) -> dict[Property, int]:
    return {b.prop: b.overshoot for b in judge(FA3_TABLE, observe_table(FA3, target(spec), cfg, data))}


def test_the_table_is_declared_after_req_to_token_and_hunted() -> None:
    names = [t.name for t in tables() if t.engine == "sglang"]
    assert names.index("req_to_token") < names.index(FA3_PAGE_TABLE)
    assert table(FA3_PAGE_TABLE) is FA3_TABLE and FA3_TABLE.hunted
    assert set(FA3_TABLE.proved) == {Property.WRITE_WITHIN_ROW, Property.READ_WITHIN_ROW}


def test_near_the_limit_each_release_breaks_as_its_verify_builder_does() -> None:
    """C = 40, P = 4, EAGLE (3, 1, 4), overlap on, one token of lag: the verify publishes 41 tokens = 11 pages of a
    10-page row.  0.5.15-0.5.21's builder masks by length over a 4096-token block: it also writes page 10, into the
    next row; 0.5.22-0.5.23's clamps: the kernel reads past only; the reference sizes the row from req_to_token."""
    cfg = ServingConfig.resolve(context_len=40, page_size=4, **EAGLE)
    near = case(36, 1)
    assert breaches("reference@sglang-0.5.18", cfg, near) == {
        Property.WRITE_WITHIN_ROW: 1,
        Property.READ_WITHIN_ROW: 1,
    }
    assert breaches("reference@sglang-0.5.23", cfg, near) == {Property.READ_WITHIN_ROW: 1}
    assert breaches("reference", cfg, near) == {}
    assert breaches("reference@sglang-0.5.18", cfg, case(30, 1)) == {}  # far from the limit: nothing


def test_a_write_past_the_row_names_the_next_batch_row_and_the_mode() -> None:
    cfg = ServingConfig.resolve(context_len=40, page_size=4, **EAGLE)
    accesses = observe_table(FA3, target("reference@sglang-0.5.18"), cfg, case(36, 1))
    write = next(a for a in accesses if a.changed_outside)
    assert write.native.mode is Mode.TARGET_VERIFY and "target_verify_metadata['page_table']" in write.step
    assert write.changed_outside[0].row == 1 and "next request of the batch" in (write.changed_outside[0].owner or "")


def test_a_case_the_scheduler_cannot_reach_is_refused() -> None:
    cfg = ServingConfig.resolve(context_len=40, page_size=4, **EAGLE)
    with pytest.raises(ValueError, match="committed_len"):
        observe_table(FA3, target("reference@sglang-0.5.23"), cfg, case(39, 0))


def test_topk_above_one_and_uno_are_not_this_tables() -> None:
    tree = ServingConfig.resolve(
        context_len=64,
        page_size=1,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
    )
    assert list(steps(tree, tree.launch_runtime)) == [] and not judged("UNO", 1) and judged(None, 1)


REVISIONS = ("reference", "sglang-0.5.13", "sglang-0.5.14", "sglang-0.5.18", "sglang-0.5.23")
MODES = st.frozensets(st.sampled_from(list(Mode)))


@st.composite
def sizings(draw: st.DrawFn) -> GraphSizing:
    """A revision's FA3 sizing, or any sizing a backend's builders may have (the closed form's whole family)."""
    from allocator_model.page_tables import AttentionBackend

    if draw(st.booleans()):
        return get_revision(draw(st.sampled_from(REVISIONS))).graph_sizing(AttentionBackend.FA3)
    block = draw(st.sampled_from([None, 64, 256, 4096]))
    unclamped = draw(MODES) if block else frozenset()
    return GraphSizing(draw(st.sampled_from(list(TableWidth))), block, unclamped, draw(MODES))


@settings(max_examples=200, deadline=None, database=None)
@given(cfg=serving_configs(), sizing=sizings(), lead=st.integers(-8, 80))
def test_the_tensor_twin_is_the_builds_reduced(cfg: ServingConfig, sizing: GraphSizing, lead: int) -> None:
    """``reach_grid`` (what prove sweeps) equals each row's widest build of ``graph_builds`` (what run judges)."""
    seq = max(1, cfg.context_len - 4 + min(lead, 0))
    row = cfg.context_len + 4 + lead % 17  # any row width: the twin takes it as given
    if sizing.block_tokens and sizing.block_tokens % cfg.page_size:
        return  # a grid's block is whole pages (``build_trtllm_mha_page_table`` asserts it)
    for rt in cfg.runtimes():
        built = graph_builds(cfg, rt, seq, sizing, row)
        w, write, read = reduced(cfg, rt, seq, row, sizing)
        reached = [b.read_pages if b.stopped_by else b.written + b.spilled for b in built]
        assert write == max(reached, default=0)
        if not any(b.stopped_by for b in built):  # a stopped step reads nothing
            assert read == max((b.read_pages for b in built), default=0)
        assert all(b.width == w for b in built)


def prover(spec: str, algorithm: str | None = ALL_ALGORITHMS, space: str = "tiny") -> Any:
    t = target(spec)
    return t, engine_of(t).prover(t, ProveOptions(space=space, algorithm=algorithm))


def test_the_reference_is_clean_over_the_bounded_space() -> None:
    t, p = prover("reference")
    proof = prove_table(t, FA3_TABLE, p)
    assert proof.refused is None and proof.configurations > 5_000 and not proof.groups


@pytest.mark.parametrize("algorithm", ["UNO", "EAGLE"])
def test_the_proof_counts_only_the_launches_a_table_is_judged_on(algorithm: str) -> None:
    """UNO's verify and topk > 1 build tables of their own (not checked): a proof over UNO alone judges no page
    table (said, never "no configuration reaches past"), and EAGLE's counts its topk 1 launches only, as the
    configuration-by-configuration proof does."""
    t, p = prover("reference@sglang-0.5.23", algorithm)
    swept = prove_table(t, FA3_TABLE, p)
    one_by_one = prove_table(t, dataclasses.replace(FA3_TABLE, sweep=None), p)
    if algorithm == "UNO":
        assert swept.configurations == one_by_one.configurations == 0 and not swept.groups
        assert swept.refused and "topk 1, no speculation or any algorithm but UNO" in swept.refused
        assert one_by_one.refused
        return
    assert swept.refused is None and swept.configurations == one_by_one.configurations > 0
    every = sum(1 for _ in p.configurations())
    assert swept.configurations < every  # the topk > 1 launches of the space are not counted


def test_each_release_breaks_where_its_builders_say_and_every_witness_replays() -> None:
    t, p = prover("reference@sglang-0.5.18")
    proof = prove_table(t, FA3_TABLE, p)
    props = {g.signature.prop for g in proof.groups.values()}
    assert props == {Property.WRITE_WITHIN_ROW, Property.READ_WITHIN_ROW}
    assert all(g.witness is not None for g in proof.groups.values())
    t, p = prover("reference@sglang-0.5.23")
    proof = prove_table(t, FA3_TABLE, p)
    assert {g.signature.prop for g in proof.groups.values()} == {Property.READ_WITHIN_ROW}


@pytest.mark.parametrize("algorithm", ["DFLASH", "NGRAM", None])
def test_the_sweep_counts_what_the_closed_form_finds_configuration_by_configuration(algorithm: str | None) -> None:
    """Where the verify builder clamps (no block period) the sweep covers exactly ``Prover.configurations``: each
    group's count and worst are those of ``closed_form`` asked one configuration at a time."""
    t, p = prover("reference@sglang-0.5.23", algorithm)
    swept = prove_table(t, FA3_TABLE, p)
    one_by_one = prove_table(t, dataclasses.replace(FA3_TABLE, sweep=None), p)
    assert swept.configurations == one_by_one.configurations
    assert {s: (g.configurations, g.worst) for s, g in swept.groups.items()} == {
        s: (g.configurations, g.worst) for s, g in one_by_one.groups.items()
    }
    if algorithm == "DFLASH":  # D = 16 > 4: every residue at the limit reads past (not vacuous)
        assert swept.groups


def test_the_launch_line_names_fa3_and_its_hardware() -> None:
    cfg = ServingConfig.resolve(context_len=4096, page_size=1, **EAGLE)
    line = engine_of(target("reference")).launch_line(cfg, FA3_PAGE_TABLE)
    assert line is not None and "--attention-backend fa3" in line and "SM90" in line
    assert "--attention-backend fa3" not in (engine_of(target("reference")).launch_line(cfg) or "")


def test_width_names_sglangs_sizing_and_the_model_twin_agrees() -> None:
    cfg = ServingConfig.resolve(context_len=4099, page_size=4, **EAGLE)
    for spec, tokens in (("reference@sglang-0.5.23", 4099), ("reference@sglang-0.5.18", 4099)):
        t = target(spec)
        assert FA3_TABLE.width.of(t, cfg) == FA3_TABLE.width.model(cfg, t.revision) == -(-tokens // 4)
    assert {c.qualname for c in FA3_TABLE.width.code} == {
        "FlashAttentionBackend.__init__",
        "FlashAttentionBackend.init_cuda_graph_state",
    }
    assert TableWidth.ROW is get_revision("reference").page_table_width


def test_a_lone_sizing_file_says_the_page_table_was_not_judged() -> None:
    """A sizing file with no tree of SGLang's around it has no FA3 builders to run: every verdict on it names the
    table NOT judged, and why (never a clean verdict that seems to cover it)."""
    from pathlib import Path

    from fuzz.findings.report import Command
    from fuzz.tables.judged import judgements

    lone = Path(__file__).parent / "sglang_shapes" / "main.py"
    t = target(str(lone))
    (j,) = [j for j in judgements(t, Command.RUN, {}) if j.table == FA3_PAGE_TABLE]
    assert j.by is None and "FA3's builders are SGLang's own code, not run here" in j.why_not
    assert FA3_TABLE.refused_on(t) == j.why_not


def test_trtllm_mha_is_declared_after_fa3_and_takes_its_pages_and_topk_1_only() -> None:
    from fuzz.engines.sglang.page_tables import TRTLLM_MHA, TRTLLM_MHA_TABLE

    names = [t.name for t in tables() if t.engine == "sglang"]
    assert names.index(FA3_PAGE_TABLE) < names.index(TRTLLM_MHA.name) and TRTLLM_MHA_TABLE.hunted
    assert table(TRTLLM_MHA.name) is TRTLLM_MHA_TABLE
    for page in (1, 8, 256):
        assert not TRTLLM_MHA.takes(ServingConfig.resolve(context_len=4096, page_size=page))
    assert TRTLLM_MHA.takes(ServingConfig.resolve(context_len=4096, page_size=64, **EAGLE))
    assert not TRTLLM_MHA.takes(ServingConfig.resolve(context_len=4096, page_size=128))
    tree = ServingConfig.resolve(
        context_len=4096, page_size=64, speculative_algorithm="EAGLE", speculative_eagle_topk=2
    )
    assert not TRTLLM_MHA.takes(tree) and FA3.takes(tree)


def test_trtllm_mha_near_the_limit_writes_into_the_next_row_in_0_5_14_and_reads_past_it_after() -> None:
    """C = 48, P = 16, EAGLE (3, 1, 4), overlap on, one token of lag: the verify publishes 49 + 4 = 53 tokens, 4
    pages of a 3-page row.  0.5.14's graph path masks by length over a 4096-token block (it writes page 3 into the
    next row); 0.5.13 and 0.5.15+ clamp (the kernel reads past only); the reference sizes the row from the row."""
    from fuzz.engines.sglang.page_tables import TRTLLM_MHA, TRTLLM_MHA_TABLE

    cfg = ServingConfig.resolve(context_len=48, page_size=16, enable_overlap=True, **EAGLE)
    rev = target("reference@sglang-0.5.14").revision
    near = case(44, 1)
    assert not rev.refuses(cfg)

    def broken(spec: str) -> dict[Property, int]:
        return {
            b.prop: b.overshoot for b in judge(TRTLLM_MHA_TABLE, observe_table(TRTLLM_MHA, target(spec), cfg, near))
        }

    assert broken("reference@sglang-0.5.14") == {Property.WRITE_WITHIN_ROW: 1, Property.READ_WITHIN_ROW: 1}
    assert broken("reference@sglang-0.5.13") == broken("reference@sglang-0.5.23") == {Property.READ_WITHIN_ROW: 1}
    assert broken("reference") == {}


def test_trtllm_mha_over_the_bounded_space_clean_on_the_reference_and_breaking_per_release() -> None:
    from fuzz.engines.sglang.page_tables import TRTLLM_MHA_TABLE

    t, p = prover("reference")
    assert not prove_table(t, TRTLLM_MHA_TABLE, p).groups
    t, p = prover("reference@sglang-0.5.14")
    assert {g.signature.prop for g in prove_table(t, TRTLLM_MHA_TABLE, p).groups.values()} >= {
        Property.WRITE_WITHIN_ROW
    }
    t, p = prover("reference@sglang-0.5.23")
    assert {g.signature.prop for g in prove_table(t, TRTLLM_MHA_TABLE, p).groups.values()} == {Property.READ_WITHIN_ROW}


def test_the_launch_line_names_trtllm_mha_and_its_hardware() -> None:
    from fuzz.engines.sglang.page_tables import TRTLLM_MHA

    cfg = ServingConfig.resolve(context_len=4096, page_size=64, **EAGLE)
    line = engine_of(target("reference")).launch_line(cfg, TRTLLM_MHA.name)
    assert line is not None and "--attention-backend trtllm_mha" in line and "SM100" in line and "SM90" in line


DRAFT_ROWS = {"triton_draft_kv_indices", "flashinfer_draft_kv_indices", "flashinfer_mla_draft_kv_indices"}
EVERY_TABLE = {"fa3_page_table", "trtllm_mha_page_table", "flashmla_page_table", "trtllm_mla_page_table", *DRAFT_ROWS}


@pytest.mark.parametrize(
    ("pin", "out"),
    [
        ("kv_pool=swa", EVERY_TABLE | {"dsa_index_key_cache"}),  # a DSA model's pool is the standard kind, at page 64
        ("page_size=16", {"flashmla_page_table", "trtllm_mla_page_table", "dsa_index_key_cache"}),
        # FA3 runs topk > 1 on its prefix and expand tables (not checked), triton and FlashInfer each branch's range
        # of a step's row (not checked), the others refuse it; UNO verifies on its own (and runs no draft decode steps)
        ("speculative_eagle_topk=2", EVERY_TABLE),
        ("speculative_algorithm=UNO", EVERY_TABLE),
        ("speculative_algorithm=NGRAM", DRAFT_ROWS),
    ],
)
def test_a_pin_no_launch_of_a_backend_takes_leaves_its_table_unjudged_and_said(pin, out, tmp_path, capsys):
    """The pins leave some backends no launch: their tables are not hunted (no search that can draw nothing), and
    the verdict names each with why; the others are judged as ever."""
    from fuzz.cli import main

    assert main(["run", "--target", "reference", "--max-examples", "5", "--pin", pin, "--cases", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    said = {line.split()[2] for line in text.splitlines() if line.strip().startswith("NOT judged:")}
    assert said == out, text
    assert all("the pins leave no launch it is judged on" in line for line in text.splitlines() if "NOT judged" in line)


# -- FlashMLA's table: one page past the context's whole pages, its builder masked by the length over a grid ------


def test_flashmlas_width_is_one_page_past_the_contexts_whole_pages_and_its_verify_writes_into_the_next_row():
    """Upstream's width (C + 64) // 64: a context of whole pages gets a page of room, any other none past its last
    page; a verify past it stores its last page into the next graph row (the builder does not clamp), unless the
    width ends the builder's grid (a multiple of its 64-page blocks): then it only reads past."""
    from fuzz.engines.sglang.page_tables import FLASHMLA, FLASHMLA_TABLE

    rev = get_revision("sglang-0.5.23")
    sizing = rev.graph_sizing(FLASHMLA.backend)
    eagle = dict(speculative_algorithm="EAGLE", speculative_num_steps=3, speculative_eagle_topk=1)
    for context, seq, spilled, read_past in ((4160, 4159, 0, 0), (4159, 4158, 1, 1), (4095, 4094, 0, 1)):
        cfg = ServingConfig.resolve(context_len=context, page_size=64, speculative_num_draft_tokens=4, **eagle)
        verify = next(
            b for b in graph_builds(cfg, cfg.launch_runtime, seq, sizing, 9999) if b.mode is Mode.TARGET_VERIFY
        )
        assert verify.width == (context + 64) // 64 and verify.buffer == "cuda_graph_kv_indices"
        assert (verify.spilled, verify.read_pages - verify.width) == (spilled, read_past), context
    assert FLASHMLA_TABLE.name == "flashmla_page_table"


@pytest.mark.parametrize("spec", ["reference", "reference@sglang-0.5.23", "reference@sglang-0.5.18"])
def test_the_sweep_over_a_grids_residues_equals_the_dense_one(spec: str, monkeypatch) -> None:
    """The sweep computes the residues of the builders' grid block only for the keys that can break with the grid
    end removed (and, for a padded width, only where it can be passed): the same groups, counts and worst witnesses
    as computing all of them for every key (FlashMLA's grid, 0.5.18's FA3 verify grid, trtllm_mla's padding)."""
    import fuzz.engines.sglang.prove.page_tables as swept
    from fuzz.engines.sglang.page_tables import FA3_TABLE, FLASHMLA_TABLE, TRTLLM_MLA_TABLE

    tables = (FA3_TABLE, FLASHMLA_TABLE, TRTLLM_MLA_TABLE)
    t, p = prover(spec, space="small")
    pruned = {tb.name: prove_table(t, tb, p) for tb in tables}
    monkeypatch.setattr(
        swept, "_swept_profiles", lambda keys, context, *a: (*swept._profiles(keys, context, *a), context)
    )
    dense = {tb.name: prove_table(t, tb, p) for tb in tables}
    for name, proof in pruned.items():
        other = dense[name]
        assert proof.configurations == other.configurations
        assert {s: (g.configurations, g.worst, g.worst_case) for s, g in proof.groups.items()} == {
            s: (g.configurations, g.worst, g.worst_case) for s, g in other.groups.items()
        }
    if spec == "reference@sglang-0.5.23":
        assert {g.signature.prop for g in pruned["flashmla_page_table"].groups.values()} == {
            Property.WRITE_WITHIN_ROW,
            Property.READ_WITHIN_ROW,
        }
        assert {g.signature.prop for g in pruned["trtllm_mla_page_table"].groups.values()} == {Property.READ_WITHIN_ROW}


def test_the_launch_line_names_flashmla_an_mla_model_and_its_hardware() -> None:
    from fuzz.engines.sglang.page_tables import FLASHMLA

    cfg = ServingConfig.resolve(context_len=4159, page_size=64, **EAGLE)
    line = engine_of(target("reference")).launch_line(cfg, FLASHMLA.name)
    assert line is not None and "--attention-backend flashmla" in line and "--page-size 64" in line
    assert "MODEL: an MLA model" in line and "SM90" in line


def test_a_table_reads_as_its_name_in_a_drawn_tests_report():
    """The plugin's table tests take a table as an argument, and Hypothesis repeats each argument's repr in what it
    reports: a table's fields bind the engine's functions over its whole declaration (tens of kB each), so it
    reads as its name (Hypothesis warns past 30 kB, and the plugin line prints no warnings)."""
    from hypothesis.internal.reflection import nicerepr

    from fuzz.engines.sglang.page_tables import DECLARED

    assert all(repr(t) == nicerepr(t) == f"Table({name!r})" for name, t in DECLARED.items())
