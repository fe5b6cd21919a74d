"""Targets: what a command runs against, each of one engine (``fuzz.engines``).

base     Target, its kinds, the two target errors (a leaf)
resolve  target specs -> Target, through the engine that claims them

SGLang's real code (versions, wheel cache, stand-ins, loader) is its engine's: ``fuzz/engines/sglang/real/``.
"""

from .base import Target, TargetCallError, TargetError, TargetKind
from .resolve import known_targets, resolve_target, resolve_targets

__all__ = [
    "Target",
    "TargetCallError",
    "TargetError",
    "TargetKind",
    "known_targets",
    "resolve_target",
    "resolve_targets",
]
