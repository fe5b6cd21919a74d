"""Judging a proposed fix (issue 36): ``judge-fix`` and ``advisory --fix``, on FA3's page-table cause of 0.5.23.

Upstream's two approaches, each as anchored edits of the checkout-tree fixture (``checkout_trees.UPSTREAM_FIXES``)
handed to the command as the unified diff a pull request holds (``checkout_trees.patch_of``, computed from the wheel):
PR #35985 (FA3's ``max_context_len`` widened by the draft tokens, C + D) leaves the case at overlap lag 8 > 4 (its
published ``seq + D`` passes C + D) and three covering cases; PR #29665 (sized from the ``req_to_token`` row) closes
every case, and its one failing covering case is a step whose ``req_to_token`` row is short itself (#33579, open in
0.5.23): with #33579's fix in the same checkout it closes every case and the covering set.

The shipped advisory (``docs/advisories/fa3-page-table-width.md``) is what ``advisory`` writes from its committed
cases with both patches; ``python tests/test_fix_judge.py`` rewrites it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from checkout_trees import build_tree, patch_of
from shipped_advisories import ShippedAdvisory
from test_sglang_runtime import need_triton

from fuzz.cli import main
from fuzz.findings.casefile import load_document, replay_document

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "advisories"
CASES = SHIPPED / "cases" / "fa3-page-table"
ADVISORY = SHIPPED / "fa3-page-table-width.md"
APPROACHES = {  # the label each verdict carries -> the fixture's anchored edits of 0.5.23
    "PR #35985 (open): the page table widened by the draft tokens, C + D": ("pr-35985",),
    "PR #29665 (closed): the page table sized from the req_to_token row": ("pr-29665",),
}
LAG_8 = CASES / "sglang-0.5.23--table-case--read-within-row-alloc-page-1-fa3-page-table-stale-read.json"


THIS = ShippedAdvisory(CASES, ADVISORY, "0.5.23", APPROACHES)


def test_the_shipped_page_table_advisory_is_what_the_command_writes_with_both_approaches(
    pinned_wheels, tmp_path, capsys
):
    need_triton()
    assert main(THIS.args(tmp_path / "out", tmp_path)) == 0
    out = capsys.readouterr().out
    assert "new: fa3_page_table-width" in out
    assert (tmp_path / "out" / ADVISORY.name).read_text() == ADVISORY.read_text()
    text = ADVISORY.read_text()
    assert "**Leaves 1 of 4 cases**; 3 of its 8 covering cases fail" in text  # #35985: the lag-8 cases
    assert "**Closes every case given (4 of 4), but 1 of its 8 covering cases fail**" in text  # #29665
    assert "fails the same step too: write-within-row/alloc-page-1 (#33579)" in text
    assert (
        "FA3's kernel (CUDA, on the GPU" in text
        and "does not run" in text
        and "SGLang's own FA3 builders, executed" in text
    )


def test_the_shipped_cases_are_run_s_case_files_with_their_confirmation(pinned_wheels):
    """The cases as ``run`` writes them on a release (with the ``sglang`` field its builders' confirmation fills):
    read and replayed by ``repro`` (it refused that field on a table case before)."""
    for path in sorted(CASES.glob("*.json")):
        doc = load_document(str(path))
        assert doc["kind"] == "table-case" and doc["sglang"].startswith("confirmed on SGLang's own FA3 builders")
    assert replay_document(load_document(str(LAG_8))).reproduced


def test_judge_fix_lists_the_case_a_patch_leaves_with_a_repro_line_that_replays_it(pinned_wheels, tmp_path, capsys):
    need_triton()
    patch = tmp_path / "35985.patch"
    patch.write_text(patch_of("0.5.23", ("pr-35985",)))
    tree = tmp_path / "tree"
    args = ["judge-fix", str(LAG_8), "--fix", f"#35985={patch}", "--tree", str(tree), "--cases", str(tmp_path / "c")]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "LEFT read-within-row/alloc-page-1@fa3_page_table[stale-read]" in out
    assert "the fix leaves 1 of 1 case(s) of fa3_page_table-width, and 3 covering case(s) fail" in out
    (line,) = [x for x in out.splitlines() if x.strip().startswith("repro:") and str(LAG_8) in x]
    target = line.split("--target ", 1)[1].strip()
    assert target.startswith(str(tree)) and replay_document(load_document(str(LAG_8)), target=target).reproduced
    covering = sorted((tmp_path / "c").glob("*fix-covering-*.json"))
    assert len(covering) == 3 and all(
        replay_document(load_document(str(p)), target=target).reproduced for p in covering
    )


def test_judge_fix_on_a_checkout_with_pr_29665_and_33579_s_fix_closes_every_case(pinned_wheels, tmp_path, capsys):
    need_triton()
    fixed = build_tree(tmp_path / "fixed", "0.5.23", fixed=("pr-29665", "page-1-headroom"))
    args = ["judge-fix", str(CASES), "--fix", str(fixed), "--cases", str(tmp_path / "c")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "the fix closes every case of fa3_page_table-width: 4 of 4" in out and ": 8 case(s), 0 failing" in out


@pytest.mark.parametrize(
    ("patch", "said"),
    [
        ("--- a/python/sglang/srt/layers/attention/flashattention_backend.py\n"
         "+++ b/python/sglang/srt/layers/attention/flashattention_backend.py\n"
         "@@ -1,1 +1,1 @@\n-no such line\n+x\n", "hunk 1 of python/sglang/srt/layers/attention/"),
        ("--- a/python/sglang/../../../escape.py\n+++ b/python/sglang/../../../escape.py\n@@ -0,0 +1 @@\n+x\n",
         "is not a relative path inside the tree"),
        ("not a diff at all\n", "holds no unified diff"),
    ],
)  # fmt: skip
def test_a_patch_that_does_not_apply_is_one_line_and_exit_2_before_any_case_runs(
    patch, said, pinned_wheels, tmp_path, capsys, monkeypatch
):
    import fuzz.engines.sglang.causes.advisory as advisory

    monkeypatch.setattr(advisory, "replayed_case", lambda *a: pytest.fail("a case ran"))
    path = tmp_path / "bad.patch"
    path.write_text(patch)
    tree = tmp_path / "tree"
    assert main(["judge-fix", str(LAG_8), "--fix", str(path), "--tree", str(tree), "--cases", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0]
    assert not (tmp_path.parent / "escape.py").exists()


def test_no_case_that_fails_on_its_target_is_bad_input(pinned_wheels, tmp_path, capsys):
    need_triton()
    fixed = build_tree(tmp_path / "fixed", "0.5.23", fixed=("pr-29665",))
    args = ["judge-fix", str(LAG_8), "--fix", str(fixed), "--target", f"{fixed}@0.5.23", "--cases", str(tmp_path)]
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert "no longer fails on its target" in out and "nothing for a fix to close" in err


if __name__ == "__main__":
    THIS.rewrite()
