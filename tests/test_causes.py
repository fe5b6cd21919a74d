"""SGLang's root causes by counterfactual (``fuzz.engines.sglang.causes``): one entry per cause, decided by what
makes each case pass.

The groups come from the bounded proof's witnesses over the tiny space (every regime, seconds); the causes
are the ones the issue names per release: 0.5.23 two (#33579; the unified Mamba builders, new), 0.5.18 four
(#35424, #33579, #35265, the unified builders). A plant in a sizing file is a third, new cause naming the
function; a group only two fixes remove is listed under both.
"""

from __future__ import annotations

from pathlib import Path

from allocator_model.known_bugs import KNOWN_FIX, KNOWN_FIXES, fully_fixed, with_fixes
from allocator_model.revisions import REFERENCE, get_revision
from fuzz.engines.sglang.causes.counterfactual import cause_of, fails, fixed_target, root_causes
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.sweep import prove
from fuzz.findings.cause import CauseKind
from fuzz.findings.render import causes_block
from fuzz.targets.resolve import resolve_target

SHAPE = Path(__file__).parent / "sglang_shapes" / "uno.py"
PAGE_1_FIX = ("    if page > 1 or _algorithm().is_uno():\n", "    if True:\n")
DFLASH_RESERVE_D = (
    '    """R = 2L."""\n    return 2 * get_alloc_len_per_decode()',
    '    """R = 2L."""\n    return (1 if _algorithm().is_dflash() else 2) * get_alloc_len_per_decode()',
)


def witnesses(spec: str):
    target = resolve_target(spec)
    result = prove(target, request(target, "tiny"))
    return target, [g.witness for g in result.sorted_groups()]


def labels(spec: str) -> dict[str, tuple[int, int]]:
    """cause label -> (variants, needs-both groups)."""
    target, found = witnesses(spec)
    causes = root_causes(target, found)
    assert sum(len(c.variants) for c in causes) + sum(len(v) for c in causes for v in c.needs_both.values()) >= len(
        found
    )
    return {c.label: (len(c.variants), sum(len(v) for v in c.needs_both.values())) for c in causes}


def test_the_fixes_name_revision_fields_and_the_reference_carries_none():
    fields = {f for fix in KNOWN_FIXES for f in fix.fields}
    assert fields <= set(REFERENCE.__dataclass_fields__)
    assert not any(fix.applies(REFERENCE) for fix in KNOWN_FIXES)
    for name in ("sglang-0.5.18", "sglang-0.5.23", "sglang-0.5.15"):
        assert not any(fix.applies(fully_fixed(get_revision(name))) for fix in KNOWN_FIXES)
    assert KNOWN_FIX["page-1-headroom"].applies(get_revision("sglang-0.5.23"))
    assert not KNOWN_FIX["alloc-page-dcp"].applies(get_revision("sglang-0.5.23"))
    assert not KNOWN_FIX["page-1-headroom"].applies(
        with_fixes(get_revision("sglang-0.5.23"), (KNOWN_FIX["page-1-headroom"],))
    )


def test_0_5_23_has_two_root_causes_on_the_model():
    assert set(labels("reference@sglang-0.5.23")) == {"#33579", "new: unified-rows"}


def test_0_5_18_has_four_root_causes_and_a_group_that_needs_both():
    found = labels("reference@sglang-0.5.18")
    assert set(found) == {"#35424", "#33579", "#35265", "new: unified-rows"}
    assert found["#33579"][1] >= 1 and found["new: unified-rows"][1] >= 1  # page 1 on unified memory: both


def test_the_reference_is_clean_and_every_cause_comes_from_a_case_that_passes_once_fixed():
    target, found = witnesses("reference@sglang-0.5.18")
    assert found
    for f in found:
        fix = cause_of(target, f)
        assert fix is not None, f.signature
        assert fails(target, f) and not fails(fixed_target(target, fix), f)


