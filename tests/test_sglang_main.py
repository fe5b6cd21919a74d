"""SGLang main: its API generation end to end, and loading that survives upstream's new imports.

``tests/sglang_shapes/main.py`` is a sizing module in the shape of SGLang
main's ``mem_cache/allocation_sizing.py`` (sgl-project/sglang 84be7ff),
written in this project's words.  Its fix for #33579 (the headroom is the
largest reserve over the candidate allocator pages) must show as clean; the
same file without the candidate-page maximum must be caught, and main's own
row-width guard names how SGLang stops it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allocator_model.config import ServingConfig
from fuzz.cli import main
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.fidelity.differential import fidelity
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.sweep import prove, prove_on
from fuzz.engines.sglang.prove.witness import confirm
from fuzz.engines.sglang.real.stubs import StandInMissing
from fuzz.targets.base import TargetError
from fuzz.targets.resolve import resolve_target

MAIN = Path(__file__).parent / "sglang_shapes" / "main.py"
CANDIDATES = "for p in get_candidate_alloc_page_sizes(server_args)"
GUARD = "def assert_alloc_within_row_width"
ROW_GUARD_OUTCOME = "guard:assert_alloc_within_row_width"


def variant(tmp_path: Path, name: str, old: str, new: str, source: str | None = None) -> Path:
    """main.py with one edit (which must apply), written as ``name``."""
    text = MAIN.read_text() if source is None else source
    assert old in text, f"main.py no longer has {old!r}"
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


def without_candidate_pages(tmp_path: Path) -> Path:
    """Planted: the headroom sized at the bare page only (what #33579's fix replaced under DCP)."""
    return variant(tmp_path, "no_candidates.py", CANDIDATES, "for p in (server_args.page_size,)")


def test_main_is_detected_as_its_own_generation_from_its_signatures():
    target = resolve_target(str(MAIN))
    gen = target.sizing.generation
    assert (gen.name, gen.takes_server_args, gen.page_keyword) == ("row-width", True, True)
    assert gen.has_row_width and gen.has_candidate_pages and gen.has_guard and gen.has_alloc_page
    assert not gen.has_uno and not gen.has_aligned_lens
    assert "row-width API (main shape)" in target.label
    assert target.sizing.module.unsupplied == []  # ceil_align and the accessors all have stand-ins


def test_row_width_and_pages_come_from_the_file():
    """Row width page-aligned to page * dcp_size, read from get_req_to_token_row_width()."""
    sizing = resolve_target(str(MAIN)).sizing
    cfg = ServingConfig.resolve(
        context_len=1000,
        page_size=16,
        attn_dcp_size=4,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
    )
    assert sizing.alloc_page_size(cfg) == 64
    # L at the allocator page 64: 2 pages per branch x 64 x 4 branches; the reserve doubles it.
    assert sizing.alloc_reserve_per_decode(cfg, cfg.launch_runtime) == 2 * 2 * 64 * 4
    assert sizing.req_to_token_extra_context_len(cfg) == 1024
    assert sizing.req_to_token_row_width(cfg) == 2048  # ceil_64(1000 + 1024)
    assert sizing.row_guard_fires(cfg, 2049, 2048) and not sizing.row_guard_fires(cfg, 2048, 2048)


def test_main_is_clean_under_run_and_prove(tmp_path, capsys):
    assert (
        main(["run", "--target", str(MAIN), "--profile", "ci", "--max-examples", "60", "--cases", str(tmp_path)]) == 0
    )
    assert "clean" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())
    result = prove_on(resolve_target(str(MAIN)), "tiny")
    assert result.configurations > 0 and not result.groups


