"""What a campaign prints is what a maintainer reads (issue 35): one block per root cause, 120 columns.

``run --quiet`` on the seed bug's release prints the summary and the causes: at most 60 lines, none past 120
columns, every bug group of the report named and each cause's repro line.  The default adds each cause's lead
group in its full block (config, launch line, case, how it is reached, the row, the victim, the row width),
``--verbose`` every group's block.  A launch line broken with shell continuations is the same command pasted,
and a call chain is shown by its entry point and its writer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex

import pytest
from hermetic import unbroken

from fuzz.cli import main
from fuzz.common.columns import WIDTH, collapse_chains, fold, shell_lines
from fuzz.engines.sglang.backends import DSA_INDEX, GRAPH_TABLES
from fuzz.findings.repro import repro_command

RUN = ["run", "--target", "reference@sglang-0.5.18", "--profile", "ci"]
QUIET_LINES = 150  # what --quiet prints of the seed bug's release at the most (50 groups, 12 causes: 143 here, about
# 148 from a fresh clone under /tmp/tmp.XXXXXXXXXX, whose longer program path wraps every repro line)
TABLES = (*GRAPH_TABLES, DSA_INDEX)  # the tables beside req_to_token, each a cause of its own on 0.5.18


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def printed(tmp_path_factory) -> dict[str, tuple[str, dict]]:
    """Each detail's standard output and JSON report, the run in a fresh directory (case files under ``cases/``,
    as a user's relative ``--cases`` would print them)."""
    out: dict[str, tuple[str, dict]] = {}
    for detail in ("--quiet", "", "--verbose"):
        d = tmp_path_factory.mktemp("detail")
        text, here = io.StringIO(), os.getcwd()
        os.chdir(d)
        try:
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
                code = main([*RUN, *([detail] if detail else []), "--cases", "cases", "--json", "r.json"])
        finally:
            os.chdir(here)
        assert code == 1, text.getvalue()
        out[detail] = (text.getvalue(), json.loads((d / "r.json").read_text())["targets"][0])
    return out


def test_quiet_prints_the_summary_and_the_causes_on_a_screen(printed):
    text, report = printed["--quiet"]
    lines = text.splitlines()
    assert len(lines) <= QUIET_LINES, f"{len(lines)} lines:\n{text}"
    # Every line within WIDTH, however the program is spelled: a repro line that passes it (the full path of a
    # script not on the PATH, fuzz.common.program) is broken with a shell continuation and pastes back whole; only
    # a lone word longer than the width (a case file's path) stays whole.
    long = [line for line in lines if len(line) > WIDTH]
    assert all(len(line.split()) == 1 and line.strip().endswith(".json") for line in long), "\n".join(long)
    assert "COUNTEREXAMPLE" not in text
    said = " ".join(text.replace(",", " ").split())
    for f in report["findings"]:
        assert f" {f['signature']} " in f" {said} ", f["signature"]  # every group, by name
    causes = report["causes"]
    whole = unbroken(text).splitlines()
    repros = [line.strip() for line in whole if line.lstrip().startswith(f"repro: {repro_command()} cases/")]
    assert len(causes) == 4 + len(TABLES) and len(repros) == len(causes)
    for c in causes:
        assert f"fix: {c['fix']}" in " ".join(text.split())
    assert "     in: allocator_model/sizing.py:36 alloc_page_size, :69 alloc_len_per_decode, " in text  # a file once


def test_the_default_shows_each_cause_by_its_lead_block_and_its_groups_by_their_repro_lines(printed):
    text, report = printed[""]
    lines = text.splitlines()
    leads = [line.strip() for line in lines if line.lstrip().startswith("COUNTEREXAMPLE ")]
    assert len(leads) == len(report["causes"]), leads  # one block per cause
    assert "COUNTEREXAMPLE write-within-row/dcp>1 on reference@sglang-0.5.18" in leads
    # a long repro line broken with a shell continuation; only a lone word longer than the width (a case file's
    # path) stays whole, and a block's headline (what a reader greps the block by)
    assert all(len(line) <= WIDTH or len(line.split()) == 1 or line.lstrip() in leads for line in lines)
    tables = [lead for lead in leads if any(f"@{t} " in lead or f"@{t}[" in lead for t in TABLES)]  # its table
    assert len(tables) == len(TABLES)
    for field in ("config:", "launch:", "reached:"):  # the representative case's, in full
        assert text.count(field) == len(leads), field
    assert text.count("row width W = ") == len(leads) - len(tables) and text.count("  table:  ") == 2 * len(tables)
    # Each lead led by its representative case (its deployment, then its case), its minimal case after it.
    assert text.count("  representative: context ") == text.count("  minimal case: context_len=") == len(leads)
    assert text.count("  case:   ") == 2 * len(leads)
    writes = [lead for lead in leads if lead.startswith("COUNTEREXAMPLE write-within-row/") and lead not in tables]
    assert len(writes) == text.count("leaked: ") == 3  # a write's row, victim, leak
    blocks = {b.splitlines()[0].strip(): b for b in text.split("COUNTEREXAMPLE ")[1:]}
    assert all("victim: row" in blocks[lead.removeprefix("COUNTEREXAMPLE ")] for lead in writes)
    continued = [i for i, line in enumerate(lines) if line.lstrip().startswith("launch: ")]
    assert all(lines[i].endswith(" \\") for i in continued)  # every launch line here is longer than a screen
    for f in report["findings"]:  # each group's repro line, its representative case's where found
        shown = f["representative"]["finding"]["repro"] if f["representative"]["found"] else f["repro"]
        assert shown in unbroken(text)
    assert len(lines) < len(printed["--verbose"][0].splitlines())


