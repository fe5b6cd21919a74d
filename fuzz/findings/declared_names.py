"""Names from closed but open-ended sets: the core and each engine declare theirs once, and a lookup imports every
loadable engine first (and whatever else registered a source of declarations), so a name's validity never depends on
which module happened to be imported before."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

_SOURCES: list[Callable[[], None]] = []  # what else declares names when they are asked for (``declared_also``)


def declared_also(source: Callable[[], None]) -> None:
    """``source`` declares names too, called whenever every declared name is wanted (the tables a child process is
    told of, ``fuzz.tables.declared``): a module above this one registers it, so this one imports nothing back."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def _engines_declared() -> None:
    """Import every loadable engine: each declares its names when its package is imported.  A malformed engine
    declaration (``TargetError``) is raised as it is: the names it would declare are unknown, and saying a case's
    name is unknown would blame the case for the declaration."""
    from fuzz.engines import engines

    engines()
    for source in list(_SOURCES):
        source()


class _Registry(type):
    """Iterating a declared-name class gives every name declared so far, the loadable engines' included, in the
    class's order (``_order``)."""

    def __iter__(cls) -> Iterator[Any]:
        _engines_declared()
        return iter(sorted(cls._declared.values(), key=cls._order))  # type: ignore[attr-defined]

    def __len__(cls) -> int:
        return sum(1 for _ in cls)


class DeclaredName(str, metaclass=_Registry):
    """A name from a closed but open-ended set: the core and each engine declare theirs once, and
    ``Cls(text)`` is the declared value (ValueError for a name nobody declared), so a hostile file never carries
    a name of its own into what is printed or generated from it."""

    _declared: ClassVar[dict[str, Any]]

    def __init_subclass__(cls) -> None:
        cls._declared = {}

    def __new__(cls, name: object) -> Any:
        if isinstance(name, cls):
            return name
        found = cls._declared.get(name) if isinstance(name, str) else None
        if found is None and isinstance(name, str):
            _engines_declared()
            found = cls._declared.get(name)
        if found is None:
            raise ValueError(f"{name!r} is not a valid {cls.__name__}")
        return found

    @classmethod
    def _add(cls, value: str) -> Any:
        if value in cls._declared:
            raise ValueError(f"{cls.__name__} {value!r} is already declared")
        name = str.__new__(cls, value)
        cls._declared[value] = name
        return name

    @classmethod
    def _order(cls, name: Any) -> Any:
        return list(cls._declared).index(name)  # the order of declaration

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def name(self) -> str:
        """``WRITE_WITHIN_ROW`` for ``write-within-row`` (a SARIF rule's name is made from it)."""
        return self.value.upper().replace("-", "_")

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.value}>"

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return type(self), (self.value,)
