"""Triton for SGLang's kernels on CPU: the real triton in interpreter mode, and five speed-ups of its interpreter.

Each speed-up computes what the interpreter computed before (every value a
kernel stores, every error it raises); ``tests/test_sglang_runtime.py``
holds each to that.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import inspect
import os
import sys
import types
from typing import Any

from fuzz.targets.base import TargetError

TRITON_EXTRA = "the write path needs triton (SGLang's environment has it; else: pip install 'kvrow-fuzz[writepath]')"


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
    """``triton`` with the five interpreter speed-ups below; each computes what the interpreter computed before."""
    _patch_lang_once(_without_dead_overflow_checks(triton))
    _builtins_listed_once()
    _np_dtypes_once()
    _launches_remembered()
    return triton


def _np_dtypes_once() -> None:
    """The interpreter's ``_get_np_dtype`` answered once per element type instead of building its table at every call.

    It maps a triton type to the numpy dtype its values are stored in, and builds a dict of every scalar type to
    do so on each call (every value an interpreted kernel makes asks it: about a tenth of a replay's time).  Its
    answer for a block type is its element type's, and for a scalar or pointer type a function of the type alone
    (a dtype equals another of its name, and maps to one numpy dtype), so each element type's answer is kept; an
    unhashable one (a pointer type) is asked as before, and so is what raised (nothing raised is kept).
    """
    try:
        interpreter: Any = importlib.import_module("triton.runtime.interpreter")
        get, block = interpreter._get_np_dtype, interpreter.tl.block_type
    except (ImportError, AttributeError):
        return
    if getattr(get, "_kvrow_once", False):
        return
    known: dict[Any, Any] = {}

    def np_dtype(tt_dtype: Any) -> Any:
        element = tt_dtype.element_ty if isinstance(tt_dtype, block) else tt_dtype
        try:
            return known[element]
        except KeyError:
            found = known[element] = get(element)
            return found
        except TypeError:  # unhashable: asked every time
            return get(tt_dtype)

    np_dtype._kvrow_once = True  # type: ignore[attr-defined]
    np_dtype.unmemoized = get  # type: ignore[attr-defined]  # the interpreter's own (the test holds them equal)
    interpreter._get_np_dtype = np_dtype


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


# What the remembered launches may hold (their inputs and outputs), oldest forgotten first: a campaign's launches
# on toy rows take kilobytes each; a real context length's rows, about a megabyte.
REMEMBERED_BYTES = 256 << 20
_SCALARS = (int, float, bool, str, type(None))
_ABSENT = object()  # a name the kernel's globals lack (yet)


class _Launches:
    """Launches already run: each one's inputs, and what its tensors held after it (``_launches_remembered``)."""

    def __init__(self, budget: int) -> None:
        self.budget, self.held = budget, 0
        self.outputs: collections.OrderedDict[tuple[Any, ...], tuple[bytes, ...]] = collections.OrderedDict()
        self.hits = self.runs = 0

    def forget(self) -> None:
        """Nothing remembered any more (a benchmark's fresh start)."""
        self.outputs.clear()
        self.held = self.hits = self.runs = 0

    def remember(self, key: tuple[Any, ...], size: int, after: tuple[bytes, ...]) -> None:
        cost = size + sum(map(len, after))
        if cost > self.budget:
            return
        self.outputs[key] = after
        self.held += cost
        while self.held > self.budget:
            old_key, old = self.outputs.popitem(last=False)
            self.held -= _key_bytes(old_key) + sum(map(len, old))


def _storage_bytes(storage: Any) -> Any:
    """The storage as one flat uint8 tensor (the same memory)."""
    import torch

    return torch.empty(0, dtype=torch.uint8).set_(storage)


def _key_bytes(key: tuple[Any, ...]) -> int:
    return sum(len(part) for part in key[-1])


def _launch_key(
    executor: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], list[Any]] | None:
    """(the launch's inputs, the storages its tensors live in), or None where a launch is not only its inputs.

    The inputs: the kernel (``_kernel_key``: its code, and every global it names, as they are now), the grid,
    each scalar, and each tensor's dtype, shape, strides and offset into its storage, which earlier argument shares
    that storage, and the storage's bytes.  None: a callable grid, a pre-run hook, or an argument of another kind
    (a tensor descriptor, a tuple, an object).
    """
    import torch

    fn, grid = executor.fn, executor.grid
    if executor.pre_run_hooks or not isinstance(grid, tuple) or not all(isinstance(g, int) for g in grid):
        return None
    storages: list[Any] = []
    where: dict[int, int] = {}
    shape: list[Any] = []
    for name, value in [*((None, a) for a in args), *sorted(kwargs.items())]:
        if isinstance(value, torch.Tensor) and type(value) is torch.Tensor and value.device.type == "cpu":
            storage = value.untyped_storage()
            index = where.setdefault(storage.data_ptr(), len(storages))
            if index == len(storages):
                storages.append(storage)
            shape.append((name, value.dtype, tuple(value.shape), value.stride(), value.storage_offset(), index))
        elif type(value) in _SCALARS:
            shape.append((name, type(value), value))
        else:
            return None
    kernel = _kernel_key(fn)
    if kernel is None:
        return None
    contents = tuple(_storage_bytes(s).numpy().tobytes() for s in storages)
    return (kernel, grid, tuple(shape), contents), storages