def test_verbose_prints_every_groups_block(printed):
    text, report = printed["--verbose"]
    for f in report["findings"]:
        assert text.count(f"COUNTEREXAMPLE {f['signature']} on reference@sglang-0.5.18\n") == 1, f["signature"]
    causes, groups = 4 + len(TABLES), len(report["findings"])
    assert f"ROOT CAUSES on reference@sglang-0.5.18: {causes} cause(s) for {groups} bug group(s)" in text


def test_the_report_is_the_same_whatever_is_printed(printed):
    reports = [report for _, report in printed.values()]
    for key in ("findings", "causes", "status"):
        assert reports[0][key] == reports[1][key] == reports[2][key], key


def test_a_launch_line_broken_at_the_width_is_the_same_command_pasted():
    command = (
        "python -m sglang.launch_server --model-path MODEL --context-length 131072 --page-size 64 --dcp-size 8 "
        "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 4 --speculative-adaptive-config '{\"candidate_steps\": [1, 3, 5]}' "
        "--disable-overlap-schedule  (MODEL: a hybrid sliding-window model)"
    )
    lines = shell_lines("  launch:", command, 80)
    assert all(len(line) <= 80 for line in lines) and len(lines) > 2
    assert (
        all(line.endswith(" \\") for line in lines[:-2]) and lines[-1] == "      # MODEL: a hybrid sliding-window model"
    )
    pasted = "\n".join(lines[:-1]).removeprefix("  launch:").replace(" \\\n", " ")
    assert shlex.split(pasted) == shlex.split(command.split("  (")[0])
    assert any(line.strip().startswith("--context-length 131072") for line in lines)  # a flag with its value
    assert shell_lines("launch:", "python -m x --a 1", 80) == ["launch: python -m x --a 1"]


def test_a_folded_line_keeps_its_words_and_hangs_under_its_indent():
    line = "    leaked: " + ", ".join(str(n) for n in range(3000, 3060)) + " sit past the row"
    folded = fold(line, 60).splitlines()
    assert len(folded) > 1 and all(len(x) <= 60 for x in folded)
    assert folded[0].startswith("    leaked: ") and all(x.startswith("      ") for x in folded[1:])
    assert " ".join(" ".join(folded).split()) == " ".join(line.split())
    assert fold("short", 60) == "short" and fold("x" * 70, 60) == "x" * 70  # a word is never split


def test_a_call_chain_shows_its_entry_point_and_its_writer():
    chain = " -> ".join(["spec_prepare_for_decode", "eagle_prepare_for_decode", "alloc_token_slots", "Alloc.alloc"])
    said = f"confirmed on sglang 0.5.23's own write path: {chain} -> assign_req_to_token_pool; row 4 overwritten"
    assert collapse_chains(said) == (
        "confirmed on sglang 0.5.23's own write path: spec_prepare_for_decode -> (3 more) -> "
        "assign_req_to_token_pool; row 4 overwritten"
    )
    assert collapse_chains("a -> b -> c") == "a -> b -> c"  # three calls: nothing to leave out


def test_every_campaign_command_takes_quiet_and_verbose():
    from fuzz.cli import build_parser

    parser = build_parser()
    for command in ("run", "lifecycle", "prove"):
        args = parser.parse_args([command, "--target", "reference", "--quiet", "--verbose"])
        assert args.quiet and args.verbose, command


def test_every_group_has_a_representative_case_and_no_printed_case_keeps_a_dcp_size_its_group_does_not_need(printed):
    """Each group's search found a case at context 4096 or more; every case printed (a representative one, a minimal
    one) with a DCP size fails as another group, or not at all, once DCP is removed from it (replayed)."""
    from allocator_model.config import ServingConfig
    from allocator_model.scenario import DecodeScenario
    from fuzz.engines.sglang.decode.check import DecodeCase
    from fuzz.engines.sglang.search_budget import WORK_CONTEXT
    from fuzz.targets.resolve import resolve_target
    from fuzz.verdict import PIPELINE

    _, report = printed[""]
    target = resolve_target(report["target"])
    with_dcp = 0
    for f in report["findings"]:
        searched = f["representative"]
        assert searched["found"] and searched["finding"]["config"]["context_len"] >= WORK_CONTEXT, f["signature"]
        if f["kind"] == "table-case":  # the page tables: no DCP (judged without it); the DSA cache: the group's own
            dcp = 1 if f["case"]["table"] != DSA_INDEX else f["config"]["attn_dcp_size"]
            assert f["config"]["attn_dcp_size"] == searched["finding"]["config"]["attn_dcp_size"] == dcp
            continue
        for case in (f, searched["finding"]):
            cfg = ServingConfig.from_dict(case["config"])
            other = DecodeCase(DecodeScenario.from_dict(cfg, case["case"])).without_dcp(target)
            if cfg.attn_dcp_size == 1 or other is None:
                continue
            with_dcp += 1
            _, found = PIPELINE.checked(target, other)
            assert f["signature"] not in {str(v.signature) for v in found}, (f["signature"], case["config"])
    assert with_dcp  # the seed bug's groups keep theirs
