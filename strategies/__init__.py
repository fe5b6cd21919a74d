"""Hypothesis strategies over SGLang serving configurations and near-limit request lengths."""

from .configs import serving_configs, spec_args
from .lengths import adaptive_step_sequences, adaptive_steps, near_limit
from .scenarios import decode_scenarios

__all__ = [
    "serving_configs",
    "spec_args",
    "near_limit",
    "adaptive_steps",
    "adaptive_step_sequences",
    "decode_scenarios",
]
