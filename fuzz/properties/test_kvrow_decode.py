"""The decode properties as pytest tests, each usable on its own:

    pytest --pyargs fuzz.properties.test_kvrow_decode --kvrow-target=reference@sglang-0.5.18

First the bounded proof (``test_the_sizing_holds_over_the_bounded_space``:
``prove --space small`` on the target's own sizing code, the same proof
``kvrow-fuzz run`` runs first), then each property sampled by Hypothesis over
what the bounded space does not hold. A failure names its bug group
(``write-within-row/alloc-page-1``) and reads like the specification it
breaks: request, row, columns written, row width, victim row; the plugin prints
each failure as ``run`` prints its root causes, with the repro line of the
group's case file (``fuzz.pytest_failures``).
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, target
from hypothesis import strategies as st

from fuzz.campaign.driver import failure_class
from fuzz.engines import engine_of
from fuzz.pytest_failures import PropertyFailed
from fuzz.verdict import PIPELINE

# The properties tested below, by value (each a property the target's engine fuzzes: ``Engine.fuzzed_properties``).
# Named constants, so each test's body, and so the derandomized seed Hypothesis derives from it, stays as it was.
WRITE_WITHIN_ROW = "write-within-row"
NEIGHBOUR_ROWS_UNTOUCHED = "neighbour-rows-untouched"
DRAFTS_WITHIN_ALLOCATION = "drafts-within-allocation"
PAGE_ALIGNED_GROWTH = "page-aligned-growth"
WITNESS = "WITNESS"  # the proof's blocks, as prove's

# The session's --kvrow-baseline, set by the autouse fixture below: the property tests keep their signatures (and
# so the derandomized seeds Hypothesis derives from them) whether a baseline is given or not.
_BASELINE: list = [None]


@pytest.fixture(autouse=True)
def _kvrow_baseline_for_the_properties(kvrow_baseline):
    _BASELINE[0] = kvrow_baseline
    yield
    _BASELINE[0] = None


def holds(kvrow_target, data, name: str) -> None:
    """The property called ``name`` on a case drawn from the target's engine (SGLang: a decode scenario), judged by
    the verdict pipeline: its findings whose root cause the session's --kvrow-baseline does not know fail, each
    confirmed on the engine's own code where the target has it (on the minimal example Hypothesis reports only, not
    on each one the shrinker tries). A property the engine does not fuzz is a skip that names it."""
    from hypothesis.control import current_build_context

    engine = engine_of(kvrow_target)
    prop = next((p for p in engine.fuzzed_properties if p.value == name), None)
    if prop is None:
        pytest.skip(f"{kvrow_target.spec}: engine {engine.name} does not fuzz {name}")
    case = engine.fuzzed_case(data.draw(engine.fuzzed_draws(kvrow_target), label="scenario"))
    final = current_build_context().is_final
    verdict = PIPELINE.case(kvrow_target, case, (prop,), confirm=final, baseline=_BASELINE[0])
    run = verdict.run
    assume(not getattr(run, "skipped", False))  # a run the engine could not make (its own path refused the case)
    score = engine.case_score(run)
    if score is not None:
        target(score[0], label=score[1])
    found = verdict.new
    if found:  # its group's class, as a campaign raises it: Hypothesis shrinks each group apart
        raise failure_class(found[0].signature)(found[0])


def test_the_sizing_holds_over_the_bounded_space(kvrow_target, kvrow_baseline):
    """Every configuration of the engine's quick space (``Engine.quick_space``: what ``run`` proves first), in closed
    form: the rounded write ends within its row, the draft footprint within the allocation, growth page-aligned;
    each group's worst witness (against ``--kvrow-baseline``: each group of a root cause it does not know). An
    engine that proves no space (``quick_space`` None) is a skip that says so, as a property it does not fuzz is."""
    from fuzz.prove.cli import WITNESS_ORIGIN  # lazily: collecting the properties imports no proof
    from fuzz.prove.proof import ProveOptions

    engine = engine_of(kvrow_target)
    if engine.quick_space is None:
        pytest.skip(f"{kvrow_target.spec}: engine {engine.name} proves no bounded space")
    prover = engine.prover(kvrow_target, ProveOptions(space=engine.quick_space))
    proof = prover.sweep()  # each witness confirmed on the engine's model (where it fails only): its case file replays
    witnesses = proof.witnesses
    if kvrow_baseline is not None and witnesses:
        witnesses = PIPELINE.new(kvrow_target, witnesses, kvrow_baseline)
    if witnesses:
        saved = {w.signature for w in proof.saved}
        raise PropertyFailed(
            witnesses,
            word=WITNESS,
            origin=WITNESS_ORIGIN,
            unsaved={w.signature for w in witnesses} - saved,
            head=[
                f"{len(witnesses)} bug group(s) in the {prover.space} space on {kvrow_target.spec} "
                f"({proof.configurations:,} configurations proved)"
            ],
            tail=proof.blocks({w.signature for w in witnesses} - saved),  # what the model said where it disagreed
        )


@given(data=st.data())
def test_every_rounded_write_ends_within_its_row(kvrow_target, data):
    holds(kvrow_target, data, WRITE_WITHIN_ROW)


@given(data=st.data())
def test_no_other_row_changes(kvrow_target, data):
    holds(kvrow_target, data, NEIGHBOUR_ROWS_UNTOUCHED)


@given(data=st.data())
def test_drafts_stay_inside_what_was_allocated(kvrow_target, data):
    holds(kvrow_target, data, DRAFTS_WITHIN_ALLOCATION)


@given(data=st.data())
def test_growth_is_page_aligned_on_paged_allocators(kvrow_target, data):
    holds(kvrow_target, data, PAGE_ALIGNED_GROWTH)
