"""The loader: SGLang's own module files, executed unmodified, each in a private module object.

``Loader(tree, executed, answers)`` executes, on first import, every module
of ``executed`` (dotted names, ``sglang.srt.mem_cache.allocation``) from
the tree's text.  Inside those modules, and only there (their
``__builtins__`` carry a private ``__import__``):

* ``import sglang.X`` / ``from sglang.X import y`` give the executed
  module when X is in the set, else an ``InertModule`` (``inert``: names of
  it are inert, a use of one whose answer is unknown stops the run with
  ``StandInMissing``), whose names in ``answers`` answer faithfully
  (``standins``);
* every third-party package but torch, numpy and triton (``REAL_IMPORTS``)
  is inert too, never imported (``sgl_kernel``, ``transformers``...): the
  CUDA branch imports some at module level and never calls them on the
  write path, and what the harness machine happens to have installed
  changes nothing;
* ``triton`` is the real one, imported with ``TRITON_INTERPRET=1``
  (``ensure_triton``), so every ``@triton.jit`` kernel runs on CPU tensors
  under triton's interpreter; the standard library is the real one.

The executed modules never enter ``sys.modules`` under an ``sglang`` name:
each gets a private name, ``_kvrow_sglang_<n>.sglang.srt...`` (registered
so that ``dataclasses`` and ``inspect.getsource`` find their module), and
real SGLang code elsewhere in the process never sees them.  ``close()``
removes them.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import itertools
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fuzz.targets.base import UNPARSABLE, TargetError

from ...records.errors import member_of
from ..stubs import StandInMissing
from .inert import PRIVATE_PREFIX, InertModule
from .interpreter import ensure_triton
from .tree import SourceTree

# The only packages besides the standard library the executed modules import for real; every other one
# (SGLang's third-party dependencies: sgl_kernel, flashinfer, transformers, huggingface_hub, msgspec...) is
# served inert and never imported: the CUDA branch imports some at module level (``if is_cuda() or is_musa():
# from sgl_kernel import ...`` [cite: eagle-v2-imports-sgl-kernel]; ``from huggingface_hub import
# snapshot_download`` [cite: spec-utils-imports-hf-hub]) and the write path calls none.
REAL_IMPORTS = frozenset({"torch", "numpy", "triton", "typing_extensions"})

# answers(module, name) -> (found, value): what an unexecuted module's name answers (``standins.StandIns.answer``).
Answers = Callable[[str, str], tuple[bool, Any]]
_counter = itertools.count(1)


@contextlib.contextmanager
def compile_at_first_call() -> Iterator[None]:
    """``torch.compile`` as SGLang's modules see it while they execute: the same compile, made at the first call of
    the function it decorates instead of at the decoration.

    A module-level ``@torch.compile`` costs seconds once per process (it imports
    ``torch._dynamo``) though the write path never calls what it decorates; a
    function that is called is compiled then, with the same options, and
    computes what it always did.  Anything but a plain function (a module, a
    bare ``torch.compile(...)`` used later) is compiled at once, as before.
    """
    import torch

    real = torch.compile
    if getattr(real, "_kvrow_at_first_call", False):  # an import inside an executing module: the outer one holds
        yield
        return

    def at_first_call(model: Any = None, **options: Any) -> Any:
        if model is None:
            return lambda fn: at_first_call(fn, **options)
        if not inspect.isfunction(model):
            return real(model, **options)
        compiled: Any = None

        @functools.wraps(model)
        def compiles_once(*args: Any, **kwargs: Any) -> Any:
            nonlocal compiled
            if compiled is None:
                compiled = real(model, **options)
            return compiled(*args, **kwargs)

        return compiles_once

    at_first_call._kvrow_at_first_call = True  # type: ignore[attr-defined]
    torch.compile = at_first_call  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.compile = real


class Loader:
    """A set of SGLang's module files executed from one tree; see the module docstring."""

    def __init__(self, tree: SourceTree, executed: Iterable[str], answers: Answers) -> None:
        self.tree = tree
        self.executed = frozenset(executed)
        self.answers = answers
        self.prefix = f"{PRIVATE_PREFIX}{next(_counter)}"
        self.modules: dict[str, types.ModuleType] = {}  # dotted sglang name -> module (executed or inert)
        self.filenames: dict[str, str] = {}  # code filename -> dotted name, of the executed modules
        self.used: set[str] = set()  # qualnames of inert names the executed code took
        self.builtins = self._private_builtins()
        self._loading: list[str] = []
        self.closed = False

    # -- modules --------------------------------------------------------------

    def module(self, dotted: str) -> types.ModuleType:
        """The module named ``dotted`` (``sglang.x.y``): executed on first use if in the set, else inert."""
        if dotted in self.modules:
            return self.modules[dotted]
        parent, _, leaf = dotted.rpartition(".")
        if dotted in self.executed:
            module = self._execute(dotted)
        else:
            module = InertModule(dotted, self._answers_for(dotted), self.used)
            self.modules[dotted] = module
        if parent:
            self.module(parent).__dict__.setdefault(leaf, module)
        return module

    def _answers_for(self, dotted: str) -> dict[str, Any]:
        return _ScopedAnswers(self.answers, dotted)  # type: ignore[return-value]

    def _execute(self, dotted: str) -> types.ModuleType:
        member = member_of(dotted)
        package = False
        source = self.tree.read(member)
        if source is None:
            source, package = self.tree.read(member_of(dotted, True)), True
            member = member_of(dotted, True)
        if source is None:
            raise TargetError(f"{self.tree.origin} has no {member_of(dotted)}: cannot execute {dotted}")
        filename = self.tree.register_source(member)
        try:
            code = compile(source, filename, "exec", dont_inherit=True)
        except UNPARSABLE as e:
            why = str(e) or type(e).__name__
            raise TargetError(f"{self.tree.origin}: {member} does not compile: {why}".splitlines()[0]) from None
        private = f"{self.prefix}.{dotted}"
        module = types.ModuleType(private)
        module.__dict__.update(
            __file__=filename,
            __builtins__=self.builtins,
            __package__=f"{self.prefix}.{dotted if package else dotted.rpartition('.')[0]}",
            __loader__=_SourceLoader(self.tree, member),
            __sglang_name__=dotted,
        )
        if package:
            module.__path__ = []  # type: ignore[attr-defined]
        self.modules[dotted] = module
        self.filenames[filename] = dotted
        sys.modules[private] = module
        self._loading.append(dotted)
        try:
            with compile_at_first_call():
                exec(code, module.__dict__)  # noqa: S102 - running SGLang's own file is the point
        except StandInMissing as e:
            self._forget(dotted, private, filename)
            text = str(e)  # a module this one imports may have said where already
            raise StandInMissing(
                text if text.startswith(self.tree.origin) else f"{self.tree.origin} {member} at import: {text}"
            ) from None
        except TargetError:
            self._forget(dotted, private, filename)
            raise
        except BaseException as e:  # noqa: BLE001 - any failure at import: the module cannot load
            self._forget(dotted, private, filename)
            line = _line_in(e, filename)
            raise TargetError(
                f"{self.tree.origin} {member}{line} raised {type(e).__name__} at import: {e}".splitlines()[0]
            ) from None
        finally:
            self._loading.pop()
        return module

    def _forget(self, dotted: str, private: str, filename: str) -> None:
        self.modules.pop(dotted, None)
        self.filenames.pop(filename, None)
        sys.modules.pop(private, None)

    def close(self) -> None:
        """Drop the private modules from ``sys.modules``."""
        for dotted, module in self.modules.items():
            if not isinstance(module, InertModule):
                sys.modules.pop(f"{self.prefix}.{dotted}", None)
        self.closed = True

    # -- the private import ---------------------------------------------------

    def _private_builtins(self) -> dict[str, Any]:
        real_import = builtins.__import__

        def _import(
            name: str,
            globals: dict[str, Any] | None = None,
            locals: Any = None,
            fromlist: Any = (),
            level: int = 0,
        ) -> Any:
            if level:
                name = self._absolute(name, globals, level)
            top = name.partition(".")[0]
            if top == "sglang":
                return self._import_sglang(name, fromlist)
            if top not in REAL_IMPORTS and top not in sys.stdlib_module_names:
                return self._import_foreign(name, fromlist)
            if top == "triton":
                ensure_triton()
            return real_import(name, globals, locals, fromlist, level)

        namespace = dict(builtins.__dict__)
        namespace["__import__"] = _import
        return namespace

    def _absolute(self, name: str, globals: dict[str, Any] | None, level: int) -> str:
        dotted = (globals or {}).get("__sglang_name__")
        if not dotted:
            raise ImportError(f"relative import of {name!r} outside an executed SGLang module")
        is_package = "__path__" in (globals or {})
        parts = dotted.split(".") if is_package else dotted.split(".")[:-1]
        if level - 1 > len(parts) - 1:
            raise ImportError(f"relative import of {name!r} beyond the sglang package")
        base = parts[: len(parts) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def _import_sglang(self, name: str, fromlist: Any) -> types.ModuleType:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            self.module(".".join(parts[:i]))
        module = self.modules[name]
        for item in fromlist or ():
            child = f"{name}.{item}"
            if item != "*" and child in self.executed:
                self.module(child)
        return module if fromlist else self.modules["sglang"]

    def _import_foreign(self, name: str, fromlist: Any) -> types.ModuleType:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            self.module(".".join(parts[:i]))
        return self.modules[name] if fromlist else self.modules[parts[0]]

    # -- what ran -------------------------------------------------------------

    def sglang_name(self, filename: str) -> str | None:
        """The dotted SGLang module a code filename belongs to (None: not an executed module)."""
        return self.filenames.get(filename)

    def compiled_kernels(self) -> list[str]:
        """``@triton.jit`` kernels of the executed modules that are NOT interpreted (should be none)."""
        from triton.runtime.jit import JITFunction

        return sorted(
            f"{dotted}.{name}"
            for dotted, module in self.modules.items()
            if not isinstance(module, InertModule)
            for name, value in list(module.__dict__.items())
            if isinstance(value, JITFunction)
        )

    def inert_uses(self, answered: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """Names of unexecuted modules the executed code took (less those a stand-in ``answered``)."""
        return sorted(self.used - set(answered))


class _ScopedAnswers(dict):  # type: ignore[type-arg]
    """The answers one inert module gives: ``answers(module, name)``, looked up on demand."""

    def __init__(self, answers: Answers, module: str) -> None:
        super().__init__()
        self._answers = answers
        self._module = module

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._answers(self._module, name)[0]

    def __getitem__(self, name: str) -> Any:
        found, value = self._answers(self._module, name)
        if not found:
            raise KeyError(name)
        return value


class _SourceLoader:
    """``__loader__`` of an executed module: ``get_source`` for ``linecache``/``inspect``."""

    def __init__(self, tree: SourceTree, member: str) -> None:
        self._tree, self._member = tree, member

    def get_source(self, name: str) -> str | None:
        return self._tree.read(self._member)


def _line_in(exc: BaseException, filename: str) -> str:
    tb = exc.__traceback__
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" line {line}" if line else ""
