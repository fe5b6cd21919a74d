"""What the record generator's parts share: the error of a wheel it cannot read a record from, a module's member."""

from __future__ import annotations


class RecordError(Exception):
    """A wheel the generator cannot read a record from (one line)."""


def member_of(module: str) -> str:
    """A dotted module's file in the wheel."""
    return module.replace(".", "/") + ".py"