def _jitted() -> Any:
    from triton.runtime.jit import KernelInterface

    return KernelInterface


def _constexpr() -> Any:
    from triton.language import constexpr

    return constexpr


def _kernel_key(fn: Any, depth: int = 0) -> tuple[Any, ...] | None:
    """What a kernel computes from its launch's inputs, as a value: its code (and the code nested in it), its
    annotations (which arguments are constexprs: the interpreter passes those as Python values, the others as
    tensors), its defaults and every global its code names (a jitted helper by its own key, recursively; a value by
    its type and value, a constexpr's and a tuple's element by element), so the same kernel loaded from two trees (or
    releases) is one key.  None where that cannot be had: a closure, a global that can change in place (a list, a
    dict), helpers nested past a few levels."""
    code = getattr(fn, "__code__", None)
    if code is None or getattr(fn, "__closure__", None) or depth > 8:
        return None
    named: list[Any] = []
    for name in _names(code):
        value = fn.__globals__.get(name, _ABSENT)
        if isinstance(value, _jitted()):
            helper = _kernel_key(value.fn, depth + 1)
            if helper is None:
                return None
            named.append((type(value), helper))
        else:
            named.append(_typed(value))
    notes = tuple(sorted((k, repr(v)) for k, v in getattr(fn, "__annotations__", {}).items()))
    defaults = _typed(fn.__defaults__ or ()), _typed(tuple(sorted((fn.__kwdefaults__ or {}).items())))
    key = (code, notes, defaults, tuple(named))
    try:
        hash(key)
    except TypeError:  # a global that can change in place (a list, a dict): not an input a key can hold
        return None
    return key


def _names(code: Any) -> tuple[str, ...]:
    """The global names a code object and the code nested in it (a lambda, a comprehension) name, in order."""
    nested = (c for c in code.co_consts if hasattr(c, "co_names"))
    return tuple(dict.fromkeys((*code.co_names, *(n for c in nested for n in _names(c)))))


def _typed(value: Any) -> Any:
    """``value`` as a key holds it: with its type (1 and 1.0 and True compare equal, and compute differently), a
    tuple's elements each, a constexpr's value (a constexpr compares by its value alone)."""
    if isinstance(value, tuple):
        return (tuple, tuple(_typed(v) for v in value))
    if isinstance(value, _constexpr()):
        return (type(value), _typed(value.value))
    return (type(value), value)


def _launches_remembered(budget: int = REMEMBERED_BYTES) -> None:
    """A launch whose inputs were all seen before writes what that launch left in its tensors, without running it.

    Under the interpreter a kernel is a function of its launch: it reads and writes memory only through the
    tensors it is given (a pointer past them reads memory no run could promise), its values come from those
    bytes, its scalars and constexprs, the grid and the globals it names, and it keeps no state between launches.
    So a launch equal to an earlier one in all of these (``_launch_key``) leaves its tensors' storages as that one
    left them.  A decode campaign relaunches the same kernel on the same rows often (each case replays its
    steps from the same start): about two launches in five.  Not remembered: a launch that raised (it runs
    again, and raises again), one under a trace function (``bounds.Entered`` records the kernel's frames, which
    a remembered launch would not make), and one ``_launch_key`` refuses.  The memory held is bounded
    (``REMEMBERED_BYTES``, oldest forgotten first).
    """
    try:
        interpreter: Any = importlib.import_module("triton.runtime.interpreter")
        executor_class = interpreter.GridExecutor
    except (ImportError, AttributeError):
        return
    run = executor_class.__call__
    if getattr(run, "_kvrow_remembered", False):
        return
    launches = _Launches(budget)

    def remembered(self: Any, *args: Any, **kwargs: Any) -> Any:
        if sys.gettrace() is not None:
            return run(self, *args, **kwargs)
        found = _launch_key(self, args, kwargs)
        if found is None:
            return run(self, *args, **kwargs)
        key, storages = found
        after = launches.outputs.get(key)
        if after is not None:
            launches.outputs.move_to_end(key)
            launches.hits += 1
            for storage, content in zip(storages, after, strict=True):
                _storage_bytes(storage).copy_(_bytes_tensor(content))
            return None
        out = run(self, *args, **kwargs)
        launches.runs += 1
        launches.remember(key, _key_bytes(key), tuple(_storage_bytes(s).numpy().tobytes() for s in storages))
        return out

    remembered._kvrow_remembered = True  # type: ignore[attr-defined]
    remembered.launches = launches  # type: ignore[attr-defined]
    remembered.unremembered = run  # type: ignore[attr-defined]  # every launch run (benchmarks/write_path_speed.py)
    executor_class.__call__ = remembered


def _bytes_tensor(content: bytes) -> Any:
    import torch

    if not content:  # an empty storage (a zero-size tensor argument): frombuffer refuses an empty buffer
        return torch.empty(0, dtype=torch.uint8)
    return torch.frombuffer(bytearray(content), dtype=torch.uint8)