def test_a_plant_in_the_sizing_file_is_a_new_cause_naming_its_function(tmp_path):
    text = SHAPE.read_text()
    for old, new in (PAGE_1_FIX, DFLASH_RESERVE_D):
        assert text.count(old) == 1
        text = text.replace(old, new)
    path = tmp_path / "allocation_sizing.py"
    path.write_text(text)
    target, found = witnesses(f"{path}@0.5.23")
    causes = root_causes(target, found)
    assert [c.label for c in causes] == ["new: alloc_reserve_per_decode"], causes_block("plant", causes)
    assert causes[0].kind is CauseKind.PIECE
    assert "alloc_reserve_per_decode 17, fixed 34" in causes[0].values[0]
    assert any("get_alloc_reserve_per_decode" in w for w in causes[0].where)


def test_0_5_23_real_code_has_the_same_two_causes_and_names_the_builders(pinned_wheels):
    target, found = witnesses("sglang==0.5.23")
    causes = {c.label: c for c in root_causes(target, found)}
    assert set(causes) == {"#33579", "new: unified-rows"}
    where = " ".join(causes["new: unified-rows"].where)
    assert "_init_unified_mamba_pools" in where and "_init_unified_mamba_swa_pools" in where
    assert any("get_req_to_token_extra_context_len" in w for w in causes["#33579"].where)


def test_the_causes_block_lists_each_cause_once_worst_first():
    target, found = witnesses("reference@sglang-0.5.23")
    block = causes_block(target.spec, root_causes(target, found))
    assert block.startswith("ROOT CAUSES on reference@sglang-0.5.23: 2 cause(s)")
    assert block.count("#33579: the row headroom") == 1
    assert "needs both (with #33579)" in block
    assert block.count("     missing: ") == 2  # the catalog names the term each lacks
    assert "missing: the reserve term R + page - 1 of the headroom at allocator page 1" in block


def test_a_cause_names_the_missing_term_only_where_the_catalog_states_it():
    from fuzz.findings.cause import Cause, CauseKind

    stated = [k for k in KNOWN_FIXES if k.missing]
    assert {k.key for k in stated} >= {"page-1-headroom", "alloc-page-dcp", "unified-rows"}
    unstated = Cause("x", CauseKind.PIECE, "new", "t", "f", table="req_to_token")
    assert "missing" not in unstated.to_json() and "missing:" not in causes_block("t", [unstated])


def test_merge_decides_the_causes_itself_and_never_prints_a_shards(tmp_path, monkeypatch, capsys):
    import json

    from fuzz.cli import main
    from fuzz.engines.sglang.catalog import CATALOG
    from fuzz.engines.sglang.decode.check import check_scenario, decode_finding
    from fuzz.findings import casefile
    from fuzz.findings.report import Command, write_report

    monkeypatch.chdir(tmp_path)
    target = resolve_target("reference@sglang-0.5.18")
    bug = next(b for b in CATALOG if b.bug == "#35424" and b.revision == "sglang-0.5.18")
    _, found = check_scenario(target, bug.scenario)
    f = decode_finding(target.spec, found[0], bug.scenario)
    (tmp_path / "shard" / "cases").mkdir(parents=True)
    casefile.save(f, str(tmp_path / "shard" / "cases"))
    forged = {
        "key": "x",
        "kind": "known",
        "bug": "#1",
        "title": "FORGED \x1b[2J",
        "fix": "",
        "variants": [],
        "needs_both": {},
        "values": [],
        "where": [],
    }
    entry = {
        **{"target": target.spec, "status": "counterexample", "seconds": 1, "examples": 1, "shard": "1/1"},
        "findings": [f.to_json()],
        "causes": [forged],
    }
    write_report(str(tmp_path / "shard" / "run.json"), Command.RUN, [entry])
    assert main(["merge", "shard/run.json", "--cases-out", "merged", "--json", "merged.json"]) == 1
    out = capsys.readouterr().out
    assert "FORGED" not in out and "root cause #35424:" in out
    (merged,) = json.loads((tmp_path / "merged.json").read_text())["targets"]
    assert [c["bug"] for c in merged["causes"]] == ["#35424"]
