"""What a representative case's search may spend and where it moves a case: pure data (a leaf, light to import).

``representative`` walks with these; ``fuzz.engines.BUILTIN_RUN`` states the budget in ``run --help`` as data
(``tests/test_representative.py`` holds the two to ``budget_text``).
"""

from __future__ import annotations

BUDGET = 40  # replays per group, at most: a count, so the same walk on every run and machine
WORK_CONTEXT = 4096  # where the walk moves the other fields: the smallest context a representative case has
LEAD_CONTEXTS = (32768, 131072, 8192, 16384, 65536, 262144)  # the context it is shown at: the first that fails
DCP_SIZES = (8, 4, 2)  # a DCP group's size where its minimal case's is none of these: the GPUs of a node


def budget_text() -> str:
    """The budget as ``run --help`` states it."""
    return (
        f"a walk of at most {BUDGET} replays per bug group toward the deployments SGLang runs by default (context "
        f"{WORK_CONTEXT} to {max(LEAD_CONTEXTS)}, its speculative defaults, a backend's page, DCP only where the "
        "group needs it), the case found confirmed like the minimal one"
    )
