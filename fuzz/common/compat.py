"""What kvrow-fuzz takes from Python 3.11 that 3.10 lacks, in one place (SGLang supports 3.10 to 3.12).

* ``StrEnum``: 3.11's ``enum.StrEnum``; on 3.10 ``StrEnumBackport``, which
  behaves the same: members are ``str``, ``str()``, f-strings and
  ``format()`` give the value, ``==`` and ``hash`` are the value's, JSON
  writes the value, and ``auto()`` is the lower-cased member name.
* ``BaseExceptionGroup``: the builtin; on 3.10 the ``exceptiongroup``
  backport, the one Hypothesis and pytest raise there.
* ``code_qualname(code)``: ``code.co_qualname``; on 3.10 (no such attribute)
  the ``__qualname__`` of the function that runs ``code``, else its ``co_name``.

Only the standard library is imported here: every package of the tool may
import this module, and it imports none of them.
"""

from __future__ import annotations

import enum
import gc
import sys
import types
from typing import Any


class StrEnumBackport(str, enum.Enum):
    """``enum.StrEnum`` of Python 3.11 for 3.10 (``StrEnum`` is this class there)."""

    def __new__(cls, value: str) -> StrEnumBackport:
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a string")
        member = str.__new__(cls, value)
        member._value_ = value
        return member

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, format_spec: str) -> str:
        return str.__format__(self, format_spec)

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
        return name.lower()


if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup as BaseExceptionGroup
    from enum import StrEnum as StrEnum  # novermin (3.11+ only, this branch)

    def code_qualname(code: types.CodeType) -> str:
        """The qualified name of the function ``code`` is the body of (``A.method``, ``f.<locals>.g``)."""
        return code.co_qualname

else:  # Python 3.10
    from exceptiongroup import BaseExceptionGroup as BaseExceptionGroup

    StrEnum = StrEnumBackport

    def code_qualname(code: types.CodeType) -> str:
        """The qualified name of the function ``code`` is the body of (``A.method``, ``f.<locals>.g``)."""
        return referrer_qualname(code)


# id(code) -> (code, its qualified name); the code is held, so its id is never reused for another.
_QUALNAMES: dict[int, tuple[types.CodeType, str]] = {}


def referrer_qualname(code: types.CodeType) -> str:
    """``__qualname__`` of a live function whose code is ``code``, else ``co_name`` (3.10's ``co_qualname``).

    Found once per code object among the objects that refer to it (``gc.get_referrers``), then remembered.
    """
    known = _QUALNAMES.get(id(code))
    if known is None:
        functions = [f for f in gc.get_referrers(code) if isinstance(f, types.FunctionType) and f.__code__ is code]
        known = _QUALNAMES[id(code)] = (code, functions[0].__qualname__ if functions else code.co_name)
    return known[1]
