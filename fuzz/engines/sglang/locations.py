"""Where an SGLang finding's SARIF result points: the sizing function that computes what the finding shows too
small, or the builder of a pool that sizes its own row.

The location is the line of the sizing function:

    the row width    write-within-row, neighbour-rows-untouched, kv-lens-ordered
                     -> get_req_to_token_extra_context_len()  (the headroom past context_len),
                        or, on a pool whose builder sizes its own row (unified Mamba / SWA), that
                        builder in kv_cache_configurator.py (KVCacheConfigurator._init_unified_*;
                        0.5.13-0.5.15: model_runner_kv_cache_mixin.py)
    the reserve      every other property: drafts, page-aligned growth, the slot invariants
                     -> get_alloc_reserve_per_decode()
    the function     model-mismatch/<function>, sizing-raised (the function that raised)

with the other of the two as a related location.  Where the function lives:

    sglang==X.Y.Z, sglang   python/sglang/srt/mem_cache/allocation_sizing.py (its path in SGLang's
                            repository, so code scanning maps it onto SGLang's tree)
    PATH                    the file, relative to the working directory (absolute outside it)
    reference[@REVISION]    the model's function in allocator_model/sizing.py

The line is the function's ``def`` in the target's own source (read again,
parsed with ``ast``; never imported).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from allocator_model.surface import SURFACE
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding
from fuzz.findings.sarif import SourceLine, artifact_uri, def_lines

from .groups import serving_config
from .names import SGLangProperty

ROW_WIDTH = "get_req_to_token_extra_context_len"
RESERVE = "get_alloc_reserve_per_decode"
SGLANG_REPO_PATH = "python/"  # where SGLang's repository keeps the package a wheel installs
_ROW_WIDTH_PROPERTIES = frozenset(
    {Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED, SGLangProperty.KV_LENS_ORDERED}
)
_RAISED_IN = re.compile(r"^\s*([A-Za-z_]\w*)\(\)")


def sizing_functions(f: Finding) -> tuple[str, ...]:
    """SGLang's sizing functions a finding indicts, the one to show first (see the module docstring)."""
    prop = Property(f.violation.prop)
    if prop is Property.MODEL_MISMATCH:
        entry = SURFACE.get(str(f.violation.group))  # the surface entry that disagrees: SGLang's function for it
        if entry is None:
            return ()
        return entry.functions[:1] or (entry.name,)
    if prop is Property.SIZING_RAISED:
        m = _RAISED_IN.match(f.violation.headline)
        raised = (m.group(1),) if m else ()
        return raised + tuple(fn for fn in (RESERVE, ROW_WIDTH) if fn not in raised)
    return (ROW_WIDTH, RESERVE) if prop in _ROW_WIDTH_PROPERTIES else (RESERVE, ROW_WIDTH)


def target_source(target: Any, cwd: str | None = None) -> tuple[str, str, bool]:
    """(artifact URI, source text, model?) of a target's sizing code; the source is "" when it cannot be read."""
    from fuzz.engines.sglang.real import wheels
    from fuzz.engines.sglang.real.resolve import _split_version
    from fuzz.targets.base import TargetKind

    if target.kind is TargetKind.MODEL:
        import allocator_model.sizing as model

        path = model.__file__ or ""
        uri = Path(path).relative_to(Path(path).parent.parent).as_posix()  # allocator_model/sizing.py
        return uri, Path(path).read_text(encoding="utf-8"), True
    try:
        if target.kind is TargetKind.RELEASE:
            source, member = wheels.read_sizing_from_wheel(wheels.release_wheel(target.spec.split("==", 1)[1]))
            return SGLANG_REPO_PATH + member, source, False  # common.py before 0.5.16
        if target.kind is TargetKind.INSTALLED:
            return SGLANG_REPO_PATH + wheels.SIZING_MODULE, wheels.installed_sizing()[0], False
        source, path = wheels.read_file(_split_version(target.spec)[0])
        return artifact_uri(path, cwd), source, False
    except wheels.SourceError:
        path = _split_version(target.spec)[0]
        uri = SGLANG_REPO_PATH + wheels.SIZING_MODULE if target.kind is not TargetKind.FILE else artifact_uri(path, cwd)
        return uri, "", False


def locate(target: Any, functions: Sequence[str], cwd: str | None = None) -> list[SourceLine]:
    """Where each of ``functions`` is defined in the target's sizing code (line 1 of the file if nowhere)."""
    uri, source, model = target_source(target, cwd)
    lines = def_lines(source)
    found = []
    for fn in functions:
        name = fn.removeprefix("get_") if model else fn  # the model names its functions without get_
        if name in lines:
            found.append(SourceLine(uri, lines[name], name))
    return found or [SourceLine(uri, 1, functions[0] if functions else "")]


def builder_location(target: Any, f: Finding, cwd: str | None = None) -> SourceLine | None:
    """Where the row of the finding's kind of pool is sized when its own builder sizes it (None: the headroom).

    A unified pool's row is ``C + extra_max_context_len`` of its builder in
    ``kv_cache_configurator.py`` (``fuzz.engines.sglang.real.builders``), not the
    sizing file's headroom; a model target's is ``pools.unified_row_extra``.
    """
    from allocator_model.pools import KVPool
    from fuzz.engines.sglang.real import wheels
    from fuzz.targets.base import TargetKind

    kind = serving_config(f).kv_pool
    if kind is KVPool.STANDARD or Property(f.violation.prop) not in _ROW_WIDTH_PROPERTIES:
        return None
    if target.kind is TargetKind.MODEL:
        if kind not in target.revision.narrow_rows:
            return None
        import allocator_model.pools as pools

        path = pools.__file__ or ""
        line = def_lines(Path(path).read_text(encoding="utf-8")).get("unified_row_extra", 1)
        return SourceLine(Path(path).relative_to(Path(path).parent.parent).as_posix(), line, "unified_row_extra")
    found = target.sizing.builder_location(kind)
    if found is None:
        return None
    origin, function, line = found
    if target.kind is TargetKind.FILE:
        uri = artifact_uri(origin, cwd)
    else:  # a release or the installed package: its path in SGLang's repository (0.5.13-0.5.15: the mixin)
        member = wheels.MIXIN_MODULE if origin.endswith(wheels.MIXIN_MODULE) else wheels.CONFIGURATOR_MODULE
        uri = SGLANG_REPO_PATH + member
    return SourceLine(uri, line, function)


def locations(target: Any, f: Finding, cwd: str | None = None) -> list[SourceLine]:
    """The code an SGLang finding indicts, first shown first: a pool's own builder, then the sizing functions."""
    where = locate(target, sizing_functions(f), cwd)
    builder = builder_location(target, f, cwd)
    return [builder, *where] if builder is not None else where
