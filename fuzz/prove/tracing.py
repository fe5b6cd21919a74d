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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from .traced_values import Prepared, Traced, TracedBool, operand
from .tracing_run import INT32_MAX, INT32_MIN, MAX_PATHS, Run, TooManyPaths, Unsupported

__all__ = ["MAX_PATHS", "Run", "TooManyPaths", "Traced", "TracedBool", "Unsupported"]


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
        v = torch.as_tensor(operand(p.value), dtype=torch.int64)
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
