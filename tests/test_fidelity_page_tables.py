"""``fidelity``'s comparison of FA3's page tables (``fuzz.engines.sglang.fidelity.page_tables``): the model's twin
against SGLang's own builders, executed, build by build, on scenarios drawn near the limit of small contexts.

Hermetic: the pinned real wheels (``pinned_wheels``: the cache ``./kvrow test`` fills; a missing wheel skips, saying
which) and triton's interpreter; 40 builds a release (about 0.5 s once the release's backend modules are loaded).
A planted twin error (a revision field of the release's model changed) must come out as a
``model-mismatch/fa3_page_table`` finding, exit 1 and a case file that replays it; the same case passes on the
twin as shipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from allocator_model.page_tables import TableWidth  # noqa: E402
from allocator_model.revisions import RELEASE_REVISIONS, REVISIONS  # noqa: E402
from fuzz.cli import main  # noqa: E402
from fuzz.engines.sglang.cases import SGLangCase  # noqa: E402
from fuzz.engines.sglang.fidelity.differential import fidelity  # noqa: E402
from fuzz.engines.sglang.fidelity.page_tables import page_table_fidelity  # noqa: E402
from fuzz.engines.sglang.page_tables import FA3_PAGE_TABLE, GRAPH_TABLES  # noqa: E402
from fuzz.findings.schemas import validate  # noqa: E402
from fuzz.targets.resolve import resolve_target  # noqa: E402

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="FA3's builders need triton")
STEPS = 40


@pytest.mark.parametrize("release", ["0.5.18", "0.5.23"])
@needs_triton
def test_the_twin_agrees_with_sglangs_builders_on_drawn_builds(release: str, pinned_wheels: Path) -> None:
    """Every build agrees, among them builds the table's verdicts are about (published past the width; 0.5.18's
    verify builder also writes past it, 0.5.23's clamps), over no speculation and the EAGLE family at least."""
    target = resolve_target(f"sglang=={release}")
    tally, found = page_table_fidelity(target, STEPS)
    assert found == [] and tally.skipped is None
    assert tally.steps >= STEPS and tally.agree == tally.steps and tally.scenarios > 0
    assert sum(tally.per_algorithm.values()) == tally.steps and {"none", "EAGLE"} <= set(tally.per_algorithm)
    assert tally.read_past > 0
    assert (tally.spilled > 0) == (target.revision.fa3_verify_block_tokens is not None)
    assert page_table_fidelity(target, STEPS)[0].to_json() | {"seconds": 0} == tally.to_json() | {"seconds": 0}
    assert tally.text().startswith(f"{FA3_PAGE_TABLE}: {tally.agree}/{tally.steps} builds agree (none ")


@needs_triton
def test_trtllm_mlas_twin_agrees_where_its_padded_width_is_passed(pinned_wheels: Path) -> None:
    """trtllm_mla's width is padded to whole 4096-token blocks: only contexts near one pass it, which the draws reach
    (the table's covering contexts, shifted by blocks): every build agrees, some of them reads past the width."""
    tally, found = page_table_fidelity(
        resolve_target("sglang==0.5.23"), STEPS, table=GRAPH_TABLES["trtllm_mla_page_table"]
    )
    assert found == [] and tally.skipped is None and tally.agree == tally.steps >= STEPS
    assert tally.read_past > 0 and tally.spilled == 0  # its builder's grid ends with the padded row


@needs_triton
@pytest.mark.parametrize(
    ("release", "change"),
    [
        ("0.5.18", {"fa3_verify_block_tokens": None}),
        ("0.5.23", {"fa3_verify_block_tokens": 4096}),
        ("0.5.18", {"page_table_width": TableWidth.ROW}),
    ],
    ids=["verify-clamped-where-sglang-spills", "verify-spills-where-sglang-clamps", "width-from-the-row"],
)
def test_a_planted_twin_error_is_a_mismatch(release: str, change: dict, pinned_wheels: Path) -> None:
    real = resolve_target(f"sglang=={release}")
    planted = real.revision.but(f"{real.revision.name}-planted", "a twin error", **change)
    target = type(real)(**{**real.__dict__, "revision": planted})
    tally, found = page_table_fidelity(target, STEPS)
    assert tally.agree < tally.steps
    (f,) = found
    assert str(f.signature) == f"model-mismatch/{FA3_PAGE_TABLE}" and f.kind is SGLangCase.DECODE
    assert "real " in f.violation.headline and "; model " in f.violation.headline


