"""Every quick verdict proves the sizing first (``Engine.quick_space``): run, the plugin's proof test, the action.

The two files the issue measured, in the UNO shape (``tests/sglang_shapes/uno.py``, with the page-1 headroom
fixed so the base is clean): a spec-v2 tree footprint that rounds pages down, and a decode length sized from
the run-time draft-token count instead of the launch-time bound (so the row, sized at launch, is short once
adaptive spec raises it). Each is found by the proof stage ``run`` and the plugin share; the clean base is not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fuzz.cli import main
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.prove.quick import QUICK_SPACE, proof_stage, quick_proof
from fuzz.targets.resolve import resolve_target

SHAPE = Path(__file__).parent / "sglang_shapes" / "uno.py"
PAGE_1 = ("    if page > 1 or _algorithm().is_uno():\n", "    if True:\n")
TREE_DOWN = (
    "return max((page - 1 + steps + page - 1) // page * page * branches, verify)",
    "return max(max(1, (page - 1 + steps) // page) * page * branches, verify)",
)
RUNTIME_D = ("    verify = max_speculative_num_draft_tokens()\n", "    verify = spec.speculative_num_draft_tokens\n")


def shaped(tmp_path: Path, name: str, *edits: tuple[str, str]) -> str:
    text = SHAPE.read_text()
    for old, new in (PAGE_1, *edits):
        assert text.count(old) == 1, f"uno.py no longer has {old!r}"
        text = text.replace(old, new)
    path = tmp_path / name / "allocation_sizing.py"
    path.parent.mkdir()
    path.write_text(text)
    return f"{path}@0.5.23"


def proved_groups(spec: str) -> set[str]:
    proved, groups = quick_proof(resolve_target(spec))
    assert proved.space == QUICK_SPACE and proved.configurations > 0
    return {str(g.signature) for g in groups}


def test_a_decode_length_from_the_runtime_draft_count_is_proved(tmp_path):
    groups = proved_groups(shaped(tmp_path, "adaptive", RUNTIME_D))
    assert any("adaptive" in g for g in groups), groups


def test_the_plugin_proof_test_fails_on_the_tree_file_and_passes_on_the_base(tmp_path):
    """The clean base proves clean; the tree footprint rounded down is proved (its drafts group, at the tree)."""
    from fuzz.properties.test_kvrow_decode import test_the_sizing_holds_over_the_bounded_space as proof_test
    from fuzz.pytest_failures import PropertyFailed

    proof_test(resolve_target(shaped(tmp_path, "base")), None)
    with pytest.raises(PropertyFailed) as failed:  # its witnesses, printed by the plugin as prove's WITNESS blocks
        proof_test(resolve_target(shaped(tmp_path, "tree", TREE_DOWN)), None)
    assert failed.value.word == "WITNESS"
    assert any(str(f.signature).startswith("drafts-within-allocation/tree") for f in failed.value.findings)


def test_run_reports_what_it_proved_and_each_proved_group(tmp_path, capsys):
    spec = shaped(tmp_path, "tree", TREE_DOWN)
    report = tmp_path / "r.json"
    code = main(
        ["run", "--target", spec, "--max-examples", "5", "--write-path", "model", "--quiet"]
        + ["--cases", str(tmp_path / "cases"), "--json", str(report)]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "proved: the sizing arithmetic of every configuration of the small space" in out
    entry = json.loads(report.read_text())["targets"][0]
    assert entry["proof_space"] == QUICK_SPACE and entry["proof_groups"] >= 1
    assert any(f["signature"].startswith("drafts-within-allocation/tree") for f in entry["findings"])


def test_a_pinned_run_says_it_proved_nothing(tmp_path, capsys):
    code = main(
        ["run", "--target", "reference", "--max-examples", "5", "--pin", "page_size=16", "--quiet"]
        + ["--cases", str(tmp_path / "cases")]
    )
    assert code == 0
    assert "proved: nothing (--pin page_size narrows the space)" in capsys.readouterr().out


def test_workers_prove_disjoint_shares_that_make_the_whole():
    target = resolve_target("reference@sglang-0.5.18")
    whole, _ = proof_stage(target, (0, 1), {})
    parts = [proof_stage(target, (k, 3), {})[0] for k in range(3)]
    assert sum(p["proved_configurations"] for p in parts) == whole["proved_configurations"]
    assert all(p["proved_configurations"] > 0 for p in parts)


def test_a_finding_outside_the_proof_says_it_was_only_sampled():
    from allocator_model.config import ServingConfig
    from fuzz.engines.sglang.cases import SGLangCase
    from fuzz.findings.kinds import Property, Scope
    from fuzz.findings.model import Finding, Violation
    from fuzz.findings.render import counterexample_block

    sampled = {p for p in Property if p.scope is Scope.SAMPLED}
    assert Property.NEIGHBOUR_ROWS_UNTOUCHED in sampled and SGLangProperty.NO_LEAK in sampled
    proved = {p for p in Property if p.scope is Scope.PROVED}
    assert proved == {
        Property.WRITE_WITHIN_ROW,
        SGLangProperty.DRAFTS_WITHIN_ALLOCATION,
        SGLangProperty.PAGE_ALIGNED_GROWTH,
    }
    assert Property.SIZING_RAISED.scope is Property.MODEL_MISMATCH.scope is Scope.OWN
    cfg = ServingConfig.resolve(context_len=40)

    def block(prop: Property) -> str:
        v = Violation(prop, "paged", "request 0 (row 1) wrote columns [0, 44) of a row 42 wide")
        return counterexample_block(Finding(SGLangCase.LIFECYCLE, "reference", v, cfg, {"steps": []}))

    said = "scope: sampled only: neighbour-rows-untouched lies outside the bounded proof"
    assert said in block(Property.NEIGHBOUR_ROWS_UNTOUCHED)
    assert "scope:" not in block(Property.WRITE_WITHIN_ROW)
