"""Every property catches a planted bug (a known historical revision) and stays quiet on the reference."""

import pytest
from hypothesis import settings

from fuzz.run.engine import campaign
from fuzz.run.properties import (
    DRAFTS_WITHIN_ALLOCATION,
    NEIGHBOUR_ROWS_UNTOUCHED,
    PAGE_ALIGNED_GROWTH,
    WRITE_WITHIN_ROW,
)
from fuzz.targets import resolve_target

PLANTED = [
    (WRITE_WITHIN_ROW, "sglang-0.5.18", "dcp>1"),
    (WRITE_WITHIN_ROW, "sglang-0.5.23", "alloc-page-1"),
    (WRITE_WITHIN_ROW, "pre-26972", None),
    (NEIGHBOUR_ROWS_UNTOUCHED, "sglang-0.5.18", None),
    (NEIGHBOUR_ROWS_UNTOUCHED, "sglang-0.5.23", "alloc-page-1"),
    (DRAFTS_WITHIN_ALLOCATION, "pre-26972", None),
    (DRAFTS_WITHIN_ALLOCATION, "sglang-0.5.18", "dcp>1"),
    (PAGE_ALIGNED_GROWTH, "pre-31616", None),
    (PAGE_ALIGNED_GROWTH, "pre-35265", "dflash"),
    # the headroom sized from adaptive spec's launch shape (it launches at its middle candidate)
    (WRITE_WITHIN_ROW, "adaptive-launch-headroom", "adaptive"),
]


def fuzz(spec, prop, rounds):
    return campaign(
        resolve_target(spec), settings(settings.get_profile("ci"), max_examples=300), props=(prop,), max_rounds=rounds
    )


@pytest.mark.parametrize("prop, revision, regime", PLANTED, ids=[f"{p}@{r}" for p, r, _ in PLANTED])
def test_property_catches_the_planted_revision(prop, revision, regime):
    result = fuzz(f"reference@{revision}", prop, rounds=3 if regime else 1)
    assert result.findings, f"{prop} did not catch {revision}"
    assert {f.violation.prop for f in result.findings} == {prop}
    if regime:
        assert regime in {f.violation.regime for f in result.findings}


@pytest.mark.parametrize(
    "prop", [WRITE_WITHIN_ROW, NEIGHBOUR_ROWS_UNTOUCHED, DRAFTS_WITHIN_ALLOCATION, PAGE_ALIGNED_GROWTH]
)
def test_property_is_quiet_on_the_reference(prop):
    result = fuzz("reference", prop, rounds=1)
    assert result.status == "clean", [f.violation.describe() for f in result.findings]
