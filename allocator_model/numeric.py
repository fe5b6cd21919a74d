"""Integer arithmetic that reads the same on Python ints and on int tensors.

Each sizing formula is written once and evaluated two ways: on the ints of
one configuration (the step-by-step model, a loaded real module's
comparison) and on int32 tensors with one element per configuration (the
closed form of ``closed_form``).  Python's operators already do both for
``+ - * // %`` and comparisons; the two things they cannot do alike are a
branch and a maximum, which these helpers provide.  A formula that needs
``if``/``max`` on values must use them, so its two evaluations cannot drift
apart (``tests/test_twins.py`` checks that they agree element for element).
"""

from __future__ import annotations

import math
from typing import TypeVar

import torch
from torch import Tensor

# An integer quantity: one configuration's int, or a tensor of one per configuration.
Int = TypeVar("Int", int, Tensor)


def where(cond: bool | Tensor, x: Int | int, y: Int | int) -> Int:
    """``x if cond else y``, per element when ``cond`` is a tensor.

    A tensor ``cond`` goes with tensor operands (a bool ``cond`` with either):
    the result is an int exactly when everything is.
    """
    # Each line is right for one of Int's two types (mypy checks the body once per type).
    if isinstance(cond, Tensor):
        return torch.where(cond, x, y)  # type: ignore[return-value]
    return x if cond else y  # type: ignore[return-value]


def maximum(a: Int, b: Int | int) -> Int:
    """``max(a, b)``, per element when either is a tensor (dtype of the tensor operands, as torch.maximum)."""
    if isinstance(a, Tensor):
        return torch.maximum(a, b) if isinstance(b, Tensor) else a.clamp(min=b)
    if isinstance(b, Tensor):
        return b.clamp(min=a)
    return max(a, b)


def or_one(x: Int) -> Int:
    """``x or 1``: SGLang's default of 1 for a count left at 0 (num_steps of an adaptive 0-step batch, topk)."""
    return where(x == 0, 1, x)


def full_like(like: Int, value: int) -> Int:
    """``value``, shaped like ``like``: an int for an int, a tensor of ``like``'s dtype for a tensor."""
    if isinstance(like, Tensor):
        return torch.full_like(like, value)
    return value


def ceil_div(x: Int, y: Int) -> Int:
    """The smallest integer n with n * y >= x (y > 0)."""
    return -(-x // y)


def lcm(x: Int, y: Int) -> Int:
    """The least common multiple of positive ints, or per element where either is a tensor."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        return torch.lcm(torch.as_tensor(x), torch.as_tensor(y))  # type: ignore[return-value]
    return math.lcm(x, y)


def ceil_to_page(x: Int, page: Int) -> Int:
    """x rounded up to a whole number of pages (SGLang's ``ceil_align``)."""
    return ceil_div(x, page) * page
