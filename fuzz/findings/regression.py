"""Regression tests from case files.

``python -m fuzz repro CASE --emit-test`` prints a self-contained pytest test
(the case embedded, no file needed) that fails, with the repro's story as its
message, for as long as the bug is there.  Case files committed under
``fuzz/regressions/`` are replayed by the suite (fuzz/test_regressions.py).
"""

from __future__ import annotations

import os
import pprint
import re
from typing import Any

REGRESSIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "regressions")

_TEMPLATE = '''\
def test_{name}():
    """{signature} on {target}, found by kvrow-fuzz.

    Fails while the bug is present; the message is what `python -m fuzz repro` prints.
    KVROW_FUZZ_TARGET=SPEC replays it on another target (a fixed checkout's file, say).
    """
    import os

    from fuzz.findings.casefile import replay_document

    case = {case}
    result = replay_document(case, target=os.environ.get("KVROW_FUZZ_TARGET") or None)
    assert not result.reproduced, "\\n" + result.text
'''


def regression_test_name(doc: dict[str, Any]) -> str:
    raw = f"{doc['target']}_{doc.get('signature') or doc['property']}"
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", raw.lower().replace(">", "_gt_"))).strip("_")


def emit_test(doc: dict[str, Any]) -> str:
    """A ready-to-paste pytest test that replays ``doc``."""
    replayable = {k: v for k, v in doc.items() if k != "message"}  # the replay prints the message anew
    case = pprint.pformat(replayable, indent=4, width=100, sort_dicts=True).replace("\n", "\n" + " " * 4)
    return _TEMPLATE.format(
        name=regression_test_name(doc),
        signature=doc.get("signature") or doc["property"],
        target=doc["target"],
        case=case,
    )


def regression_files() -> list[str]:
    if not os.path.isdir(REGRESSIONS_DIR):
        return []
    return sorted(os.path.join(REGRESSIONS_DIR, f) for f in os.listdir(REGRESSIONS_DIR) if f.endswith(".json"))
