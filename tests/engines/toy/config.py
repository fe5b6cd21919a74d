"""The toy engine's configuration: what its allocator and table are built with, written to case files as data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

# Each field's range: small enough that a near-limit case is a few draws away, wide enough for every page rounding.
LIMITS: dict[str, tuple[int, int]] = {"rows": (2, 4), "context_len": (1, 64), "page_size": (1, 16), "lookahead": (1, 4)}


def check_value(name: str, value: Any) -> None:
    """``value`` is an integer in ``name``'s range (a page size a power of two); ValueError (one line) otherwise."""
    if name not in LIMITS:
        raise ValueError(f"the toy has no field {name} (its fields: {', '.join(LIMITS)})")
    low, high = LIMITS[name]
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r:.40}")
    if name == "page_size" and value & (value - 1):
        raise ValueError(f"page_size must be a power of two, got {value}")


@dataclass(frozen=True)
class ToyConfig:
    """One deployment of the toy allocator: ``rows`` running requests, each with a row of the table."""

    rows: int  # requests the table holds a row for (two at least: a write past a row has a neighbour to land in)
    context_len: int  # the longest a request may grow
    page_size: int  # the allocator hands out slots in whole pages of this size
    lookahead: int  # tokens a decode step reserves past the request's length (1: no speculation)

    def __post_init__(self) -> None:
        for f in fields(self):
            check_value(f.name, getattr(self, f.name))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def short(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.to_dict().items())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToyConfig:
        """The configuration a case file records, checked: exactly the fields, each in range (a case file is data)."""
        if not isinstance(data, Mapping) or set(data) != set(LIMITS):
            raise ValueError(f"a toy configuration has exactly the fields {', '.join(LIMITS)}")
        return cls(**{name: data[name] for name in LIMITS})


def check_pins(pins: Mapping[str, Any]) -> None:
    """``--pin NAME=VALUE``: each a field of the configuration, with a value it can have."""
    for name, value in pins.items():
        check_value(name, value)
