"""The tables checked on their own (``fuzz.tables``), as pytest tests:

    pytest --pyargs fuzz.properties.test_kvrow_tables --kvrow-target=reference

One test per table and property, each drawing the table's own cases and
judging them through the verdict pipeline (against ``--kvrow-baseline``
where one is given), and, for a table with a closed form, its bounded proof
over the ``tiny`` space.  Where no table is checked on its own, each test is
one skip that says so.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

# The session's --kvrow-baseline (as in test_kvrow_decode): set by the autouse fixture below.
_BASELINE: list[Any] = [None]
PROOF_SPACE = "tiny"


@pytest.fixture(autouse=True)
def _kvrow_baseline_for_the_tables(kvrow_baseline: Any) -> Any:
    _BASELINE[0] = kvrow_baseline
    yield
    _BASELINE[0] = None


def _hunted() -> list[Any]:
    from fuzz.tables import tables  # lazily: collecting the package imports no engine until asked for kvrow

    return [t for t in tables() if t.hunted]


NONE = pytest.param(None, marks=pytest.mark.skip(reason="no declared table is checked on its own"), id="no-table")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kvrow_table_property" in metafunc.fixturenames:
        pairs = [pytest.param((t, p), id=f"{t.name}/{p.value}") for t in _hunted() for p in t.properties]
        metafunc.parametrize("kvrow_table_property", pairs or [NONE])
    if "kvrow_table" in metafunc.fixturenames:
        proved = [pytest.param(t, id=t.name) for t in _hunted() if t.closed_form is not None]
        metafunc.parametrize("kvrow_table", proved or [NONE])


def _on_target(table: Any, target: Any) -> None:
    if table.engine != target.engine:
        pytest.skip(f"table {table.name} is engine {table.engine}'s, and {target.spec} is engine {target.engine}'s")


@given(data=st.data())
def test_every_access_of_the_table_stays_within_its_part(kvrow_target: Any, kvrow_table_property: Any, data: Any):
    """The table's property on a drawn case: the findings whose root cause the baseline does not know fail."""
    from fuzz.campaign.driver import failure_class
    from fuzz.tables.case import TableCase
    from fuzz.verdict import PIPELINE

    table, prop = kvrow_table_property
    _on_target(table, kvrow_target)
    config, case = data.draw(table.cases(kvrow_target, {}), label="case")
    verdict = PIPELINE.case(kvrow_target, TableCase(table, config, case), (prop,), confirm=False, baseline=_BASELINE[0])
    found = verdict.new
    if found:  # its group's class, as a campaign raises it: Hypothesis shrinks each group apart
        raise failure_class(found[0].signature)(found[0])


def test_the_table_holds_over_the_bounded_space(kvrow_target: Any, kvrow_table: Any, kvrow_baseline: Any):
    """The table's closed form over every configuration of the tiny space; each group's worst witness (against
    ``--kvrow-baseline``: each group of a root cause it does not know)."""
    from fuzz.common.defaults import ALL_ALGORITHMS
    from fuzz.engines import engine_of
    from fuzz.prove.cli import WITNESS_ORIGIN
    from fuzz.prove.proof import ProveOptions
    from fuzz.prove.tables import prove_table
    from fuzz.pytest_failures import PropertyFailed
    from fuzz.verdict import PIPELINE

    _on_target(kvrow_table, kvrow_target)
    prover = engine_of(kvrow_target).prover(kvrow_target, ProveOptions(space=PROOF_SPACE, algorithm=ALL_ALGORITHMS))
    proof = prove_table(kvrow_target, kvrow_table, prover)
    assert proof.refused is None, proof.refused
    witnesses = proof.witnesses
    if kvrow_baseline is not None and witnesses:
        witnesses = PIPELINE.new(kvrow_target, witnesses, kvrow_baseline)
    unshown = [str(g.signature) for g in proof.groups.values() if g.witness is None]
    assert not unshown, f"the closed form of {kvrow_table.name} claims groups its own accesses do not show: {unshown}"
    if witnesses:
        raise PropertyFailed(witnesses, word="WITNESS", origin=WITNESS_ORIGIN, head=proof.lines())
