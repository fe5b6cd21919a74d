"""Checked tables (``fuzz.tables``): SGLang's ``req_to_token`` declared as one, its width and code resolved from
SGLang's own wheels, and the generic checks agreeing with its worded ones.

The generic checks are what a table without worded checks of its own is judged by (the page tables and the
Mamba scratch to come); here they are held to SGLang's worded checks on the same runs, so the two cannot drift.
"""

from __future__ import annotations

import ast
import zipfile
from dataclasses import replace

import pytest
from hermetic import PINNED_RELEASES, pinned_wheel, require_wheel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allocator_model.revisions import REFERENCE, REVISIONS
from allocator_model.scenario import run_scenario, scenario_problem
from fuzz.engines.sglang.catalog import CATALOG
from fuzz.engines.sglang.decode.properties import violations
from fuzz.engines.sglang.tables import REQ_TO_TOKEN_TABLE, accesses
from fuzz.findings.kinds import Property
from fuzz.tables import CodeRef, Span, Table, declare_table, judge, table, tables
from fuzz.targets.resolve import resolve_target
from strategies.scenarios import decode_scenarios

ROW_PROPERTIES = (Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED)


def test_req_to_token_is_sglangs_declared_table() -> None:
    assert table("req_to_token") is REQ_TO_TOKEN_TABLE and REQ_TO_TOKEN_TABLE in tables()
    assert REQ_TO_TOKEN_TABLE.engine == "sglang" and REQ_TO_TOKEN_TABLE.properties[:2] == ROW_PROPERTIES
    with pytest.raises(ValueError, match="is not a table any engine declares"):
        table("page_table")


def test_a_taken_name_or_a_malformed_one_is_refused() -> None:
    assert declare_table(REQ_TO_TOKEN_TABLE) is REQ_TO_TOKEN_TABLE  # the same again: a module imported twice
    with pytest.raises(ValueError, match="already declared"):
        declare_table(replace(REQ_TO_TOKEN_TABLE, engine="toy"))
    with pytest.raises(ValueError, match="is not"):
        declare_table(replace(REQ_TO_TOKEN_TABLE, name="Req To Token"))


def _defines(wheel: str, ref: CodeRef) -> bool:
    member = ref.path.removeprefix("python/")
    with zipfile.ZipFile(wheel) as z:
        if member not in z.namelist():
            return False
        tree = ast.parse(z.read(member))
    outer, _, inner = ref.qualname.rpartition(".")
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if not outer and isinstance(node, defs) and node.name == inner:
            return True
        if outer and isinstance(node, ast.ClassDef) and node.name == outer:
            return any(isinstance(m, defs) and m.name == inner for m in node.body)
    return False


def test_every_code_reference_is_a_def_in_sglangs_wheels() -> None:
    """Each width function and writer is a ``def`` in some pinned release (they move between releases: the
    release records say which has which), and every pinned release has its width code and a writer among them."""
    wheels = {r: str(w) for r in PINNED_RELEASES if (w := pinned_wheel(r)) is not None}
    if not wheels:
        require_wheel(next(iter(PINNED_RELEASES)))
    refs = [*REQ_TO_TOKEN_TABLE.width.code, *REQ_TO_TOKEN_TABLE.writers]
    found = {ref: [r for r, w in wheels.items() if _defines(w, ref)] for ref in refs}
    assert not [ref for ref, where in found.items() if not where], "not a def in any pinned wheel"
    for release, wheel in wheels.items():
        assert any(_defines(wheel, ref) for ref in REQ_TO_TOKEN_TABLE.width.code), release
        assert any(_defines(wheel, ref) for ref in REQ_TO_TOKEN_TABLE.writers), release


@pytest.mark.parametrize("release", ["0.5.18", "0.5.23"])
def test_the_width_sglangs_code_gives_is_its_model_twins_on_the_catalog(release: str) -> None:
    """``Width.of`` on the release's own code, ``Width.model`` on the revision it resolves to: the same row for
    every catalog configuration the release launches."""
    require_wheel(release)
    target = resolve_target(f"sglang=={release}")
    width = REQ_TO_TOKEN_TABLE.width
    compared = 0
    for known in CATALOG:
        cfg = known.scenario.config
        if target.revision.refuses(cfg) is None:
            assert width.of(target, cfg) == width.model(cfg, target.revision), (release, cfg.short())
            compared += 1
    assert compared >= 3


def _agree(revision_name: str, scenario) -> set[Property]:
    revision = REVISIONS[revision_name]
    run = run_scenario(scenario, resolve_target(f"reference@{revision_name}").sizing, revision)
    worded = {v.prop for v in violations(run, ROW_PROPERTIES)}
    generic = {b.prop for b in judge(REQ_TO_TOKEN_TABLE, accesses(run), ROW_PROPERTIES)}
    assert generic == worded, (revision_name, scenario.config.short(), worded, generic)
    return generic


@pytest.mark.parametrize("known", CATALOG, ids=[k.id for k in CATALOG])
def test_the_generic_checks_name_what_the_worded_ones_name_on_the_catalog(known) -> None:
    """On each known bug's revision and on the reference: the write past the row (and only it) on the first."""
    assert scenario_problem(known.scenario, REVISIONS[known.revision]) is None
    on_bug = _agree(known.revision, known.scenario)
    if known.prop is Property.WRITE_WITHIN_ROW:
        assert on_bug == {Property.WRITE_WITHIN_ROW}
    assert _agree(REFERENCE.name, known.scenario) == set()


