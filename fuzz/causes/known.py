"""Which findings a baseline of known findings knows: each is known when its root cause is (``fuzz.findings.baseline``).

A finding's cause is found by its target's engine (``Engine.root_causes``;
SGLang's by counterfactual: its case replayed with each fix), never from its
group's label: a new cause that shows in a known group is new, a new variant
of a known cause is known. That costs a few replays of the case per finding
(about 20 to 120 ms on an SGLang release's real code, against about 5 ms for
a fuzz input), so ``KnownCauses`` keeps the verdict of each case it has
judged (a fuzzer meets the same case again and again).
"""

from __future__ import annotations

import json
from collections import OrderedDict

from fuzz.findings import baseline
from fuzz.findings.model import Finding
from fuzz.targets.base import Target
from fuzz.verdict import PIPELINE

MAX_REMEMBERED = 4096  # cases whose verdict a KnownCauses keeps (the oldest forgotten first)


class KnownCauses:
    """``known(finding)``: whether the baseline knows the finding's root cause, each case judged once."""

    def __init__(self, target: Target, entries: frozenset[baseline.Entry]):
        self.target, self.entries = target, entries
        self.verdicts: OrderedDict[str, bool] = OrderedDict()
        self.judged = 0  # findings whose cause was computed (the rest were remembered)

    def __call__(self, finding: Finding) -> bool:
        key = json.dumps([str(finding.signature), finding.config.to_dict(), finding.case], sort_keys=True, default=str)
        if key in self.verdicts:
            self.verdicts.move_to_end(key)
            return self.verdicts[key]
        self.judged += 1
        known = not PIPELINE.new(self.target, [finding], self.entries)
        self.verdicts[key] = known
        if len(self.verdicts) > MAX_REMEMBERED:
            self.verdicts.popitem(last=False)
        return known