def test_the_page_1_gap_of_0_5_23_is_closed_on_main():
    """The 0.5.23 minimal case of write-within-row/alloc-page-1 (EAGLE (5,4,8) at page 1), on main: inside the row."""
    cfg = ServingConfig.resolve(
        context_len=256,
        speculative_algorithm="EAGLE",
        speculative_num_steps=5,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
    )
    from allocator_model.scenario import DecodeScenario

    scenario = DecodeScenario.from_dict(cfg, {"committed_len": 252, "num_steps": None, "prior": None, "device_lag": 0})
    _, found = check_scenario(resolve_target(str(MAIN)), scenario)
    assert found == []
    _, on_0_5_23 = check_scenario(resolve_target("reference@sglang-0.5.23"), scenario)
    assert [str(v.signature) for v in on_0_5_23] == ["write-within-row/alloc-page-1"]


def test_without_the_candidate_page_maximum_main_is_caught_and_its_guard_named(tmp_path, capsys):
    planted = without_candidate_pages(tmp_path)
    cases = tmp_path / "cases"
    code = main(
        ["run", "--target", str(planted), "--profile", "ci", "--max-examples", "30", "--cases", str(cases), "--quiet"]
        + ["--verbose"]  # every group's block: the guard's group need not lead its cause
    )
    out = capsys.readouterr().out
    assert code == 1
    assert f"write-within-row/dcp>1[{ROW_GUARD_OUTCOME}]" in out
    assert "stops the step instead" in out
    docs = {json.loads(p.read_text())["signature"]: p for p in cases.iterdir()}
    case = docs[f"write-within-row/dcp>1[{ROW_GUARD_OUTCOME}]"]  # other kinds of pool may show it too
    assert main(["repro", str(case), "--target", str(planted)]) == 1
    assert main(["repro", str(case), "--target", str(MAIN)]) == 0  # the fix: the same case passes

    target = resolve_target(str(planted))
    result = prove(target, request(target, "tiny"))
    confirm(target, result)
    assert f"write-within-row/dcp>1[{ROW_GUARD_OUTCOME}]" in {str(s) for s in result.groups}
    assert all(ROW_GUARD_OUTCOME in str(s) for s in result.groups)  # main's guard stops every such write
    assert all(g.confirmed and g.mismatch is None for g in result.groups.values())


def test_without_main_s_guard_eagle_s_own_assert_stops_the_tree_and_prove_agrees_with_the_step_model(tmp_path):
    """Only the tree (topk > 1) reserve depends on the page, and EAGLE asserts there: a crash, never silent.

    Aligned rows in the closed form: each witness (no slack at C + extra = 0 mod A) replays with the same overshoot.
    """
    planted = without_candidate_pages(tmp_path)
    text = planted.read_text()
    unguarded = variant(tmp_path, "unguarded.py", text[text.index(GUARD) :], "", source=text)
    target = resolve_target(str(unguarded))
    result = prove(target, request(target, "tiny"))
    confirm(target, result)
    found = {str(s): g for s, g in result.groups.items()}
    assert "write-within-row/dcp>1[guard:eagle_utils.eagle_prepare_for_decode]" in found
    assert all("guard:eagle_utils.eagle_prepare_for_decode" in s for s in found)
    assert all(g.confirmed and g.mismatch is None and g.worst > 0 for g in result.groups.values())


def test_fidelity_against_the_reference_agrees_where_the_designs_agree():
    result = fidelity(resolve_target(str(MAIN)), revision=None, configs=300)
    # Against its version's semantics (0.5.23) or the reference alike, the row is a design difference.
    assert {"req_to_token_extra_context_len", "req_to_token_row_width"} <= set(result.differs_by_design)
    assert "req_to_token_extra_context_len" not in result.functions
    from allocator_model.revisions import REFERENCE

    against_reference = fidelity(resolve_target(str(MAIN)), revision=REFERENCE, configs=300)
    assert against_reference.findings == []
    assert against_reference.functions == ["alloc_page_size", "alloc_len_per_decode", "alloc_reserve_per_decode"]
    assert "differs by design" in against_reference.summary()


