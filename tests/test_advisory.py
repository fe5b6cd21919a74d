"""``advisory``: one upstream-ready Markdown issue per root cause, rebuilt from values; the shipped one checked.

The shipped advisory (``docs/advisories/unified-rows.md``, the unified Mamba builders' 4 + D rows of 0.5.23)
is regenerated from its committed cases and must be the same text; its regression test fails on 0.5.23's
tree and passes on the tree whose two builders use ``get_req_to_token_extra_context_len()``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from checkout_trees import build_tree

from fuzz.cli import main
from fuzz.findings.casefile import load_document, replay_document
from fuzz.findings.regression import emit_test

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "advisories"
HAS_TRITON = importlib.util.find_spec("triton") is not None


def python_block(markdown: str) -> str:
    return re.search(r"```python\n(.*?)```", markdown, re.S).group(1)


@pytest.mark.skipif(
    not HAS_TRITON,
    reason="triton (the writepath extra) is not installed: the advisory's SGLang write-path line cannot be regenerated",
)
def test_the_shipped_advisory_is_what_the_command_writes_from_its_cases(pinned_wheels, tmp_path, capsys):
    assert main(["advisory", str(SHIPPED / "cases"), "--out", str(tmp_path)]) == 0
    assert "new: unified-rows" in capsys.readouterr().out
    assert (tmp_path / "unified-rows.md").read_text() == (SHIPPED / "unified-rows.md").read_text()


def test_the_shipped_advisory_states_the_case_at_page_above_1_on_the_builders():
    text = (SHIPPED / "unified-rows.md").read_text()
    assert "--page-size 64" in text and "--enable-unified-memory" in text
    assert "_init_unified_mamba_pools" in text and "_init_unified_mamba_swa_pools" in text
    assert "Upstream:** new" in text and "get_req_to_token_extra_context_len()" in text


def test_its_regression_test_fails_on_0_5_23_and_passes_on_the_fixed_builders(pinned_wheels, tmp_path):
    text = (SHIPPED / "unified-rows.md").read_text()
    docs = [load_document(str(p)) for p in sorted((SHIPPED / "cases").glob("*.json"))]
    shown = [d for d in docs if emit_test(d).strip() == python_block(text).strip()]
    assert len(shown) == 1, "the advisory's test is the emitted test of one of its cases"
    doc = shown[0]
    buggy = build_tree(tmp_path / "buggy", "0.5.23", fixed=("page-1-headroom",))
    fixed = build_tree(tmp_path / "fixed", "0.5.23", fixed=("page-1-headroom", "unified-mamba-rows"))
    assert replay_document(doc, target=str(buggy)).reproduced
    assert not replay_document(doc, target=str(fixed)).reproduced


def test_a_case_that_no_longer_fails_is_left_out_and_nothing_to_write_is_exit_1(tmp_path, capsys):
    case = next((SHIPPED / "cases").glob("*.json"))
    doc = json.loads(case.read_text())
    doc["target"] = "reference"  # the reference sizes every row with the headroom: the case passes there
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "left out" in out and "no longer fails" in out and not list((tmp_path / "out").glob("*.md"))


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(signature="write-within-row/made-up-group"),
        lambda d: d.update(property="import os"),
        lambda d: d.update(config={"context_len": -1}),
    ],
)
def test_a_forged_case_is_one_line_and_exit_2(edit, tmp_path, capsys):
    doc = json.loads(next((SHIPPED / "cases").glob("*.json")).read_text())
    edit(doc)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
