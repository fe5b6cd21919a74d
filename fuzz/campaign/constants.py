"""The pool of literals Hypothesis mixes into its draws, set to the project's own for each campaign.

Hypothesis draws about one value in twenty from the literals of the *local* modules the process has loaded (any
module file outside site-packages and the standard library), a pool that only grows.  A process that ran other code
first (a test session: its test modules; an earlier run on a real target: SGLang's modules, executed from the wheel
out of a temporary tree) holds their literals too, so a derandomized campaign there explores other inputs, and finds
other groups, than the same command run fresh.  ``pin_local_constants`` sets the pool to the literals of the
project's modules alone (``driver.load_project_modules`` has loaded every one) and marks every module loaded now as
seen: the same pool whatever ran before.  A module loaded later in the campaign (SGLang's, by a real target's write
path) joins it as it would in a fresh run of the same command.

No public setting reaches the pool: this sets Hypothesis' providers module's own names, whose version
``constraints.txt`` pins; a version without them fails here, loudly, never silently.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

POOL_NAMES = ("_local_constants", "_seen_modules", "_sys_modules_len", "CONSTANTS_CACHE")


def pin_local_constants(packages: Iterable[str]) -> int:
    """Set Hypothesis' pool of local constants to those of ``packages``' loaded modules; the pool's size."""
    import hypothesis
    from hypothesis.internal.conjecture import providers
    from hypothesis.internal.constants_ast import Constants, constants_from_module, is_local_module_file
    from hypothesis.internal.floats import float_to_int
    from sortedcontainers import SortedSet

    missing = [name for name in POOL_NAMES if not hasattr(providers, name)]
    if missing:
        raise RuntimeError(
            f"hypothesis {hypothesis.__version__} has no {', '.join(missing)} in its providers: the pool of local "
            "constants cannot be pinned (use the version constraints.txt pins)"
        )
    roots = tuple(packages)
    pool = Constants(integers=SortedSet(), floats=SortedSet(key=float_to_int), bytes=SortedSet(), strings=SortedSet())
    modules = list(sys.modules.items())
    for name, module in sorted(modules, key=lambda item: item[0]):
        ours = name in roots or name.startswith(tuple(f"{r}." for r in roots))
        path = getattr(module, "__file__", None)
        if ours and path is not None and is_local_module_file(path):
            pool |= constants_from_module(module)
    providers._local_constants = pool
    providers._seen_modules = {id(module) for _, module in modules}
    providers._sys_modules_len = len(sys.modules)
    providers.CONSTANTS_CACHE.cache.clear()
    return len(pool)