def test_an_unknown_sglang_import_that_is_never_called_loads_and_runs(tmp_path, capsys):
    path = variant(
        tmp_path,
        "new_import.py",
        "from sglang.srt.utils.common import ceil_align",
        "from sglang.srt.utils.common import ceil_align\nfrom sglang.srt.mem_cache.brand_new import fancy_helper",
    )
    target = resolve_target(str(path))
    assert target.sizing.module.unsupplied == ["fancy_helper"]
    assert main(["run", "--target", str(path), "--profile", "ci", "--max-examples", "30", "--quiet"]) == 0


def test_calling_an_unknown_sglang_helper_is_one_line_and_exit_2_naming_it(tmp_path, capsys):
    imported = variant(
        tmp_path,
        "imported.py",
        "from sglang.srt.utils.common import ceil_align",
        "from sglang.srt.utils.common import ceil_align\nfrom sglang.srt.mem_cache.brand_new import fancy_helper",
    )
    path = variant(
        tmp_path,
        "calls_it.py",
        "return 2 * get_alloc_len_per_decode(",
        "return fancy_helper(2) * get_alloc_len_per_decode(",
        source=imported.read_text(),
    )
    with pytest.raises(StandInMissing, match="sglang.srt.mem_cache.brand_new.fancy_helper"):
        cfg = ServingConfig.resolve(context_len=64, speculative_algorithm="NGRAM", speculative_num_draft_tokens=4)
        resolve_target(str(path)).sizing.alloc_reserve_per_decode(cfg, cfg.launch_runtime)
    for argv in (
        ["run", "--target", str(path), "--profile", "ci"],
        ["prove", "--target", str(path), "--space", "tiny"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert "Traceback" not in "".join(err)
        errors = [line for line in err if line.startswith("kvrow-fuzz: error:")]  # after prove's progress lines
        assert len(errors) == 1 and errors[0] == err[-1]
        assert "brand_new.fancy_helper" in err[-1] and "no stand-in" in err[-1]


def test_a_module_level_call_of_an_unknown_helper_is_a_load_error(tmp_path):
    path = variant(
        tmp_path,
        "at_import.py",
        "from sglang.srt.utils.common import ceil_align",
        "from sglang.srt.utils.common import ceil_align\nfrom sglang.srt.utils import register\nregister('x')",
    )
    with pytest.raises(TargetError, match=r"at import: .*sglang\.srt\.utils\.register"):
        resolve_target(str(path))


def test_a_parameter_the_loader_cannot_supply_is_refused_at_load(tmp_path):
    path = variant(
        tmp_path,
        "odd.py",
        "def get_req_to_token_extra_context_len(server_args: ServerArgs) -> int:",
        "def get_req_to_token_extra_context_len(server_args: ServerArgs, allocator) -> int:",
    )
    with pytest.raises(TargetError, match="needs a parameter 'allocator'"):
        resolve_target(str(path))


def test_the_nightly_workflow_checks_sglang_main_and_fails_on_a_finding_or_a_load_failure():
    import shlex

    import yaml

    from fuzz.cli import build_parser

    workflow = yaml.safe_load((Path(__file__).parents[1] / ".github" / "workflows" / "fuzz.yml").read_text())
    job = workflow["jobs"]["sglang-main"]
    assert "schedule" in job["if"] and job["env"]["SIZING"].endswith("python/sglang/srt/mem_cache/allocation_sizing.py")
    runs = [s.get("run", "") for s in job["steps"]]
    assert any("git clone --depth 1 https://github.com/sgl-project/sglang" in r for r in runs)
    commands = [line.split("|")[0] for r in runs for line in r.splitlines() if line.startswith("python -m fuzz ")]
    assert [c.split()[3] for c in commands] == ["run", "prove"]
    for c in commands:
        argv = shlex.split(c.replace('"$SIZING"', str(MAIN)))[3:]
        assert build_parser().parse_args(argv).target == [str(MAIN)]
        assert "|| true" not in c
    # The exit status reaches the job (bash -eo pipefail through tee; nothing swallows it).
    assert all(not s.get("continue-on-error") for s in job["steps"])
    assert workflow["defaults"]["run"]["shell"] == "bash"
