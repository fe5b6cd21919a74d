"""What the record generator's parts share: the error of a wheel it cannot read a record from, a module's member."""

from __future__ import annotations


class RecordError(Exception):
    """A wheel the generator cannot read a record from (one line)."""


def member_of(module: str, package: bool = False) -> str:
    """A dotted module's file in a wheel or tree (a package's: its ``__init__.py``)."""
    base = module.replace(".", "/")
    return base + ("/__init__.py" if package else ".py")