@settings(max_examples=60, derandomize=True, database=None, suppress_health_check=list(HealthCheck), deadline=None)
@given(st.data())
def test_the_generic_checks_name_what_the_worded_ones_name_on_sampled_runs(data) -> None:
    """Drawn on 0.5.18's revision (the seed bug open) and on the reference."""
    for name in ("sglang-0.5.18", REFERENCE.name):
        _agree(name, data.draw(decode_scenarios(REVISIONS[name])))


def test_a_write_past_its_row_landing_in_the_next_is_named_once_and_a_lone_spill_as_the_neighbours() -> None:
    t = Table(
        "toy_rows",
        "toy",
        REQ_TO_TOKEN_TABLE.layout,
        REQ_TO_TOKEN_TABLE.width,
        (),
        (),
        ROW_PROPERTIES,
        {Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
    )
    from fuzz.tables import Access, AccessKind

    spilled = Access("toy_rows", "a", AccessKind.WRITE, (Span(0, 60, 70),), (Span(0, 0, 64),), (Span(1, 0, 6),))
    assert [(b.prop, b.overshoot) for b in judge(t, [spilled])] == [(Property.WRITE_WITHIN_ROW, 6)]
    stray = Access("toy_rows", "a", AccessKind.WRITE, (Span(0, 0, 8),), (Span(0, 0, 64),), (Span(1, 3, 4),))
    assert [b.prop for b in judge(t, [stray])] == [Property.NEIGHBOUR_ROWS_UNTOUCHED]
    read = Access("toy_rows", "a", AccessKind.READ, (Span(0, 0, 70),), (Span(0, 0, 64),))
    assert judge(t, [read]) == []  # a read is judged by read-within-row, not by a write's property


def test_a_core_rule_is_worded_by_the_one_table_that_words_it_else_generically(monkeypatch) -> None:
    """SARIF's rule text: ``req_to_token``'s own words while it is the only table wording the rule (the text SARIF
    has always had); the core's table-neutral words once another table words it differently."""
    import sys

    from fuzz.tables import rule_text

    table_module = sys.modules["fuzz.tables.declared"]

    wrote = Property.WRITE_WITHIN_ROW
    assert "req_to_token" not in wrote.rule and "req_to_token" not in Property.NEIGHBOUR_ROWS_UNTOUCHED.rule
    assert rule_text(wrote) == "Every rounded decode write ends within its own req_to_token row: ceil_P(c + R) <= W."
    monkeypatch.setattr(table_module, "_TABLES", dict(table_module._TABLES))
    declare_table(
        replace(REQ_TO_TOKEN_TABLE, name="toy_rows", engine="toy", rules={wrote: "A toy row is not overrun."})
    )
    assert rule_text(wrote) == wrote.rule
    assert rule_text(Property.NEIGHBOUR_ROWS_UNTOUCHED).startswith("No write changes another live request's")


def test_a_copy_from_outside_its_part_of_the_source_is_its_own_property_and_its_own_root_cause(monkeypatch) -> None:
    """``copied-from-own-row`` judges a copy (what a builder stored came from its owner's part of the table it copies
    from), never a write or a read; its findings indict the code ``blame_of`` names (the builder), one root cause
    apart from the width's, so a baseline that knows one does not hide the other."""
    import sys

    from allocator_model.config import ServingConfig
    from fuzz.tables import Access, AccessKind
    from fuzz.tables.case import TableCase, violation
    from fuzz.tables.causes import table_causes

    fill = CodeRef("toy_builder.py", "fill")
    copied = Property.COPIED_FROM_OWN_ROW
    t = replace(
        REQ_TO_TOKEN_TABLE,
        name="toy_rows",
        engine="toy",
        writers=(fill,),
        properties=(Property.WRITE_WITHIN_ROW, Property.READ_WITHIN_ROW, copied),
        same_write={},
        blame_of={copied: (fill,)},
    )
    own = Access("toy_rows", "a", AccessKind.COPY, (Span(None, 0, 8),), (Span(None, 0, 16),), source="src")
    assert judge(t, [own]) == []
    past = Access(
        "toy_rows",
        "a",
        AccessKind.COPY,
        (Span(None, 0, 12), Span(None, 16, 20, "b")),
        (Span(None, 0, 16),),
        source="src",
    )
    assert [(b.prop, b.overshoot) for b in judge(t, [past])] == [(copied, 4)]  # a copy: not a write, not a read
    spill = Access("toy_rows", "a", AccessKind.WRITE, (Span(0, 0, 20),), (Span(0, 0, 16),))
    assert [b.prop for b in judge(t, [spill, past])] == [Property.WRITE_WITHIN_ROW, copied]

    table_module = sys.modules["fuzz.tables.declared"]
    monkeypatch.setattr(table_module, "_TABLES", dict(table_module._TABLES))
    declare_table(t)
    target, cfg = resolve_target("reference"), ServingConfig.resolve(context_len=64, page_size=1)
    breaches = judge(t, [spill, past])
    v = violation(t, cfg, breaches[1])
    assert "4 of the 16 entries its builder copied into toy_rows come from outside its part of src" in v.headline
    assert "copied from: b" in v.details
    findings = [TableCase(t, cfg).finding(target, violation(t, cfg, b)) for b in breaches]
    causes = table_causes(findings, target)
    assert [c.key for c in causes] == ["toy_rows-width", "toy_rows-copied-from-own-row"]
    assert causes[1].code == [("toy_builder.py", "fill")] and causes[0].code != causes[1].code
