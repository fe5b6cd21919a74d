"""Real SGLang code as a fuzz target: a release's wheel, the installed package, or a checkout's file.

Only SGLang's sizing module (``sglang/srt/mem_cache/allocation_sizing.py``)
is run, with slices of the code that builds the pools (row widths) and the
allocator (its page); SGLang itself is never installed or imported.  The module reads its
configuration through accessor modules (``sglang.srt.runtime_context`` and
friends); the loader supplies stand-ins for those, privately, and sets them
from the configuration of each example.  The decode write paths, the
allocator's logic and the scheduler rules stay the model's, read with the semantics
of the target's version (``allocator_model.revisions.RELEASE_REVISIONS``).

    versions   release numbers, API generations, decode semantics per version
    wheels     the wheel cache (pip download) and the installed package
    stubs      the accessor modules the sizing file imports
    builders   each kind's row extra, sliced out of the pool builders
    allocators each kind's allocator page, sliced out of where the allocator is built
    loader     ``RealSizing``: the real file behind the model's sizing surface
    resolve    target specs (``sglang==X.Y.Z``, ``sglang``, ``PATH``) -> Target
"""

from .real import RealSizing
from .resolve import is_real_spec, real_target_rows, resolve_real_target, with_sglang_version

__all__ = ["RealSizing", "is_real_spec", "real_target_rows", "resolve_real_target", "with_sglang_version"]
