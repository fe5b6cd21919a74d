"""Regression tests from case files.

``python -m fuzz repro CASE --emit-test`` prints a self-contained pytest test
(the case embedded, no file needed) that fails, with the repro's story as its
message, for as long as the bug is there; it replays on pytest's
``--kvrow-target`` (each, when repeated), else ``$KVROW_FUZZ_TARGET``, else
the case's own target (``replay_targets``).  Case files committed under
``fuzz/regressions/`` are replayed by the suite (fuzz/test_regressions.py).
"""

from __future__ import annotations

import os
import pprint
import re
from typing import Any

REGRESSIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "regressions")

TARGET_ENV = "KVROW_FUZZ_TARGET"  # an emitted test's target when pytest's --kvrow-target names none

_TEMPLATE = '''\
def test_{name}(request):
    """{signature} on {target}, found by kvrow-fuzz.

    Fails while the bug is present; the message is what `python -m fuzz repro` prints.
    It replays on the targets `--kvrow-target=SPEC` names (on each, when repeated), else
    on $KVROW_FUZZ_TARGET, else on the case's own: point it at a fix to see it pass.
    """
    from fuzz.findings.casefile import replay_document
    from fuzz.findings.regression import replay_targets, reproduced_on

    case = {case}
    failures = reproduced_on({{spec: replay_document(case, target=spec) for spec in replay_targets(request.config)}})
    assert not failures, "\\n" + failures
'''


def replay_targets(config: Any) -> list[str | None]:
    """The targets an emitted test replays its case on, never empty, in the order given.

    Every ``--kvrow-target`` of the pytest session (``config.getoption``; the
    plugin not loaded reads as none), else ``$KVROW_FUZZ_TARGET``, else
    ``None``: the case's own target (``fuzz.targets.resolve.resolve_case_target``).
    """
    from fuzz.pytest_plugin import TARGET_DEST

    specs = config.getoption(TARGET_DEST, default=None) or []
    if specs:
        return list(specs)
    return [os.environ.get(TARGET_ENV) or None]


def reproduced_on(replays: dict[str | None, Any]) -> str:
    """The story of every replay that reproduced, each headed by its target when several ran; "" when none did."""
    failed = {spec: r.text for spec, r in replays.items() if r.reproduced}
    if len(replays) == 1:
        return "".join(failed.values())
    return "\n".join(f"--kvrow-target={spec}: reproduces\n{text}" for spec, text in failed.items())


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
