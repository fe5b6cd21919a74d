"""Root causes by counterfactual: which fix makes a finding's case pass (``counterfactual.root_causes``).

Imported lazily: ``identity`` (a cause's code digest) serves every engine's tables, without the counterfactual's
engine code behind it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["root_causes"]


def __getattr__(name: str) -> Any:
    if name == "root_causes":
        from .counterfactual import root_causes

        return root_causes
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
