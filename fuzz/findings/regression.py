"""Regression tests from case files.

``kvrow-fuzz repro CASE --emit-test`` prints a self-contained pytest test
(the case embedded, no file needed) that fails, with the repro's story as its
message, for as long as the bug is there; it replays on pytest's
``--kvrow-target`` (each, when repeated), else ``$KVROW_FUZZ_TARGET``, else
the case's own target (``replay_targets``).  Case files committed under
``fuzz/regressions/`` are replayed by the suite (fuzz/test_regressions.py).
"""

from __future__ import annotations

import ast
import json
import os
import re
from typing import Any

from .kinds import Property, Signature

REGRESSIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "regressions")

TARGET_ENV = "KVROW_FUZZ_TARGET"  # an emitted test's target when pytest's --kvrow-target names none

# The emitted module.  Three slots change from case to case, each filled from a value, never from case
# text: {name} an identifier folded to [a-z0-9_], {doc} the docstring (a parsed signature and a target
# that passed ``_SAFE_TARGET``), {case} the case's JSON as string literals written by ``repr``.
_TEMPLATE = '''\
import json


def {name}(request):
    """{doc}

    Fails while the bug is present; the message is what `kvrow-fuzz repro` prints.
    It replays on the targets `--kvrow-target=SPEC` names (on each, when repeated), else
    on $KVROW_FUZZ_TARGET, else on the case's own: point it at a fix to see it pass.
    """
    from fuzz.findings.casefile import replay_document
    from fuzz.findings.regression import replay_targets, reproduced_on

    case = json.loads(CASE_JSON)
    failures = reproduced_on({{spec: replay_document(case, target=spec) for spec in replay_targets(request.config)}})
    assert not failures, "\\n" + failures


# The case file, as data: parsed at run time, never run.
CASE_JSON = (
{case}
)
'''
MAX_NAME = 96  # characters of the test's name after ``test_``
# A target the docstring names as it is: what specs are made of (reference@REV, sglang==X.Y.Z, a path@X.Y.Z).
_SAFE_TARGET = re.compile(r"[A-Za-z0-9._@=/+~:-]{1,200}")


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
    if not failed:
        return ""
    if len(replays) == 1:
        return "".join(failed.values()) + POINT_AT_A_FIX
    return "\n".join(f"--kvrow-target={spec}: reproduces\n{text}" for spec, text in failed.items()) + POINT_AT_A_FIX


# The last lines of an emitted test's failure: how to replay it on a fixed tree instead.
POINT_AT_A_FIX = (
    f"\n(to check a fix: pytest --kvrow-target=PATH@X.Y.Z, PATH a checkout of SGLang or its allocation_sizing.py,"
    f" or ${TARGET_ENV}=PATH@X.Y.Z)"
)


def regression_test_name(doc: dict[str, Any]) -> str:
    """``test_`` and the case's target and signature folded to ``[a-z0-9_]`` (an identifier, whatever they hold)."""
    raw = f"{doc['target']}_{doc.get('signature') or doc['property']}"
    folded = re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", raw.lower().replace(">", "_gt_"))).strip("_")
    return "test_" + (folded[:MAX_NAME].rstrip("_") or "case")


def _target_shown(target: object) -> str:
    if isinstance(target, str) and _SAFE_TARGET.fullmatch(target):
        return target
    return "the case's target (unusual characters: see CASE_JSON)"


def emit_test(doc: dict[str, Any]) -> str:
    """A ready-to-paste pytest module that replays ``doc`` (a validated case document).

    Built from values, never from text: the signature is parsed against the
    known names and printed canonical, the target shown only when it is made
    of a spec's characters, the name folded to an identifier, and the case
    embedded as data: its JSON (ASCII only, so NaN and lone surrogates travel
    too), one ``repr`` string literal per line, parsed at run time.  ``repr``
    always writes one whole literal, so no content of the case can add, end
    or change a statement (``tests/test_hostile_input.py`` holds the module's
    syntax tree equal to the template's but for those values).
    """
    signature = Signature.parse(doc["signature"]) if doc.get("signature") is not None else None
    shown = str(signature) if signature is not None else Property(doc["property"]).value
    replayable = {k: v for k, v in doc.items() if k != "message"}  # the replay prints the message anew
    text = json.dumps(replayable, ensure_ascii=True, sort_keys=True, indent=4)
    case = "\n".join(f"    {line!r}" for line in (line + "\n" for line in text.splitlines()))
    return _TEMPLATE.format(
        name=regression_test_name(doc),
        doc=f"{shown} on {_target_shown(doc['target'])}, found by kvrow-fuzz.",
        case=case,
    )


def module_shape(source: str) -> str:
    """A module's syntax tree with the test's name and every string constant blanked.

    Every emitted module has the shape of the template's (``template_shape``):
    the case can change values, never code.
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            node.name = "test_"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def template_shape() -> str:
    """``module_shape`` of the template filled with placeholder values."""
    return module_shape(_TEMPLATE.format(name="test_case", doc="doc", case="    'case'"))


def regression_files() -> list[str]:
    if not os.path.isdir(REGRESSIONS_DIR):
        return []
    return sorted(os.path.join(REGRESSIONS_DIR, f) for f in os.listdir(REGRESSIONS_DIR) if f.endswith(".json"))
