"""A cause's code identity on an SGLang target: the digest (``fuzz.causes.identity.digest``) of the function as the
target runs it, read from the model's file, the target's sizing file or the file its pool builders came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fuzz.causes.identity import digest


def code_digest(target: Any, function: str) -> str | None:
    """The digest of ``function`` as ``target`` runs it: a model's (``allocator_model/sizing.py``, the unified
    rows' ``pools.unified_row_extra``) with its revision's fields; a real target's sizing function in its sizing
    file, a pool builder (``Class.method``) in the file its builders were read from. None: the code cannot be
    read (the cause has no identity, so no baseline knows it)."""
    from .locations import target_source

    if target.is_model:
        import allocator_model.pools as pools
        import allocator_model.sizing as sizing

        module = pools if function == "unified_row_extra" else sizing
        return digest(
            Path(module.__file__ or "").read_text(encoding="utf-8"), function, revision_fields(target.revision)
        )
    if "." not in function:
        source = target_source(target)[1]
        return digest(source, function) if source else None
    origin = getattr(getattr(target.sizing, "module", None), "builders_origin", None)
    builders = _origin_source(origin) if origin else None
    return digest(builders, function) if builders else None


def _origin_source(origin: str) -> str | None:
    """The text of a file the target read its builders from: a wheel's member (``WHEEL/sglang/...``) or a file."""
    from .real import wheels

    try:
        if ".whl/" in origin:
            wheel, member = origin.split(".whl/", 1)
            return wheels.read_member(wheel + ".whl", member)
        return wheels.read_file(origin)[0]
    except wheels.SourceError:
        return None


def revision_fields(revision: Any) -> dict[str, Any]:
    """A model revision's behaviour as JSON data (its name and summary aside): what tells two revisions of the one
    model file apart in a digest."""
    import dataclasses

    def plain(value: Any) -> Any:
        if isinstance(value, set | frozenset):
            return sorted(str(v) for v in value)
        return value if isinstance(value, bool | int | float | str) or value is None else str(value)

    return {
        f.name: plain(getattr(revision, f.name))
        for f in dataclasses.fields(revision)
        if f.name not in ("name", "summary")
    }
