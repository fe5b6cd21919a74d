"""One traced execution (``Run``): the decisions it replays and takes; what tracing refuses (``tracing``)."""

from __future__ import annotations

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
