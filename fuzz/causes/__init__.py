"""Root causes by counterfactual: which fix makes a finding's case pass (``counterfactual.root_causes``)."""

from .counterfactual import root_causes

__all__ = ["root_causes"]
