"""Python source parsed once per process: the same file's tree for every reader that only reads it."""

from __future__ import annotations

import ast
import collections
import threading

# A few MB a tree for SGLang's largest files (its memory pool, its utils); a campaign reads about ten.
PARSED_KEPT = 12

_kept: collections.OrderedDict[tuple[str, str], ast.Module] = collections.OrderedDict()
_lock = threading.Lock()


def parsed(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename)``, parsed once for the same text (what it raises is raised every time).

    Shared between callers: a caller never changes the tree (it copies what it rewrites), so every caller
    sees what a fresh parse gives (``kept`` lets a test check that).  One of SGLang's large files takes up to a
    quarter of a second to parse; the last ``PARSED_KEPT`` trees are kept.
    """
    key = (source, filename)
    with _lock:
        tree = _kept.get(key)
        if tree is not None:
            _kept.move_to_end(key)
            return tree
    tree = ast.parse(source, filename)
    with _lock:
        _kept[key] = tree
        while len(_kept) > PARSED_KEPT:
            _kept.popitem(last=False)
    return tree


def kept() -> list[tuple[str, str, ast.Module]]:
    """(source, filename, tree) of every tree kept now, oldest first."""
    with _lock:
        return [(source, filename, tree) for (source, filename), tree in _kept.items()]
