"""The SGLang engine: SGLang's targets, model and code as ``fuzz.engines.base.Engine`` fills them in.

Light at import (the registry loads it to ask which specs it claims); each
answer imports what it needs.  Its model and strategies sit in the top-level
``allocator_model/`` and ``strategies/``; its runtime (wheels, loader, the
decode write path under triton's interpreter) in ``fuzz/targets/sglang/``.
"""

from .engine import ENGINE, SGLangEngine

__all__ = ["ENGINE", "SGLangEngine"]
