"""The private import a loaded SGLang file runs under: every ``sglang`` module it imports is a stand-in.

Set as a namespace's ``__builtins__``, ``private_builtins`` governs every
import the code run in that namespace makes; nothing enters ``sys.modules``,
so other code in the process, a real SGLang included, never sees them.
"""

from __future__ import annotations

import builtins
from typing import Any

from .stubs import Published, StandInModule, known_names


class StandIns:
    """Every ``sglang`` module one loaded file imports, made on demand, and which names it took."""

    def __init__(self, published: Published) -> None:
        self.known = known_names(published)
        self.used: set[str] = set()
        self.modules: dict[str, StandInModule] = {}

    def module(self, name: str) -> StandInModule:
        """The stand-in for ``name`` and each package above it, each set as its parent's attribute."""
        if name not in self.modules:
            self.modules[name] = StandInModule(name, self.known, self.used)
            parent, _, leaf = name.rpartition(".")
            if parent:
                self.module(parent).__dict__[leaf] = self.modules[name]
        return self.modules[name]

    def unsupplied(self) -> list[str]:
        """Names the file imported that have no stand-in (harmless unless a sizing function calls one)."""
        return sorted(n for n in self.used if n not in self.known)


def private_builtins(stand_ins: StandIns) -> dict[str, Any]:
    """Builtins whose ``__import__`` serves every ``sglang`` module from ``stand_ins``.

    Set as a namespace's ``__builtins__``, it governs every import the code
    run in that namespace makes, at load time and inside functions alike;
    nothing enters ``sys.modules``.
    """
    real_import = builtins.__import__

    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        if level:
            raise ImportError(f"relative import of {name!r}: the sizing loader runs the file outside its package")
        if name == "sglang" or name.startswith("sglang."):
            module = stand_ins.module(name)
            return module if fromlist else stand_ins.module("sglang")
        return real_import(name, globals, locals, fromlist, level)

    namespace = dict(builtins.__dict__)
    namespace["__import__"] = _import
    return namespace
