"""matrix --expect: a missing required group (the tool regressed) and a new group (news) both fail."""

from types import SimpleNamespace

from fuzz.fidelity.matrix import Row, compare_with_expectations


def row(release, *signatures):
    findings = [SimpleNamespace(signature=s) for s in signatures]
    return Row(release, campaign=SimpleNamespace(findings=findings, error=None), fidelity=None)


EXPECTED = {"0.5.18": {"required": {"write-within-row/dcp>1"}, "allowed": {"page-aligned-growth/dflash"}}}


def test_expected_groups_are_met():
    assert compare_with_expectations([row("0.5.18", "write-within-row/dcp>1")], EXPECTED) == []
    assert compare_with_expectations([row("0.5.18", "write-within-row/dcp>1", "page-aligned-growth/dflash")], EXPECTED) == []


def test_missing_and_new_groups_are_reported():
    lines = compare_with_expectations([row("0.5.18", "write-within-row/tree")], EXPECTED)
    assert lines == ["MISSING 0.5.18: write-within-row/dcp>1 was not found (expected upstream bug)",
                     "NEW 0.5.18: write-within-row/tree (not in the expectations: a new finding)"]
