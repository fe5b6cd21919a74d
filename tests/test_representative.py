"""Each bug group's representative case (issue 35): the same group at a deployment people run, found by a budgeted
walk from its minimal case, replayed and confirmed like it, leading the report; no printed case keeps a DCP size
its group does not need.

The values the walk moves toward are SGLang's, read here from the pinned 0.5.18 and 0.5.23 wheels: EAGLE's
auto-chosen (S, K, D) (``speculative_hook.py``, ``_auto_choose_speculative_params``), DSPARK's default gamma
(``dspark_components/dspark_config.py``, ``DEFAULT_DSPARK_GAMMA``), DFLASH's default block size
(``speculative_hook.py``, ``inferred_block_size``), the pages attention backends force (``arg_groups/overrides.py``:
``_page_size_default``, ``_mla_backend_page_constraints``, ``_fa4_page_constraint``) and the overlap scheduler's
default (``disable_overlap_schedule``: ``server_args.py`` in 0.5.18, ``arg_groups/fields/schedule.py`` in 0.5.23).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import re
import zipfile

import pytest
from hermetic import require_wheel

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.defaults import BACKEND_PAGES, DSPARK_DEFAULT_GAMMA, EAGLE_AUTO_PARAMS
from allocator_model.scenario import DecodeScenario
from fuzz.engines import BUILTIN_RUN
from fuzz.engines.sglang import representative, search_budget
from fuzz.engines.sglang.decode.check import DecodeCase
from fuzz.engines.sglang.groups import scenario_of
from fuzz.findings import casefile
from fuzz.findings.output import save_case
from fuzz.findings.render import counterexample_block
from fuzz.targets.resolve import resolve_target
from fuzz.verdict import PIPELINE

HAS_TRITON = importlib.util.find_spec("triton") is not None
SRT = "sglang/srt/"
HOOK = SRT + "arg_groups/speculative_hook.py"
OVERRIDES = SRT + "arg_groups/overrides.py"

# #33579 as a covering cell of 0.5.18's model meets it: page 1 under DCP 8, DFLASH at its defaults; the case fails
# without DCP too (the row headroom at page 1), so its group is alloc-page-1, which needs no DCP.
PAGE_1_UNDER_DCP = (
    {
        "context_len": 261,
        "page_size": 1,
        "attn_dcp_size": 8,
        "speculative_algorithm": "DFLASH",
        "speculative_num_steps": 1,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 16,
        "enable_overlap": False,
    },
    {"committed_len": 257, "device_lag": 0, "num_steps": None, "prior": None},
)
# #33579 as 0.5.23's covering set meets it: page 1, EAGLE at the Llama auto choice, a context of 256.
PAGE_1 = (
    {
        "context_len": 256,
        "page_size": 1,
        "speculative_algorithm": "EAGLE",
        "speculative_num_steps": 5,
        "speculative_eagle_topk": 4,
        "speculative_num_draft_tokens": 8,
        "enable_overlap": False,
    },
    {"committed_len": 252, "device_lag": 0, "num_steps": None, "prior": None},
)
# The seed bug (#35424) as 0.5.18's covering set meets it: DCP is its cause.
SEED = (
    {
        "context_len": 1533,
        "page_size": 64,
        "attn_dcp_size": 8,
        "speculative_algorithm": "EAGLE",
        "speculative_num_steps": 3,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": 4,
        "enable_overlap": False,
    },
    {"committed_len": 1529, "device_lag": 0, "num_steps": None, "prior": None},
)


def finding(spec, case):
    target = resolve_target(spec)
    config, state = case
    found = PIPELINE.case(target, DecodeCase(DecodeScenario.from_dict(ServingConfig.from_dict(config), state)))
    (f,) = [f for f in found.findings if f.signature.prop.value == "write-within-row"]
    return target, f


# -- the values moved toward are SGLang's own ------------------------------------------------------------------


def member(release: str, name: str) -> str:
    with zipfile.ZipFile(require_wheel(release)) as z:
        return z.read(name).decode()


def function(source: str, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name)


@pytest.mark.parametrize("release", ["0.5.18", "0.5.23"])
def test_the_speculative_defaults_are_the_releases_own(release):
    auto = function(member(release, HOOK), "_auto_choose_speculative_params")
    returned = [ast.literal_eval(n.value) for n in ast.walk(auto) if isinstance(n, ast.Return)]
    assert {p for _, p in EAGLE_AUTO_PARAMS} == set(returned)
    assert returned[-1] == EAGLE_AUTO_PARAMS[0][1], "the choice for every architecture not named: most models"
    llama = next(n for n in ast.walk(auto) if isinstance(n, ast.If) and "LlamaForCausalLM" in ast.unparse(n.test))
    assert ast.literal_eval(llama.body[0].value) == EAGLE_AUTO_PARAMS[1][1]
    config = member(release, SRT + "speculative/dspark_components/dspark_config.py")
    assert re.search(rf"^DEFAULT_DSPARK_GAMMA = {DSPARK_DEFAULT_GAMMA}$", config, re.M)
    assert "verify_window = int(gamma) + 1" in member(release, HOOK)
    block = re.search(r"inferred_block_size = (\d+)$", member(release, HOOK), re.M)
    assert ServingConfig.resolve(context_len=8, speculative_algorithm="DFLASH").speculative_num_draft_tokens == int(
        block.group(1)
    )


@pytest.mark.parametrize("release", ["0.5.18", "0.5.23"])
def test_the_pages_are_those_the_releases_backends_run_with(release):
    source = member(release, OVERRIDES)
    default = ast.unparse(function(source, "_page_size_default"))
    assert "return {'page_size': 1}" in default  # the CUDA deployment's page where no backend forces one
    forced = set()
    for name in ("_mla_backend_page_constraints", "_fa4_page_constraint"):
        text = ast.unparse(function(source, name))
        forced |= {int(n) for n in re.findall(r"page_size = (\d+)|'page_size': (\d+)", text) for n in n if n}
        forced |= {int(n) for lst in re.findall(r"page_size not in \[([\d, ]+)\]", text) for n in lst.split(",")}
    assert set(BACKEND_PAGES) - {1} <= forced and {64, 128} <= set(BACKEND_PAGES)
    fields = member(release, SRT + "server_args.py" if release == "0.5.18" else SRT + "arg_groups/fields/schedule.py")
    field = fields[fields.index("disable_overlap_schedule: A[") :]
    assert re.match(r"disable_overlap_schedule: A\[.*?\] = False", field, re.S)  # the overlap scheduler on
    assert ServingConfig(context_len=8).enable_overlap


def test_the_budget_run_help_states_is_the_engines():
    assert BUILTIN_RUN["sglang"] == search_budget.budget_text()
    assert f"at most {search_budget.BUDGET} replays" in BUILTIN_RUN["sglang"]


# -- the walk ---------------------------------------------------------------------------------------------------


def test_a_minimal_case_keeps_no_dcp_size_its_group_does_not_need():
    target, f = finding("reference@sglang-0.5.18", PAGE_1_UNDER_DCP)
    assert str(f.signature) == "write-within-row/alloc-page-1" and f.config.attn_dcp_size == 8
    kept = representative.without_needless_dcp(target, f)
    assert kept.config.attn_dcp_size == 1 and kept.signature == f.signature
    assert "fails without DCP too" not in kept.violation.describe()
    # The seed bug's group is DCP's: its case keeps it.
    target, seed = finding("reference@sglang-0.5.18", SEED)
    assert representative.without_needless_dcp(target, seed) is seed


def test_the_representative_case_is_the_same_group_at_a_deployment_people_run():
    target, f = finding("reference@sglang-0.5.18", PAGE_1_UNDER_DCP)
    found = representative.search(target, representative.without_needless_dcp(target, f), confirm=False)
    assert found is not None and found.found is not None, found
    rep = found.found
    cfg = rep.config
    assert cfg.context_len in search_budget.LEAD_CONTEXTS and cfg.context_len >= search_budget.WORK_CONTEXT
    assert cfg.attn_dcp_size == 1 and cfg.page_size in BACKEND_PAGES and cfg.enable_overlap
    shape = (cfg.speculative_num_steps, cfg.speculative_eagle_topk, cfg.speculative_num_draft_tokens)
    assert cfg.speculative_algorithm == algo.EAGLE and shape in {p for _, p in EAGLE_AUTO_PARAMS}
    assert "SGLang's auto choice" in found.deployment and f"context {cfg.context_len}" in found.deployment
    assert 1 <= found.replays <= search_budget.BUDGET
    # Replayed through the same pipeline, it fails as the same group; the walk is the same on every run.
    _, again = PIPELINE.checked(target, DecodeCase(scenario_of(rep)))
    assert f.signature in {v.signature for v in again}
    twin = representative.search(target, representative.without_needless_dcp(target, f), confirm=False)
    assert twin.found.case == rep.case and twin.found.config == cfg and twin.replays == found.replays


def test_a_dcp_group_keeps_its_dcp_and_a_context_the_group_needs():
    target, f = finding("reference@sglang-0.5.18", SEED)
    found = representative.search(target, f, confirm=False)
    assert found.found is not None and found.found.config.attn_dcp_size == 8 and found.found.signature == f.signature
    assert "DCP 8 (the group needs it)" in found.deployment


def test_a_search_that_spends_its_budget_says_so_and_the_block_shows_the_minimal_case(monkeypatch, tmp_path):
    target, f = finding("reference@sglang-0.5.18", SEED)
    monkeypatch.setattr(representative, "BUDGET", 1)
    f.search = representative.search(target, f, confirm=False)
    assert f.search.found is None and f.search.replays == 1 and "budget was spent" in f.search.missed
    save_case(f, str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == [casefile.case_file_name(casefile.document(f))]
    block = counterexample_block(f).splitlines()
    assert block[1] == f"  {f.search.line()}" and "none found in 1 of 1 replays" in block[1]
    assert "  config: context_len=1533 " in block[2] and block[-1] == f"repro: {f.repro}"


def test_the_block_and_the_case_files_lead_with_the_representative_case(tmp_path):
    target, f = finding("reference@sglang-0.5.18", SEED)
    f.search = representative.search(target, f, confirm=False)
    save_case(f, str(tmp_path))
    rep = f.search.found
    assert rep.case_path.endswith(f"--{casefile.REPRESENTATIVE}--write-within-row-dcp-1.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [casefile.case_file_name(casefile.document(f)), rep.case_path.rsplit("/", 1)[1]]
    )
    replayed = casefile.replay(rep.case_path)  # its own case file, replayed as any
    assert replayed.reproduced and replayed.signature == str(f.signature)
    block = counterexample_block(f)
    lines = block.splitlines()
    assert lines[0] == f"COUNTEREXAMPLE {f.signature} on reference@sglang-0.5.18"
    assert lines[1].startswith("  representative: context 32768") and f"config: {rep.config.short()}" in lines[2]
    assert block.index(f"  repro: {rep.repro}") < block.index("  minimal case: context_len=1533 ") < len(block)
    assert lines[-1] == f"repro: {f.repro}"  # the minimal case's, last
    doc = f.to_json()
    assert list(doc)[:4] == ["kind", "class", "signature", "representative"]  # it leads the finding's JSON too
    assert doc["representative"]["finding"]["config"]["context_len"] == 32768


@pytest.mark.skipif(not HAS_TRITON, reason="triton (the writepath extra) is not installed: no SGLang write path")
def test_on_a_release_the_representative_case_is_confirmed_on_sglangs_own_code(pinned_wheels):
    target, f = finding("sglang==0.5.23", PAGE_1)
    f = PIPELINE.confirm(target, f)
    found = representative.search(target, f, confirm=True)
    assert found.found is not None and found.found.confirmed is True, found
    assert found.found.confirmation.startswith("confirmed on sglang 0.5.23's own write path")


def test_a_representative_case_sglangs_code_does_not_break_is_a_miss(monkeypatch):
    target, f = finding("reference@sglang-0.5.18", SEED)

    def refused(target, found, *args):
        return dataclasses.replace(found, confirmed=False, confirmation="NOT reproduced there")

    monkeypatch.setattr(representative.PIPELINE, "confirm", refused)
    found = representative.search(target, f, confirm=True)
    assert found.found is None and "does not break the case found (NOT reproduced there)" in found.missed


def test_the_report_schema_holds_a_representative(tmp_path):
    from fuzz.findings.schemas import validate

    target, f = finding("reference@sglang-0.5.18", SEED)
    f.search = representative.search(target, f, confirm=False)
    save_case(f, str(tmp_path))
    validate("finding", json.loads(json.dumps(f.to_json())))
    f.search = representative.search(target, dataclasses.replace(f, search=None), confirm=False)
    missed = dataclasses.replace(f, search=dataclasses.replace(f.search, found=None, missed="x"))
    validate("finding", missed.to_json())
