"""Inert stand-ins: what a name of SGLang that was not executed is, and where its use stops the run.

The policy is "refuse, never guess":

* harmless, and allowed: importing an inert name, reading attributes of it
  (which gives another inert name: ``ForwardMode.DECODE``), annotating
  with it, passing it around, hashing it, ``repr``/``str`` of it (logs and
  messages), and subclassing it (the class gets a placeholder base,
  ``inert_base``; only a use of what the base would provide stops);
* ``isinstance(x, N)`` / ``issubclass(C, N)`` against an inert class N
  answer where SGLang's answer is known (``known_isinstance``): when the
  object's whole class hierarchy is known (an object of a class SGLang
  executed here, of a stand-in that declares the classes it stands for, or
  of a non-SGLang type), the answer is whether N's name is among them;
* every other use, one whose answer is unknown (calling it, truth-testing
  it, comparing, arithmetic, iterating, indexing, ``len``, ``with``,
  constructing a subclass, reading a name of the placeholder base), raises
  ``StandInMissing`` naming the piece, one line: the command exits 2.
"""

from __future__ import annotations

import types
from typing import Any

from ..stubs import StandInMissing

# An answer saying the name does not exist in the real module: ``getattr`` raises AttributeError (so ``from m import
# name`` raises ImportError, as with the real module).
ABSENT = type("Absent", (), {"__repr__": lambda self: "<kvrow-fuzz: absent in the real module>"})()
# Set on a stand-in class: the names of every SGLang class its real counterpart is an instance of.
STANDS_FOR = "__sglang_stands_for__"
# Set on the placeholder base a class defined over an inert name gets.
PLACEHOLDER = "__kvrow_inert_base__"


def missing(what: str, use: str) -> StandInMissing:
    return StandInMissing(
        f"SGLang's write path {use} {what}, which kvrow-fuzz has no stand-in for "
        "(fuzz/engines/sglang/real/runtime: refuse, never guess)"
    )


def _leaf(qualname: str) -> str:
    return qualname.rpartition(".")[2]


class Inert:
    """A name of an SGLang module that was not executed (``sglang.srt.utils.X``, ``sgl_kernel.Y``)."""

    __slots__ = ("_qualname",)

    def __init__(self, qualname: str) -> None:
        object.__setattr__(self, "_qualname", qualname)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Inert(f"{self._qualname}.{name}")

    def __repr__(self) -> str:
        return f"<kvrow-fuzz: no stand-in for {self._qualname}>"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """``f"{x}"`` (a log line) is its repr; a format spec (``:d``, ``:.2f``) reads a value: refused."""
        if spec:
            raise missing(self._qualname, "formats")
        return repr(self)

    def __hash__(self) -> int:
        return hash(("kvrow-inert", self._qualname))

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        raise missing(self._qualname, "compares")

    def __ne__(self, other: object) -> bool:
        if other is self:
            return False
        raise missing(self._qualname, "compares")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (inert_base(self._qualname),)

    def __instancecheck__(self, obj: Any) -> bool:
        return known_isinstance(type(obj), self._qualname)

    def __subclasscheck__(self, cls: Any) -> bool:
        if not isinstance(cls, type):
            raise missing(self._qualname, "subclass-checks a non-class against")
        return known_isinstance(cls, self._qualname)


def _refuse(use: str) -> Any:
    def op(self: Inert, *args: Any, **kwargs: Any) -> Any:
        raise missing(self._qualname, use)

    return op


for _ops, _use in (
    ("__call__", "calls"),
    ("__bool__", "truth-tests"),
    ("__int__ __float__ __index__ __complex__ __round__ __trunc__ __floor__ __ceil__", "reads a number from"),
    ("__len__ __iter__ __contains__ __getitem__ __setitem__ __delitem__ __reversed__", "reads items of"),
    ("__setattr__ __delattr__", "sets an attribute of"),
    ("__lt__ __le__ __gt__ __ge__", "compares"),
    (
        "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __floordiv__ __rfloordiv__ __truediv__ __rtruediv__ "
        "__mod__ __rmod__ __neg__ __pos__ __abs__ __pow__ __rpow__ __and__ __rand__ __or__ __ror__ __xor__ "
        "__rxor__ __lshift__ __rshift__ __invert__ __matmul__",
        "does arithmetic with",
    ),
    ("__enter__ __exit__ __await__ __aiter__", "enters"),
):
    for _op in _ops.split():
        setattr(Inert, _op, _refuse(_use))


class _InertMeta(type):
    """The metaclass of a placeholder base: a name the real base would provide stops the run."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise missing(f"{cls.__dict__.get(PLACEHOLDER, cls.__qualname__)}.{name}", "reads")


_BASES: dict[str, type] = {}


def inert_base(qualname: str) -> type:
    """The placeholder base of classes defined over the inert name ``qualname`` (one per name)."""
    if qualname not in _BASES:

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            raise missing(f"{qualname} (a base class of {type(self).__qualname__})", "constructs")

        def __getattr__(self: Any, name: str) -> Any:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            raise missing(f"{qualname}.{name} (inherited by {type(self).__qualname__})", "reads")

        _BASES[qualname] = _InertMeta(
            _leaf(qualname), (), {PLACEHOLDER: qualname, "__init__": __init__, "__getattr__": __getattr__}
        )
    return _BASES[qualname]


def _is_sglang_class(cls: type) -> bool:
    module = getattr(cls, "__module__", "") or ""
    return module == "sglang" or module.startswith("sglang.") or PRIVATE_PREFIX in module


# The ``__name__`` prefix of every executed SGLang module (``modules.Loader``): never an ``sglang`` name.
PRIVATE_PREFIX = "_kvrow_sglang_"


def known_isinstance(cls: type, qualname: str) -> bool:
    """Whether ``cls`` is (a subclass of) the SGLang class named ``qualname``, where that is known.

    Compared by class name: a name imported through a re-exporting package
    (``sglang.srt.mem_cache.allocator.X`` for ``allocator/swa.py``'s X)
    is the same class.  Unknown (a placeholder base other than this name in
    the hierarchy): ``StandInMissing``.
    """
    name = _leaf(qualname)
    unknown: list[str] = []
    for klass in cls.__mro__:
        stands_for = klass.__dict__.get(STANDS_FOR)
        if stands_for is not None:
            return name in stands_for
        base = klass.__dict__.get(PLACEHOLDER)
        if base is not None:
            if _leaf(base) == name:
                return True
            unknown.append(base)
            continue
        if klass.__name__ == name and _is_sglang_class(klass):
            return True
    if unknown:
        raise missing(f"{qualname} (is {cls.__qualname__}, over {unknown[0]}, one?)", "subclass-checks against")
    return False


class InertModule(types.ModuleType):
    """An SGLang module that was not executed: ``answers`` by name (``ABSENT``: no such name), executed submodules,
    else ``Inert``."""

    def __init__(self, name: str, answers: dict[str, Any], used: set[str]) -> None:
        super().__init__(name, "kvrow-fuzz: an SGLang module that was not executed (inert)")
        self.__dict__["_answers"] = answers
        self.__dict__["_used"] = used

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        qualname = f"{self.__name__}.{name}"
        self._used.add(qualname)
        if name in self._answers:
            value = self._answers[name]
            if value is ABSENT:
                raise AttributeError(f"{qualname} does not exist in the real module")
            return value
        return Inert(qualname)
