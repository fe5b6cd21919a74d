"""Every known bug of the catalog, replayed as an explicit example: it fails on its revision, not on the reference."""

from __future__ import annotations

import pytest

from allocator_model.scenario import scenario_problem
from fuzz.engines.sglang.catalog import CATALOG
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.targets.resolve import resolve_target


@pytest.mark.parametrize("known", CATALOG, ids=[k.id for k in CATALOG])
def test_known_bug_fails_on_its_revision(known):
    t = resolve_target(f"reference@{known.revision}")
    assert scenario_problem(known.scenario, t.revision) is None
    _, found = check_scenario(t, known.scenario)
    if known.prop is None:
        assert not found, [v.describe() for v in found]
    else:
        assert known.prop in {v.prop for v in found}, f"{known.id} no longer fails {known.prop} on {known.revision}"


@pytest.mark.parametrize("known", CATALOG, ids=[k.id for k in CATALOG])
def test_known_bug_is_fixed_in_the_reference(known):
    _, found = check_scenario(resolve_target("reference"), known.scenario)
    assert not found, "\n".join(v.describe() for v in found)
