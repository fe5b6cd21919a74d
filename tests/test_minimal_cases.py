"""Minimal for an SGLang developer: Hypothesis' shrinking ends at SGLang's own values where the bug allows.

The strategies take SGLang's defaults half the time and shrink towards them
(``strategies.space.sglang_defaults``), so a shrunk case keeps the
algorithm's auto (S, K, D) instead of degenerate values (D = 1, zero steps).
The covering set is left out here: this is about what the search shrinks to.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from fuzz.campaign.driver import run_campaign
from fuzz.common.profiles import get_profile
from fuzz.engines.sglang.decode.engine import DecodeHunt
from fuzz.findings.kinds import Property
from fuzz.targets.resolve import resolve_target

# SGLang's auto values per algorithm: (speculative_num_steps, speculative_eagle_topk, speculative_num_draft_tokens)
AUTO = {
    "EAGLE": (3, 1, 4),
    "EAGLE3": (3, 1, 4),
    "STANDALONE": (3, 1, 4),
    "FROZEN_KV_MTP": (3, 1, 4),
    "NGRAM": (1, 10, 12),
    "DFLASH": (1, 1, 16),
}


class SearchOnly(DecodeHunt):
    def cover(self, tracker, progress):
        return []


def shrunk(spec: str) -> dict[str, tuple]:
    target = resolve_target(spec)
    hunt = SearchOnly(target, props=(Property.WRITE_WITHIN_ROW,))
    result = run_campaign(target, hunt, settings(get_profile("ci"), max_examples=300), max_rounds=3)
    return {
        str(f.signature): (
            f.config.speculative_algorithm,
            (f.config.speculative_num_steps, f.config.speculative_eagle_topk, f.config.speculative_num_draft_tokens),
        )
        for f in result.findings
    }


@pytest.mark.slow
def test_the_seed_bug_shrinks_to_eagles_auto_values():
    found = shrunk("reference@sglang-0.5.18")
    algorithm, shape = found["write-within-row/dcp>1"]
    assert shape == AUTO[algorithm], found


@pytest.mark.slow
def test_the_page_1_gap_shrinks_to_an_algorithms_defaults():
    algorithm, shape = shrunk("reference@sglang-0.5.23")["write-within-row/alloc-page-1"]
    assert shape == AUTO[algorithm]
