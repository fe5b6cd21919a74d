"""The request lifecycle as a property test: every invariant holds after every step of every run.

pytest --pyargs fuzz.properties.test_kvrow_lifecycle --kvrow-target=reference@sglang-0.5.18   # fails: a neighbour named
"""

from hypothesis import settings

from fuzz.lifecycle.machine import lifecycle_campaign

MAX_RUNS = 100  # state-machine runs of up to 30 steps; fewer when the profile (--kvrow-max-examples) says so


def test_lifecycle_invariants_hold(kvrow_target):
    runs = min(settings.default.max_examples, MAX_RUNS)
    result = lifecycle_campaign(kvrow_target, settings(settings.default, max_examples=runs), steps=30, max_rounds=1)
    assert not result.error, result.error
    assert not result.findings, "\n\n".join(
        f"{f.signature} on {kvrow_target.spec} after {len(f.case['steps'])} steps:\n{f.violation.describe()}"
        for f in result.findings
    )
