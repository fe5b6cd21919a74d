"""Version 1 baselines (keyed by place: property, function, path), read only to upgrade them
(``baseline upgrade FILE``): a place cannot tell a new bug from a known one in the same function, so a
version 1 file is never used to suppress anything."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .baseline import (
    _NAME,
    _PATH,
    OPTIONAL_ENTRY_KEYS,
    SAME_WRITE,
    V1,
    V1_ENTRY_KEYS,
    BaselineError,
    _head,
    _property,
    _scope,
    _text,
)
from .cause import Cause, CauseKind


@dataclass(frozen=True, order=True)
class PlaceV1:
    """A version 1 entry: (property, function, path), what ``baseline upgrade`` matches causes against."""

    property: str
    function: str
    path: str


# Where version 1 catalogued a known fix located nowhere in SGLang's code (#35265).
KNOWN_FIXES_PATH = "allocator_model/known_bugs.py"


def places_of(cause: Cause) -> set[PlaceV1]:
    """The version 1 entries a cause made (``baseline upgrade``): each property in each function it lives in."""
    props = {SAME_WRITE.get(p, p) for p in cause.properties}
    code = cause.code
    if not code and cause.kind is CauseKind.KNOWN:
        code = [(KNOWN_FIXES_PATH, cause.key.replace("-", "_"))]
    return {PlaceV1(p, function, path) for p in props for path, function in code}


def read_v1(
    data: Any, where: str
) -> tuple[str, frozenset[str] | None, list[tuple[PlaceV1, frozenset[str] | None, bool]]]:
    """A version 1 document (``baseline upgrade``): (target, declared releases, entries with releases, required)."""
    target, declared, raw = _head(data, where, V1, ", ".join(V1_ENTRY_KEYS))
    out = []
    for i, e in enumerate(raw, 1):
        at = f"{where}: entry {i}"
        if (
            not isinstance(e, dict)
            or not set(V1_ENTRY_KEYS) <= set(e)
            or not set(e) <= {*V1_ENTRY_KEYS, *OPTIONAL_ENTRY_KEYS}
        ):
            raise BaselineError(
                f"{at} must have exactly {', '.join(V1_ENTRY_KEYS)} (optional {', '.join(OPTIONAL_ENTRY_KEYS)})"
            )
        place = PlaceV1(
            _property(e, at),
            _text(e, "function", _NAME, at, "a qualified name"),
            _text(e, "path", _PATH, at, "a relative repository path"),
        )
        out.append((place, *_scope(e, at, declared)))
    return target, declared, out
