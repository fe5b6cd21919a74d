"""The request lifecycle as a property test: every invariant holds after every step of every run.

pytest --pyargs fuzz.properties.test_kvrow_lifecycle --kvrow-target=reference@sglang-0.5.18   # fails: a neighbour named

Without a baseline it is a verdict, not a report: the first bug group fails it, its step script shortened
by the campaign (the engine's ``replay.shorten``) but not shrunk by Hypothesis, since shrinking every group of an old
release's state machines took most of a minute (``kvrow-fuzz lifecycle --target SPEC`` lists and shrinks
every group).  With ``--kvrow-baseline FILE`` it fails only on a root cause the baseline does not know, as
the decode properties and the proof do: every group the round meets is shrunk and judged, so a known one
met first cannot hide a new one.
"""

import pytest
from hypothesis import Phase, settings

from fuzz.campaign.driver import run_campaign
from fuzz.common.errors import BadInput
from fuzz.common.threads import one_torch_thread
from fuzz.engines import engine_of
from fuzz.engines.base import LifecycleOptions
from fuzz.pytest_failures import PropertyFailed
from fuzz.verdict import PIPELINE

MAX_RUNS = 100  # state-machine runs of up to 30 steps; fewer when the profile (--kvrow-max-examples) says so
UNSHRUNK = [Phase.explicit, Phase.reuse, Phase.generate]  # the run stops at its first failure


def test_lifecycle_invariants_hold(kvrow_target, kvrow_baseline):
    runs = min(settings.default.max_examples, MAX_RUNS)
    hyp = settings(settings.default, max_examples=runs)
    if kvrow_baseline is None:
        hyp = settings(hyp, phases=UNSHRUNK)
    try:
        hunt = engine_of(kvrow_target).lifecycle_hunt(kvrow_target, LifecycleOptions(steps=30))
    except BadInput as e:  # an engine (or a target of it) with no request lifecycle: a skip that says so
        pytest.skip(str(e))
    with one_torch_thread():
        result = run_campaign(kvrow_target, hunt, hyp, max_rounds=1)
    assert not result.error, result.error
    found = result.findings if kvrow_baseline is None else PIPELINE.new(kvrow_target, result.findings, kvrow_baseline)
    if found:  # each block's headline says how many steps its script runs: (lifecycle, N steps)
        lists = f"the first group; `kvrow-fuzz lifecycle --target {kvrow_target.spec}` lists all"
        raise PropertyFailed(found, tail=[] if kvrow_baseline else [lists])
