"""One verdict pipeline (``fuzz.verdict``): a stage changed once changes every entry point's verdict.

The attribution stage is replaced by a stub that names every violation's group ``stub``; run's campaign, the
lifecycle, prove's witnesses, the pytest plugin's property test, the Atheris entry's property test, repro and
advisory each then report the stub's group, and none does without it: none of them names a violation's
cause by a step of its own.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import Phase, settings

from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding, Violation
from fuzz.targets.resolve import resolve_target
from fuzz.verdict import PIPELINE, Pipeline

STUB = "stub"
TARGET = "reference@sglang-0.5.18"  # the seed bug: dcp>1 groups, attributed against the case without DCP


def stub_attribute(self: Pipeline, target: object, case: object, v: Violation, own: bool = False) -> Violation:
    return dataclasses.replace(v, group=STUB)


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def target():
    return resolve_target(TARGET)


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def dcp_finding(target) -> Finding:
    """A seed-bug finding of the real pipeline (no stub): a decode case its replay breaks."""
    from fuzz.engines.sglang.decode.engine import campaign

    result = campaign(target, settings(max_examples=20, database=None), max_rounds=1, seed=1)
    return next(f for f in result.findings if f.violation.group == "dcp>1")


def groups_of_run(target) -> set[str]:
    from fuzz.engines.sglang.decode.engine import campaign

    result = campaign(target, settings(max_examples=20, database=None), max_rounds=1, seed=1)
    return {f.violation.group for f in result.findings}


def groups_of_lifecycle(target) -> set[str]:
    from fuzz.engines.sglang.lifecycle.machine import lifecycle_campaign

    unshrunk = [Phase.explicit, Phase.reuse, Phase.generate]  # shrinking is the campaign's, not the verdict's
    hyp = settings(max_examples=5, database=None, phases=unshrunk)
    result = lifecycle_campaign(target, hyp, steps=20, max_rounds=1, seed=1)
    return {f.violation.group for f in result.findings}


def groups_of_prove(target) -> set[str]:
    """prove's witnesses, each checked by the pipeline (``witness.confirm``): a group the check names otherwise
    is a mismatch naming what the check reported."""
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove
    from fuzz.engines.sglang.prove.witness import confirm

    result = prove(target, request(target, "tiny"))
    confirm(target, result)
    out: set[str] = set()
    for g in result.groups.values():  # a mismatch: "the step-by-step model reports write-within-row/stub for ..."
        out |= {g.signature.group} if g.confirmed else set(re.split(r"[ /,]", g.mismatch or ""))
    return out


_DECORATED: dict[object, object] = {}


def _once(test):
    """``test`` with this file's settings, decorated once (Hypothesis refuses a second ``@settings``)."""
    if test not in _DECORATED:
        _DECORATED[test] = settings(max_examples=30, database=None, derandomize=True)(test)
    return _DECORATED[test]


def groups_of_plugin(target) -> set[str]:
    """The plugin's write-within-row property test, run as pytest runs it: each group it met raised as its class
    (one, or an exception group of several)."""
    from fuzz.properties import test_kvrow_decode as plugin
    from fuzz.pytest_failures import raised

    with pytest.raises(BaseException) as failed:
        _once(plugin.test_every_rounded_write_ends_within_its_row)(kvrow_target=target)
    return {e.finding.violation.group for e in raised(failed.value) or []}


def groups_of_atheris(target) -> set[str]:
    """The Atheris entry's property test (``oss.target.property_test``): the finding it raises."""
    from fuzz.campaign.driver import FindingRaised
    from fuzz.oss.target import property_test

    try:
        property_test(target, Property.WRITE_WITHIN_ROW)()
    except FindingRaised as e:
        raised = [e]
    except Exception as e:  # an exception group: Hypothesis reports each distinct failure
        raised = [x for x in getattr(e, "exceptions", ()) if isinstance(x, FindingRaised)]
    else:
        raised = []
    return {e.finding.violation.group for e in raised}


def groups_of_repro(dcp_finding) -> set[str]:
    from fuzz.findings import casefile

    replay = casefile.replay_document(casefile.document(dcp_finding))
    assert replay.reproduced, replay.text
    return {replay.failed_as.group}


def groups_of_advisory(dcp_finding) -> set[str]:
    from fuzz.engines.sglang.causes.advisory import replayed
    from fuzz.findings import casefile

    got = replayed(casefile.document(dcp_finding))
    assert got is not None
    return {got[1].violation.group}


ENTRY_POINTS = {
    "run": lambda t, f: groups_of_run(t),
    "lifecycle": lambda t, f: groups_of_lifecycle(t),
    "prove's witnesses": lambda t, f: groups_of_prove(t),
    "the pytest plugin": lambda t, f: groups_of_plugin(t),
    "the Atheris entry": lambda t, f: groups_of_atheris(t),
    "repro": lambda t, f: groups_of_repro(f),
    "advisory": lambda t, f: groups_of_advisory(f),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_stub_attribution_changes_the_entry_points_verdict(entry, target, dcp_finding, monkeypatch):
    groups = ENTRY_POINTS[entry](target, dcp_finding)
    assert groups and STUB not in groups, groups
    monkeypatch.setattr(Pipeline, "attribute", stub_attribute)
    stubbed = ENTRY_POINTS[entry](target, dcp_finding)
    assert STUB in stubbed, (entry, stubbed)


def test_a_case_the_target_cannot_run_is_never_a_clean_verdict():
    """A step script the target refuses was not checked: the pipeline says so (``Unjudgeable``), never an empty
    list of findings; attribution, which only asks whether the case without DCP fails, keeps the group as it is."""
    from allocator_model.config import ServingConfig
    from allocator_model.revisions import REFERENCE
    from fuzz.engines.sglang.lifecycle.script import LifecycleCase
    from fuzz.engines.sglang.targets import model_target
    from fuzz.verdict import Unjudgeable

    target = model_target(REFERENCE)
    unrunnable = LifecycleCase(ServingConfig.resolve(context_len=40), [{"op": "retract", "rid": 7}])
    with pytest.raises(Unjudgeable, match="no request 7"):
        PIPELINE.case(target, unrunnable)
    v = Violation(Property.WRITE_WITHIN_ROW, "dcp>1", "a write past the row")
    assert PIPELINE.attribute(target, unrunnable, v) is v
