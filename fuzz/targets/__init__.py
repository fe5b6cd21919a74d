"""Targets: the reference model and its revisions, or real SGLang sizing code.

base     Target (its sizing an ``allocator_model.surface.Surface``), its kinds, the two target errors (a leaf)
resolve  target specs -> Target
sglang/  real SGLang code: versions, wheel cache, accessor stand-ins, loader, specs
"""

from .base import Target, TargetCallError, TargetError, TargetKind, model_target
from .resolve import known_targets, resolve_target, resolve_targets

__all__ = [
    "Target",
    "TargetCallError",
    "TargetError",
    "TargetKind",
    "model_target",
    "known_targets",
    "resolve_target",
    "resolve_targets",
]
