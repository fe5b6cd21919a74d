"""The properties as pytest tests, each usable on its own:

    pytest fuzz/test_properties.py --target reference@sglang-0.5.18

A failure reads like the specification it breaks: request, row, columns
written, row width, victim row.
"""

from __future__ import annotations

from hypothesis import assume, given, target
from hypothesis import strategies as st

from fuzz.run.engine import check_scenario
from fuzz.run.properties import (
    DRAFTS_WITHIN_ALLOCATION,
    NEIGHBOUR_ROWS_UNTOUCHED,
    PAGE_ALIGNED_GROWTH,
    WRITE_WITHIN_ROW,
    overshoot,
)
from strategies.scenarios import decode_scenarios


def holds(fuzz_target, data, prop: str) -> None:
    scenario = data.draw(decode_scenarios(fuzz_target.revision), label="scenario")
    run, found = check_scenario(fuzz_target, scenario, props=(prop,))
    assume(run is None or not run.skipped)
    if run is not None:
        target(float(overshoot(run)), label="overshoot past the row width")
    assert not found, "\n" + "\n".join(v.describe() for v in found) + f"\nconfig: {scenario.config.short()}"


@given(data=st.data())
def test_every_rounded_write_ends_within_its_row(fuzz_target, data):
    holds(fuzz_target, data, WRITE_WITHIN_ROW)


@given(data=st.data())
def test_no_other_row_changes(fuzz_target, data):
    holds(fuzz_target, data, NEIGHBOUR_ROWS_UNTOUCHED)


@given(data=st.data())
def test_drafts_stay_inside_what_was_allocated(fuzz_target, data):
    holds(fuzz_target, data, DRAFTS_WITHIN_ALLOCATION)


@given(data=st.data())
def test_growth_is_page_aligned_on_paged_allocators(fuzz_target, data):
    holds(fuzz_target, data, PAGE_ALIGNED_GROWTH)
