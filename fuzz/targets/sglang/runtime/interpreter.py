"""Triton for SGLang's kernels on CPU: the real triton in interpreter mode, and three speed-ups of its interpreter.

Each speed-up computes what the interpreter computed before (every value a
kernel stores, every error it raises); ``tests/test_sglang_runtime.py``
holds each to that.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import sys
import types
from typing import Any

from ...base import TargetError

TRITON_EXTRA = "the write path needs triton: install kvrow-fuzz with the triton==3.9.0 extra"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on", "y", "t")


def ensure_triton() -> types.ModuleType:
    """The real triton, in interpreter mode; refuse (one line) where that cannot be had.

    Sets ``TRITON_INTERPRET=1`` in the process environment when triton is
    not imported yet (triton 3.9.0 reads it at each ``@triton.jit``: ``jit``
    in ``runtime/jit.py`` asks ``knobs.runtime.interpret``, ``env_bool("TRITON_INTERPRET")``
    in ``knobs.py``).  Already imported without
    it: refused, rather than run compiled-mode triton on CPU tensors.
    """
    if "triton" in sys.modules:
        if not _truthy(os.environ.get("TRITON_INTERPRET")):
            raise TargetError(
                "triton was imported without TRITON_INTERPRET=1: SGLang's kernels cannot run on CPU tensors "
                "(set TRITON_INTERPRET=1 before anything imports triton)"
            )
        return _interpreter_sped_up(sys.modules["triton"])
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        import triton
    except ImportError:
        raise TargetError(TRITON_EXTRA) from None
    return _interpreter_sped_up(triton)


def _interpreter_sped_up(triton: types.ModuleType) -> types.ModuleType:
    """``triton`` with the three interpreter speed-ups below; each computes what the interpreter computed before."""
    _patch_lang_once(_without_dead_overflow_checks(triton))
    _builtins_listed_once()
    return triton


def _without_dead_overflow_checks(triton: types.ModuleType) -> types.ModuleType:
    """``triton``, its interpreter no longer building integer-overflow checks that nothing ever evaluates.

    The interpreter's options keep ``sanitize_overflow`` on and ``debug`` off:
    every 32-bit ``+``/``-``/``*`` in a kernel then recomputes itself in int64
    to build a ``device_assert``, which ``debug`` off discards unevaluated (as a
    GPU build without debug does).  Turning the dead checks off changes no value
    a kernel computes or stores, and no error it raises; it is about a fifth of
    the write path's time.  Left as it is where ``debug`` is on (the checks
    would run) or the interpreter has no such options.
    """
    try:
        interpreter = importlib.import_module("triton.runtime.interpreter")
    except ImportError:
        return triton
    builder: Any = getattr(interpreter, "interpreter_builder", None)
    options = getattr(builder, "options", None)
    if dataclasses.is_dataclass(options) and not isinstance(options, type) and not getattr(options, "debug", True):
        if getattr(options, "sanitize_overflow", False):
            builder.options = dataclasses.replace(options, sanitize_overflow=False)
    return triton


class _Unpatched:
    """What a patch already made returns: nothing of its own to restore."""

    def restore(self) -> None:
        return None


def _patch_lang_once(triton: types.ModuleType) -> None:
    """The interpreter's ``_patch_lang`` made once per kernel launch instead of once per call of a jitted helper.

    Each launch patches ``triton.language`` for the interpreter and restores it
    after the grid has run; each call of a ``@triton.jit`` helper inside the
    kernel patches the same modules again with the same interpreted builtins
    (and never restores: the launch's restore does).  The patch depends only on
    which of ``triton.language``/``triton.language.core`` the function sees, so a
    helper that sees no module the launch has not patched skips it; anything
    else is patched as before.  About a tenth of the write path's time.
    """
    try:
        interpreter: Any = importlib.import_module("triton.runtime.interpreter")
        langs = (interpreter.tl, interpreter.tl.core)
    except (ImportError, AttributeError):
        return
    patch = getattr(interpreter, "_patch_lang", None)
    if patch is None or getattr(patch, "_kvrow_once", False):
        return
    patched: set[int] = set()  # the modules the launch in progress has patched (empty: none in progress)

    def patch_once(fn: Any) -> Any:
        wanted = {id(v) for v in fn.__globals__.values() if inspect.ismodule(v) and v in langs}
        if patched and wanted <= patched:
            return _Unpatched()
        scope = patch(fn)
        if patched:  # a helper seeing a module the launch has not patched: patched, never restored (as before)
            patched.update(wanted)
            return scope
        patched.update(wanted)
        restore = scope.restore

        def restored() -> None:
            patched.clear()
            restore()

        scope.restore = restored
        return scope

    patch_once._kvrow_once = True  # type: ignore[attr-defined]
    interpreter._patch_lang = patch_once


def _builtins_listed_once() -> None:
    """The interpreter's ``_patch_builtin`` without its ``inspect.getmembers`` scan at each call.

    Each launch patches every builtin of ``triton.language``, ``triton.language.core``, ``tl.tensor``,
    ``tl.math`` and ``tensor_descriptor_base`` (about eight scans of a few hundred members per launch).  Here each
    object's builtins are listed once, before any launch (another object: at its first scan), and each call
    wraps those.  The same: the builtins of triton's language objects are fixed once it is imported, and a patch
    only ever replaces one by a wrapper that is no builtin, so what a scan finds is always among those listed.
    A listed name the scan would skip is already wrapped (the class reached as ``tl.tensor`` and again as
    ``tl.core.tensor``; ``tl.core``'s names that a jitted helper's patch leaves wrapped) or was just replaced by
    ``_patch_lang``'s own ``reduce``/``associative_scan``, which ``_patch_lang`` sets again right after: it is
    wrapped around the same builtin, which computes the same, and the restore puts back what was there.
    """
    try:
        interpreter: Any = importlib.import_module("triton.runtime.interpreter")
        scan, wrap, is_builtin = interpreter._patch_builtin, interpreter._patch_attr, interpreter.tl.core.is_builtin
    except (ImportError, AttributeError):
        return
    if getattr(scan, "_kvrow_listed", False):
        return
    listed: dict[int, tuple[object, list[tuple[str, Any]]]] = {}  # id(obj) -> (obj, its builtins): obj kept alive

    def patch_builtin(pkg: Any, builder: Any, scope: Any) -> None:
        entry = listed.get(id(pkg))
        if entry is None or entry[0] is not pkg:
            entry = listed[id(pkg)] = (pkg, [(n, m) for n, m in inspect.getmembers(pkg) if is_builtin(m)])
        for name, member in entry[1]:
            wrap(pkg, name, member, builder, scope)

    tl = interpreter.tl
    for obj in (tl, tl.core, tl.tensor, tl.math, getattr(tl.core, "tensor_descriptor_base", None)):
        if obj is not None and id(obj) not in listed:  # before any launch of ours: as triton defines them
            listed[id(obj)] = (obj, [(n, m) for n, m in inspect.getmembers(obj) if is_builtin(m)])
    patch_builtin._kvrow_listed = True  # type: ignore[attr-defined]
    interpreter._patch_builtin = patch_builtin
