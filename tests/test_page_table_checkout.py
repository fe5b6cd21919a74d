"""The backends' page tables on checkout-shaped trees (issue 36): SGLang's own builders, run from the tree.

A tree with the page tables sized from the ``req_to_token`` row (``checkout_trees.FIXES["page-table-width"]``, the
approach of PR #29665, with the release's other known bugs fixed) reads clean for the table under ``run``, ``prove``
and the plugin line (the multi-step drafts' kv_indices too); each plant of ``checkout_trees.PAGE_TABLE_PLANTS``, one
per category (a width, a builder's write, a published length, the draft extend, what a builder copies), is found by
``run --profile ci``, and ``prove`` says it has no closed form for a tree whose builders do what none of its closed
forms says (never a clean proof of it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from checkout_trees import KNOWN_BUGS, build_tree
from test_sglang_runtime import need_triton

from fuzz.cli import main

pytest_plugins = ["pytester"]

FA3, TRTLLM_MHA, FLASHMLA = "fa3_page_table", "trtllm_mha_page_table", "flashmla_page_table"
TRTLLM_MLA = "trtllm_mla_page_table"
TABLES = (FA3, TRTLLM_MHA, FLASHMLA, TRTLLM_MLA)
# the multi-step drafts' kv_indices (FlashInfer's on dense and on MLA models)
DRAFT_ROWS = ("triton_draft_kv_indices", "flashinfer_draft_kv_indices", "flashinfer_mla_draft_kv_indices")
# Where each plant lands: on a fixed tree or 0.5.23's own, its table, the classes of its findings (a clamp dropped
# sits on 0.5.23's own context-sized table, whose reads already pass the row: what is new there is the write).
PLANTED: dict[str, tuple[bool, str, set[str]]] = {
    "fa3-width-context-plus-drafts": (True, FA3, {"read-within-row"}),
    "fa3-decode-clamp-dropped": (False, FA3, {"write-within-row"}),
    "fa3-verify-double-window": (True, FA3, {"read-within-row"}),
    "fa3-draft-extend-double-window": (True, FA3, {"read-within-row"}),
    "trtllm-mha-graph-clamp-dropped": (False, TRTLLM_MHA, {"write-within-row"}),
    "fa3-decode-source-stride": (True, FA3, {"copied-from-own-row"}),
    "flashmla-width-context-pages": (True, FLASHMLA, {"write-within-row"}),
    "trtllm-mla-pad-drops-grid-block": (False, TRTLLM_MLA, {"write-within-row"}),
    # on 0.5.23's own tree, whose check stops every step past the row: what is new is a write no check stops
    "flashinfer-draft-check-one-step-short": (False, DRAFT_ROWS[1], {"write-within-row"}),
}
LABEL = {
    FA3: "FA3",
    TRTLLM_MHA: "trtllm_mha",
    FLASHMLA: "FlashMLA",
    TRTLLM_MLA: "trtllm_mla",
    DRAFT_ROWS[1]: "FlashInfer",
}
RUN = ["run", "--profile", "ci", "--max-examples", "20", "--pin", "kv_pool=standard", "--pin", "attn_dcp_size=1"]


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    need_triton()
    root = tmp_path_factory.mktemp("page-table-trees")
    out = {"fixed": build_tree(root / "fixed", "0.5.23", fixed=KNOWN_BUGS)}
    for name, (fixed, _, _) in PLANTED.items():
        out[name] = build_tree(root / name, "0.5.23", fixed=KNOWN_BUGS if fixed else (), plants=(name,))
    return out


def table_findings(tmp_path: Path, tree: Path, *extra: str) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    """The run's findings on the backends' page tables (each tagged with its table), and its report's target."""
    report = tmp_path / "r.json"
    code = main([*RUN, "--target", str(tree), "--quiet", "--cases", str(tmp_path / "c"), "--json", str(report), *extra])
    (t,) = json.loads(report.read_text())["targets"]
    ours = TABLES + DRAFT_ROWS
    return code, [f for f in t["findings"] if f["kind"] == "table-case" and f["case"]["table"] in ours], t


def test_the_fixed_tree_reads_clean_under_run_and_prove(trees: dict[str, Path], tmp_path: Path, capsys) -> None:
    code, found, t = table_findings(tmp_path, trees["fixed"])
    assert found == [] and all(t["tables"][name]["judged"] for name in TABLES + DRAFT_ROWS), t["tables"]
    assert code == 0, [f["signature"] for f in t["findings"]]
    prove = ["prove", "--target", str(trees["fixed"]), "--space", "tiny", "--quiet", "--cases", str(tmp_path / "p")]
    assert main(prove) == 0
    out = capsys.readouterr().out
    assert all(f"no configuration of the space reaches past a part of {name}" in out for name in TABLES + DRAFT_ROWS)


def test_the_fixed_tree_passes_the_plugin_line(trees: dict[str, Path], pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess(
        "--pyargs", "fuzz.properties.test_kvrow_tables", f"--kvrow-target={trees['fixed']}", "--kvrow-max-examples=10",
        "-p", "no:cacheprovider", "-p", "no:xdist", "-k", "_page_table or _draft_kv_indices",
    )  # fmt: skip
    # per table: its four properties drawn, and its bounded proof
    result.assert_outcomes(passed=5 * len(TABLES + DRAFT_ROWS))


@pytest.mark.parametrize("plant", list(PLANTED))
def test_each_plant_is_found_by_run_and_not_proved_clean(
    plant: str, trees: dict[str, Path], tmp_path: Path, capsys
) -> None:
    _, name, props = PLANTED[plant]
    code, every, t = table_findings(tmp_path, trees[plant])
    found = [f for f in every if f["case"]["table"] == name]
    assert code == 1 and found, f"{plant}: {[f['signature'] for f in t['findings']]}"
    silent = [f for f in found if "[" not in f["signature"]]  # neither a read nor a write SGLang's check stops
    assert props <= {f["signature"].partition("/")[0] for f in (silent if "write-within-row" in props else found)}
    own = f"confirmed on SGLang's own {LABEL[name]} builders"
    assert all(f["confirmed"] and f["sglang"].startswith(own) for f in found)
    prove = ["prove", "--target", str(trees[plant]), "--space", "tiny", "--quiet", "--cases", str(tmp_path / "p")]
    main(prove)
    out = capsys.readouterr().out
    assert f"NOT judged: {name}" in out or f"@{name}" in out  # no closed form, or the groups it does prove
