"""The traced values of ``tracing``: one int64 (or bool) per configuration, whose truth tests branch the ``Run``."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .tracing_run import INT64_SAFE, Run, Unsupported


def operand(x: Any) -> Tensor | int | None:
    """The tensor or int an operand stands for; None: not an integer (the operation is not ours)."""
    if isinstance(x, Traced):
        return x.t
    if isinstance(x, TracedBool):
        return x.t.to(torch.int64)
    if isinstance(x, int):
        return int(x)
    return None


def _bound(x: Any) -> int:
    """A bound on |x| for an operand ``operand`` took."""
    if isinstance(x, _TracedValue):
        return x.bound if isinstance(x, Traced) else 1
    return abs(int(x))


def _not_an_int(o: Any, what: str) -> Any:
    """A comparison with something that is not an integer: as a Python int would where that is certain.

    ``None`` and text are never equal to an int (``==`` False, ``!=`` True,
    an order a TypeError): ``NotImplemented`` gives exactly that.  Any other
    number (a float, a Fraction) could equal one: refused, never guessed.
    """
    if o is None or isinstance(o, str | bytes):
        return NotImplemented
    raise Unsupported(f"{what} of a traced value with a {type(o).__name__}")


def _unsupported(what: str) -> Callable[..., Any]:
    def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise Unsupported(f"{what} of a traced value")

    return refuse


class _TracedValue:
    """One value per configuration, bound to the execution (``Run``) whose branches its truth tests take."""

    __slots__ = ("t", "run", "bound")
    _NAME = "traced value"

    def __init__(self, t: Tensor, run: Run, bound: int | None = None) -> None:
        self.t = t
        self.run = run
        # A bound on every |value| (interval arithmetic, no reduction per operation): past INT64_SAFE an
        # operation could wrap where a Python int would not, so it is refused instead.
        if bound is None:
            bound = 1 if t.dtype == torch.bool else int(t.abs().max()) if t.numel() else 0
        self.bound = bound

    def __repr__(self) -> str:
        return f"<{self._NAME}>"

    # An error message may name a value (main's row-width assert does): it reads a placeholder.  What a
    # message says is never a sizing number; computing with the text would diverge, and the per-block
    # sample of plain calls (``traced_rows``) is what catches that.
    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    __hash__ = _unsupported("hash")  # type: ignore[assignment]
    __index__ = _unsupported("an index")
    __int__ = _unsupported("int()")

    def __getattr__(self, name: str) -> Any:
        raise Unsupported(f"attribute {name!r} of a {self._NAME}")


class Traced(_TracedValue):
    """An int per configuration: the arithmetic and comparisons of Python ints, on a tensor."""

    __slots__ = ()
    _NAME = "traced int"
    __hash__ = _TracedValue.__hash__  # defining __eq__ below would otherwise set it to None (a TypeError)

    def _new(self, t: Tensor, bound: int) -> Traced:
        if bound >= INT64_SAFE:
            raise Unsupported("an integer that could pass int64 (Python's would not wrap)")
        return Traced(t, self.run, bound)

    def _binary(self, other: Any, op: Callable[[Any, Any], Tensor], reflected: bool = False) -> Any:
        o = operand(other)
        if o is None:
            return NotImplemented
        a, b = self.bound, _bound(other)
        bound = a * b if op is operator.mul else a + b
        return self._new(op(o, self.t) if reflected else op(self.t, o), bound)

    def _divisor(self, d: Tensor | int) -> Tensor | int:
        """A zero divisor is a branch: the configurations with one raise, as Python does."""
        if isinstance(d, int):
            if d == 0:
                raise ZeroDivisionError("integer division or modulo by zero")
            return d
        if not self.run.decide(d != 0):
            raise ZeroDivisionError("integer division or modulo by zero")
        return torch.where(d == 0, torch.ones_like(d), d)  # those are off this path

    def _floordiv(self, a: Any, b: Any) -> Any:
        x, y = operand(a), operand(b)
        if x is None or y is None:
            return NotImplemented
        # |x // d| <= |x| + 1 for |d| >= 1 (floor may round away from zero)
        return self._new(torch.div(torch.as_tensor(x), self._divisor(y), rounding_mode="floor"), _bound(a) + 1)

    def _mod(self, a: Any, b: Any) -> Any:
        x, y = operand(a), operand(b)
        if x is None or y is None:
            return NotImplemented
        return self._new(torch.remainder(torch.as_tensor(x), self._divisor(y)), _bound(b))  # |x mod d| < |d|

    def __add__(self, o: Any) -> Any:
        return self._binary(o, operator.add)

    def __radd__(self, o: Any) -> Any:
        return self._binary(o, operator.add, reflected=True)

    def __sub__(self, o: Any) -> Any:
        return self._binary(o, operator.sub)

    def __rsub__(self, o: Any) -> Any:
        return self._binary(o, operator.sub, reflected=True)

    def __mul__(self, o: Any) -> Any:
        return self._binary(o, operator.mul)

    def __rmul__(self, o: Any) -> Any:
        return self._binary(o, operator.mul, reflected=True)

    def __floordiv__(self, o: Any) -> Any:
        return self._floordiv(self, o)

    def __rfloordiv__(self, o: Any) -> Any:
        return self._floordiv(o, self)

    def __mod__(self, o: Any) -> Any:
        return self._mod(self, o)

    def __rmod__(self, o: Any) -> Any:
        return self._mod(o, self)

    def __pow__(self, o: Any) -> Any:
        if isinstance(o, int) and not isinstance(o, bool) and 0 <= o <= 64:
            return self._new(self.t**o, self.bound**o)
        raise Unsupported("a power of a traced value")

    def __neg__(self) -> Traced:
        return self._new(-self.t, self.bound)

    def __pos__(self) -> Traced:
        return self

    def __abs__(self) -> Traced:
        return self._new(self.t.abs(), self.bound)

    def _compare(self, o: Any, op: Callable[[Tensor, Any], Tensor]) -> Any:
        x = operand(o)
        if x is None:
            return _not_an_int(o, "a comparison")
        return TracedBool(op(self.t, x), self.run)

    def __eq__(self, o: object) -> Any:  # type: ignore[override]
        return self._compare(o, torch.eq)

    def __ne__(self, o: object) -> Any:  # type: ignore[override]
        return self._compare(o, torch.ne)

    def __lt__(self, o: Any) -> Any:
        return self._compare(o, torch.lt)

    def __le__(self, o: Any) -> Any:
        return self._compare(o, torch.le)

    def __gt__(self, o: Any) -> Any:
        return self._compare(o, torch.gt)

    def __ge__(self, o: Any) -> Any:
        return self._compare(o, torch.ge)

    def __bool__(self) -> bool:
        return self.run.decide(self.t != 0)

    __float__ = _unsupported("float()")
    __complex__ = _unsupported("complex()")
    __round__ = _unsupported("round()")
    __trunc__ = _unsupported("trunc()")
    __floor__ = _unsupported("floor()")
    __ceil__ = _unsupported("ceil()")
    __truediv__ = _unsupported("true division")
    __rtruediv__ = _unsupported("true division")
    __divmod__ = _unsupported("divmod()")
    __rdivmod__ = _unsupported("divmod()")
    __rpow__ = _unsupported("a power with a traced exponent")
    __lshift__ = _unsupported("a shift")
    __rlshift__ = _unsupported("a shift")
    __rshift__ = _unsupported("a shift")
    __rrshift__ = _unsupported("a shift")
    __and__ = _unsupported("a bitwise and")
    __rand__ = _unsupported("a bitwise and")
    __or__ = _unsupported("a bitwise or")
    __ror__ = _unsupported("a bitwise or")
    __xor__ = _unsupported("a bitwise xor")
    __rxor__ = _unsupported("a bitwise xor")
    __invert__ = _unsupported("a bitwise not")


class TracedBool(_TracedValue):
    """A bool per configuration (a comparison, or a varying flag); its truth test is a branch."""

    __slots__ = ()
    _NAME = "traced bool"
    __hash__ = _TracedValue.__hash__

    def __bool__(self) -> bool:
        return self.run.decide(self.t)

    def _logic(self, o: Any, op: Callable[[Tensor, Tensor], Tensor]) -> Any:
        if isinstance(o, TracedBool):
            return TracedBool(op(self.t, o.t), self.run)
        if isinstance(o, bool):
            return TracedBool(op(self.t, torch.full_like(self.t, o)), self.run)
        raise Unsupported("a bitwise operation of a traced bool with a non-bool")

    def __and__(self, o: Any) -> Any:
        return self._logic(o, torch.logical_and)

    __rand__ = __and__

    def __or__(self, o: Any) -> Any:
        return self._logic(o, torch.logical_or)

    __ror__ = __or__

    def __xor__(self, o: Any) -> Any:
        return self._logic(o, torch.logical_xor)

    __rxor__ = __xor__

    def _equal(self, o: Any, op: Callable[[Tensor, Tensor], Tensor]) -> Any:
        """``==``/``!=`` as a bool compares: with a bool logically, with an int as 0 or 1."""
        if isinstance(o, TracedBool | bool):
            return self._logic(o, op)
        x = operand(o)
        if x is None:
            return _not_an_int(o, "a comparison")
        return TracedBool(op(self.t.to(torch.int64), torch.as_tensor(x)), self.run)

    def __eq__(self, o: object) -> Any:  # type: ignore[override]
        return self._equal(o, torch.eq)

    def __ne__(self, o: object) -> Any:  # type: ignore[override]
        return self._equal(o, torch.ne)

    __invert__ = _unsupported("~ of a bool")
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unsupported("arithmetic on a bool")
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _unsupported("arithmetic on a bool")
    __lt__ = __le__ = __gt__ = __ge__ = _unsupported("an order of bools")


Prepared = tuple[Tensor, int] | int | bool  # a varying column (int64 or bool) with its bound, or a plain value
