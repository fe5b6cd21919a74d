"""The request lifecycle as a property test: every invariant holds after every step of every run.

python -m pytest fuzz/test_lifecycle.py --target reference@sglang-0.5.18   # fails: a named neighbour corrupted
"""

from hypothesis import settings

from fuzz.lifecycle.machine import lifecycle_campaign


def test_lifecycle_invariants_hold(fuzz_target):
    result = lifecycle_campaign(fuzz_target, settings(settings.default, max_examples=100), steps=30, max_rounds=1)
    assert not result.error, result.error
    assert not result.findings, "\n\n".join(
        f"{f.signature} after {len(f.case['steps'])} steps:\n{f.violation.describe()}" for f in result.findings
    )