@needs_triton
def test_the_command_exits_1_on_a_planted_error_and_its_case_replays(
    pinned_wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fidelity`` with the model of 0.5.18 planted (its verify builder clamped): exit 1, the tally in the JSON
    report, a case file; ``repro`` fails it while the plant stands and passes on the twin as shipped."""
    name = RELEASE_REVISIONS["0.5.18"]
    shipped = REVISIONS[name]
    cases, report = tmp_path / "cases", tmp_path / "f.json"
    args = ["fidelity", "--target", "sglang==0.5.18", "--configs", "20", "--write-path-steps", "0"]
    args += ["--page-table-steps", str(STEPS), "--cases", str(cases), "--json", str(report), "--quiet"]
    with monkeypatch.context() as plant:
        plant.setitem(REVISIONS, name, shipped.but(name, shipped.summary, fa3_verify_block_tokens=None))
        assert main(args) == 1
        out = capsys.readouterr().out
        assert f"COUNTEREXAMPLE model-mismatch/{FA3_PAGE_TABLE} on sglang==0.5.18" in out
        launch = next(line for line in out.splitlines() if line.strip().startswith("launch:"))
        assert "--attention-backend fa3" in launch  # the backend whose builders disagree, not the default's
        doc = json.loads(report.read_text())
        validate("report", doc)
        (entry,) = doc["targets"]
        table = entry["page_tables"][FA3_PAGE_TABLE]
        assert table["steps"] >= STEPS and table["agree"] < table["steps"] and table["skipped"] is None
        assert [f["signature"] for f in entry["findings"]] == [f"model-mismatch/{FA3_PAGE_TABLE}"]
        (case,) = cases.glob("*.json")
        assert main(["repro", str(case)]) == 1
        assert f"FAILS model-mismatch/{FA3_PAGE_TABLE}" in capsys.readouterr().out
    assert main(["repro", str(case)]) == 0
    assert "passes: model-mismatch no longer fails" in capsys.readouterr().out
    args[args.index("--page-table-steps") + 1] = "0"  # 0 skips it: no tally, nothing said
    assert main(args) == 0 and json.loads(report.read_text())["targets"][0]["page_tables"] == {}


@needs_triton
def test_a_lone_sizing_file_says_the_table_was_not_compared(pinned_wheels: Path, tmp_path: Path) -> None:
    """No SGLang tree around the file: nothing is compared, and the summary says why (never an agreement)."""
    from fuzz.engines.sglang.real import wheels

    source, _ = wheels.read_sizing_from_wheel(wheels.release_wheel("0.5.23"))
    path = tmp_path / "allocation_sizing.py"
    path.write_text(source)
    r = fidelity(resolve_target(str(path)), configs=20, page_table_steps=STEPS)
    assert len(r.page_tables) == len(GRAPH_TABLES) and all(t.steps == 0 and t.skipped for t in r.page_tables.values())
    assert f"; {FA3_PAGE_TABLE}: not compared (FA3's builders are SGLang's own code, not run here" in r.summary()
    assert "; trtllm_mha_page_table: not compared (trtllm_mha's builders are SGLang's own code" in r.summary()
    assert r.findings == []


def test_the_matrix_judges_a_table_case_on_the_reference(tmp_path: Path) -> None:
    """A release's campaign finds FA3 table cases (kind table-case, a table and its data): the matrix's reference
    check judges each through its table (the reference sizes the table from the row: it passes) and its markdown
    shows the case, where both once read the case as a decode scenario and the command crashed."""
    from allocator_model.config import ServingConfig
    from allocator_model.scenario import DecodeScenario, max_device_lag
    from allocator_model.scheduler import decode_alloc_bound
    from fuzz.campaign.driver import CampaignResult
    from fuzz.engines.sglang.fidelity.matrix import MatrixSettings, Row, reference_check
    from fuzz.engines.sglang.fidelity.matrix_report import write_matrix
    from fuzz.engines.sglang.page_tables import FA3_TABLE
    from fuzz.tables.case import TableCase
    from fuzz.verdict import PIPELINE

    target = resolve_target("reference@sglang-0.5.18")  # the model's twin: the table sized from the context
    cfg = ServingConfig.resolve(
        context_len=40,
        page_size=4,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
        enable_overlap=True,
    )
    s = DecodeScenario(cfg, decode_alloc_bound(cfg, target.revision), device_lag=max_device_lag(cfg))
    found = PIPELINE.case(target, TableCase(FA3_TABLE, cfg, s.to_dict()), confirm=False).findings
    assert {f.case["table"] for f in found} == {FA3_PAGE_TABLE} and len(found) == 2
    row = Row("0.5.18", target, CampaignResult(target.spec, 1, 0.1, found))
    reference_check(row)
    assert row.checks == {f.signature: "passes" for f in found}
    text = write_matrix(str(tmp_path), [row], MatrixSettings("ci", 10, 0, 0), requested=["0.5.18"], seconds=1.0)
    assert "context_len=40 page_size=4 speculative_algorithm=EAGLE" in text and f"; {FA3_PAGE_TABLE} {{" in text


@needs_triton
def test_tritons_twin_agrees_on_its_draft_steps_and_their_spills(pinned_wheels: Path) -> None:
    """triton's draft kv_indices: drawn on the EAGLE family alone (its table's launches), every step's build agrees,
    some of them stored past their row (the kernel masks by the length alone) and told their reader so."""
    tally, found = page_table_fidelity(
        resolve_target("sglang==0.5.23"), STEPS, table=GRAPH_TABLES["triton_draft_kv_indices"]
    )
    assert found == [] and tally.skipped is None and tally.agree == tally.steps >= STEPS
    assert "none" not in tally.per_algorithm and tally.spilled > 0 and tally.read_past > 0
