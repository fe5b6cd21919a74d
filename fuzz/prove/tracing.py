"""Run a plain Python integer function once per path, for a whole grid of inputs at once.

The real sizing functions are small integer programs: a few reads of the
published configuration, ``+ - * // %``, ``max``, and ``if``s.  Called once
per launch configuration they cost minutes on the full space.  Here each
varying input is a ``Traced`` value holding one int64 per configuration;
arithmetic and comparisons act on the whole tensor at once, and every truth
test of a traced value (an ``if``, ``and``/``or``, ``max``, an ``assert``) is
a branch point: ``explore`` runs the function again for each side that some
configuration takes (depth first, replaying the decisions before it), with
the set of configurations on that path narrowed at each branch.  A branch
only one side of which any configuration takes is not a decision at all.

The invariant: for every configuration, exactly one path's mask holds it,
and that path's value at it is what a plain call with that configuration's
ints would return, because each path is a plain execution in which every
branch went the way that configuration's ints send it, and every operation
computed the same integer (floor division and modulo as Python's, a zero
divisor is its own branch that raises ``ZeroDivisionError``).

Anything a plain int could do that this cannot follow (``int(x)``,
``range(x)``, hashing, true division, an unknown attribute) raises
``Unsupported`` (``isinstance(x, int)`` is the one it cannot see, and text:
``str(x)`` and formats read a placeholder, for error messages), a
``BaseException`` so that the traced code's own ``except Exception`` cannot
swallow it; the caller then calls those configurations one by one.  The
caller also re-checks a sample of configurations one by one (``traced_rows``),
which is what catches a divergence this module cannot see.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_SAFE = 2**62  # a traced result whose bound reaches this is refused (int64 would wrap; Python would not)
MAX_PATHS = 512  # more than any sizing function has; past it the caller calls one by one


class Unsupported(BaseException):
    """The traced code used a traced value in a way tracing cannot follow."""


class TooManyPaths(Exception):
    """The function has more paths than ``MAX_PATHS`` over this grid."""


class Run:
    """One execution: the decisions it replays and takes, and the configurations still on its path."""

    def __init__(self, domain: Tensor, prefix: list[bool]) -> None:
        self.mask = domain
        self.on_path = int(domain.sum())  # how many configurations the mask holds
        self.prefix = prefix
        self.taken: list[bool] = []

    def decide(self, cond: Tensor) -> bool:
        """Which way this execution goes at a truth test of ``cond`` (one bool per configuration)."""
        yes = self.mask & cond
        n_yes = int(yes.sum())
        if n_yes == 0:  # no configuration on the path goes this way: not a decision
            return False
        if n_yes == self.on_path:
            self.mask, self.on_path = yes, n_yes
            return True
        i = len(self.taken)
        choice = self.prefix[i] if i < len(self.prefix) else True
        self.taken.append(choice)
        if choice:
            self.mask, self.on_path = yes, n_yes
        else:
            self.mask, self.on_path = self.mask & ~cond, self.on_path - n_yes
        return choice


@dataclass
class Path:
    """The configurations that follow one path, and what it returned (or raised)."""

    mask: Tensor
    value: Any = None
    error: BaseException | None = None


def explore(fn: Callable[[Run], Any], domain: Tensor, max_paths: int = MAX_PATHS) -> list[Path]:
    """Every path of ``fn`` over the configurations of ``domain`` (a bool mask), depth first.

    ``fn`` builds its traced inputs with the run it is given (``Traced(t, run)``)
    and calls the code under test.  The masks of the paths partition ``domain``.
    """
    paths: list[Path] = []
    prefix: list[bool] = []
    while True:
        run = Run(domain, prefix)
        try:
            value = fn(run)
            paths.append(Path(run.mask, value))
        except (Exception, Unsupported) as e:  # noqa: BLE001 - what the code raised is the path's outcome
            paths.append(Path(run.mask, error=e))
        if len(paths) > max_paths:
            raise TooManyPaths(f"more than {max_paths} paths")
        taken = run.taken
        while taken and not taken[-1]:
            taken.pop()
        if not taken:
            return paths
        taken[-1] = False
        prefix = taken


def _operand(x: Any) -> Tensor | int | None:
    """The tensor or int an operand stands for; None: not an integer (the operation is not ours)."""
    if isinstance(x, Traced):
        return x.t
    if isinstance(x, TracedBool):
        return x.t.to(torch.int64)
    if isinstance(x, int):
        return int(x)
    return None


def _bound(x: Any) -> int:
    """A bound on |x| for an operand ``_operand`` took."""
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
        o = _operand(other)
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
        x, y = _operand(a), _operand(b)
        if x is None or y is None:
            return NotImplemented
        # |x // d| <= |x| + 1 for |d| >= 1 (floor may round away from zero)
        return self._new(torch.div(torch.as_tensor(x), self._divisor(y), rounding_mode="floor"), _bound(a) + 1)

    def _mod(self, a: Any, b: Any) -> Any:
        x, y = _operand(a), _operand(b)
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
        x = _operand(o)
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
        x = _operand(o)
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


def prepared(column: Tensor) -> Prepared:
    """An input column as traced code should see it: a plain value when every row agrees, else int64 (or bool)."""
    if column.numel() and bool((column == column[0]).all()):
        v = column[0].item()
        return bool(v) if column.dtype == torch.bool else int(v)
    if column.dtype == torch.bool:
        return column, 1
    column = column.to(torch.int64)
    return column, int(column.abs().max()) if column.numel() else 0


def traced_value(value: Prepared, run: Run) -> Any:
    """A ``prepared`` column bound to one execution."""
    if isinstance(value, tuple):
        t, bound = value
        return TracedBool(t, run, 1) if t.dtype == torch.bool else Traced(t, run, bound)
    return value


def leaf(column: Tensor, run: Run) -> Any:
    """What traced code reads for one input column (``prepared``, bound to ``run``)."""
    return traced_value(prepared(column), run)


@dataclass
class Outcome:
    """A traced function over a grid: ``values`` where ``ok``; elsewhere the caller calls one by one."""

    values: Tensor  # int64
    ok: Tensor  # bool: a path that returned an accepted value
    paths: int


def combine(paths: list[Path], n: int, accept: Callable[[Any], bool]) -> Outcome:
    """One value per configuration from the paths that returned a value ``accept`` takes.

    Checks the invariant the module docstring states: the masks are disjoint.
    """
    values = torch.zeros(n, dtype=torch.int64)
    ok = torch.zeros(n, dtype=torch.bool)
    seen = torch.zeros(n, dtype=torch.bool)
    for p in paths:
        if bool((seen & p.mask).any()):
            raise AssertionError("two traced paths hold the same configuration")
        seen |= p.mask
        if p.error is not None or not accept(p.value):
            continue
        v = torch.as_tensor(_operand(p.value), dtype=torch.int64)
        fits = (v >= INT32_MIN) & (v <= INT32_MAX)  # the sweep's columns are int32: past them, one by one
        values = torch.where(p.mask, v, values)
        ok |= p.mask & fits
    return Outcome(values, ok, len(paths))


def integer_result(value: Any) -> bool:
    """What a sizing function may return: an int (not a bool, as ``loader._integer``), traced or not."""
    return isinstance(value, Traced) or (isinstance(value, int) and not isinstance(value, bool))


def bool_result(value: Any) -> bool:
    """What a guard check returns: True or False."""
    return isinstance(value, bool)
