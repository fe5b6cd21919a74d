"""The request lifecycle as a property test: every invariant holds after every step of every run.

pytest --pyargs fuzz.properties.test_kvrow_lifecycle --kvrow-target=reference@sglang-0.5.18   # fails: a neighbour named

With ``--kvrow-baseline FILE`` it fails only on a root cause the baseline does not know, as the decode
properties and the proof do.
"""

from hypothesis import settings

from fuzz.lifecycle.machine import lifecycle_campaign

MAX_RUNS = 100  # state-machine runs of up to 30 steps; fewer when the profile (--kvrow-max-examples) says so


def new_only(kvrow_target, kvrow_baseline, findings):
    """The findings whose root cause the baseline does not know (all of them without a baseline)."""
    if kvrow_baseline is None or not findings:
        return list(findings)
    from fuzz.causes.known import new_findings

    return new_findings(kvrow_target, kvrow_baseline, list(findings))


def test_lifecycle_invariants_hold(kvrow_target, kvrow_baseline):
    runs = min(settings.default.max_examples, MAX_RUNS)
    result = lifecycle_campaign(kvrow_target, settings(settings.default, max_examples=runs), steps=30, max_rounds=1)
    assert not result.error, result.error
    found = new_only(kvrow_target, kvrow_baseline, result.findings)
    assert not found, "\n\n".join(
        f"{f.signature} on {kvrow_target.spec} after {len(f.case['steps'])} steps:\n{f.violation.describe()}"
        for f in found
    )
