"""Every property catches a planted bug (a known historical revision) and stays quiet on the reference."""

import pytest
from hypothesis import settings

from allocator_model.pools import KVPool
from fuzz.engines.sglang.decode.engine import campaign
from fuzz.engines.sglang.decode.properties import (
    DRAFTS_WITHIN_ALLOCATION,
    NEIGHBOUR_ROWS_UNTOUCHED,
    PAGE_ALIGNED_GROWTH,
    WRITE_WITHIN_ROW,
)
from fuzz.findings.kinds import Property
from fuzz.targets.resolve import resolve_target

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
        resolve_target(spec), settings(settings.get_profile("ci"), max_examples=100), props=(prop,), max_rounds=rounds
    )


@pytest.mark.parametrize("prop, revision, regime", PLANTED, ids=[f"{p}@{r}" for p, r, _ in PLANTED])
def test_property_catches_the_planted_revision(prop, revision, regime):
    result = fuzz(f"reference@{revision}", prop, rounds=3 if regime else 1)
    assert result.findings, f"{prop} did not catch {revision}"
    assert {f.violation.prop for f in result.findings} == {prop}
    if regime:
        assert regime in {f.violation.group for f in result.findings}


@pytest.mark.parametrize(
    "prop", [WRITE_WITHIN_ROW, NEIGHBOUR_ROWS_UNTOUCHED, DRAFTS_WITHIN_ALLOCATION, PAGE_ALIGNED_GROWTH]
)
def test_property_is_quiet_on_the_reference(prop):
    result = fuzz("reference", prop, rounds=1)
    assert result.status == "clean", [f.violation.describe() for f in result.findings]


def test_a_campaign_on_sglang_0_5_19_finds_the_bug_it_left_open_and_none_it_fixed():
    """0.5.19 fixed the seed bug (#35424: dcp>1) and the DFLASH rounding (#35265); page 1 (#33579) stays open.

    Every property, the covering set and the search: on the standard pool exactly the open group (the one
    the bounded proof finds), and on no pool a group of what 0.5.19 fixed.
    """
    result = campaign(resolve_target("reference@sglang-0.5.19"), settings(settings.get_profile("ci"), max_examples=100))
    assert result.error is None and result.examples >= 100
    on_rows = [f for f in result.findings if f.case.get("table") is None]  # req_to_token's (FA3's table: below)
    standard = sorted(str(f.signature) for f in on_rows if f.config.kv_pool is KVPool.STANDARD)
    assert standard == ["write-within-row/alloc-page-1"], standard
    # FA3's page table is sized from the context length in 0.5.19 too, its verify builder unclamped
    fa3 = {f.signature.prop for f in result.findings if f.case.get("table") == "fa3_page_table"}
    assert fa3 == {WRITE_WITHIN_ROW, Property.READ_WITHIN_ROW}, fa3
    # the DSA indexer's key cache under DCP: open in 0.5.19 too (sized for DCP in 0.5.22), not the seed bug's group
    dsa = {str(f.signature) for f in result.findings if f.case.get("table") == "dsa_index_key_cache"}
    assert dsa == {"write-within-row/dcp>1@dsa_index_key_cache"}, dsa
    fixed = [
        f.signature
        for f in result.findings
        if (f.violation.group == "dcp>1" and f.signature.group == "dcp>1") or f.violation.prop == PAGE_ALIGNED_GROWTH
    ]
    assert fixed == [], fixed
