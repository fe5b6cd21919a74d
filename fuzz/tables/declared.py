"""A checked table: one per-request table of an engine, sized from one length and written or read with another.

The bug this tool hunts has one shape whatever the table: the engine sizes a
table per request (a row of ``req_to_token``, a page table, a scratch slot)
from one length, then writes or reads it with a longer one near the context
limit, and the excess lands in the next request's part.  A ``Table`` says
where that happens: how wide the table is per configuration (the engine's own
code, with the model's twin beside it), which engine code writes and reads it,
and which properties are judged on it.  An engine declares its tables when it
is loaded (``declare_table``); the core names none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fuzz.common.compat import StrEnum
from fuzz.findings.kinds import Property, _engines_declared

TABLE_NAME = r"[a-z][a-z0-9_]{0,63}"  # a baseline entry's ``table`` (baseline.schema.json) is one of these


@dataclass(frozen=True)
class CodeRef:
    """Engine code, by repository path and qualified name, never by line number (a release record resolves it)."""

    path: str  # "python/sglang/srt/mem_cache/allocation_sizing.py", or a model file
    qualname: str  # "get_req_to_token_extra_context_len", "KVCacheConfigurator._build_req_to_token_pool"


class Layout(StrEnum):
    """How a table's owners share its storage, so a write past one owner's part is named by whose part it hit."""

    ROWS = "rows"  # [owners, W]: offset row * W + col, so a column >= W lands in row + 1
    RANGES = "ranges"  # 1-D: each owner holds [base, base + len)
    BY_LOCATION = "by-location"  # 1-D, indexed by the allocator's location (a slot id)
    SLOT_SCRATCH = "slot-scratch"  # [slots, steps, W], then a commit step into another table


@dataclass(frozen=True)
class Width:
    """The width of each owner's part, per configuration: executed where the engine has the code, modeled beside.

    ``of(target, config)`` asks the target (its own code for a real one); ``model(config, semantics)`` is the
    model's twin, which a test holds equal to ``of`` on the model's targets.  ``code`` is where the engine
    computes it: a finding's primary location and the code a new cause's identity is taken from.
    """

    of: Callable[[Any, Any], int]
    model: Callable[[Any, Any], int]
    code: tuple[CodeRef, ...] = ()


@dataclass(frozen=True)
class Table:
    """One checked table (module docstring).  ``properties``: judged on it, in the order of blame.
    ``same_write``: a property whose break is, for this table, always a break of another one too (the
    neighbour a write past its part lands in): named once, as the other.  ``rules``: a core property's rule in
    this table's own terms (``rule_text``)."""

    name: str
    engine: str
    layout: Layout
    width: Width
    writers: tuple[CodeRef, ...]
    readers: tuple[CodeRef, ...]
    properties: tuple[Property, ...]
    same_write: Mapping[Property, Property] = field(default_factory=dict)
    rules: Mapping[Property, str] = field(default_factory=dict)


_TABLES: dict[str, Table] = {}


def declare_table(table: Table) -> Table:
    """Declare ``table`` (its engine does, once, when it is loaded); another table under a taken name is refused."""
    import re

    if not re.fullmatch(TABLE_NAME, table.name):
        raise ValueError(f"table name {table.name!r} is not {TABLE_NAME}")
    if _TABLES.get(table.name, table) != table:
        raise ValueError(f"table {table.name!r} is already declared (by engine {_TABLES[table.name].engine})")
    _TABLES[table.name] = table
    return table


def tables() -> list[Table]:
    """Every table a loadable engine declares, in the order declared."""
    _engines_declared()
    return list(_TABLES.values())


def table(name: str) -> Table:
    """The declared table ``name``; ValueError for a name no loadable engine declares."""
    found = _TABLES.get(name) or next((t for t in tables() if t.name == name), None)
    if found is None:
        raise ValueError(f"{name!r} is not a table any engine declares")
    return found


def rule_text(prop: Property) -> str:
    """``prop``'s rule as SARIF states it: the one wording the declared tables give it, or the property's own
    where none words it or two word it differently (no table's terms are passed off as another's)."""
    wordings = {t.rules[prop] for t in tables() if prop in t.rules}
    return wordings.pop() if len(wordings) == 1 else prop.rule
