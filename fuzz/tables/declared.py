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

import contextlib
import importlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fuzz.common.compat import StrEnum
from fuzz.common.errors import TargetError
from fuzz.findings.declared_names import _engines_declared, declared_also
from fuzz.findings.kinds import Property, declare_case_type, declare_table_name, undeclare_table_name
from fuzz.findings.report import TABLE_NAME  # a baseline entry's ``table``, a report's ``"tables"`` key

ENV = "KVROW_FUZZ_TABLES"  # ``module:attr[,module:attr...]``: tables a child process declares (a test's own)


# What the generic checks judge (``fuzz.tables.checks.GENERIC``, held equal to this): all a table checked on its own
# may be judged on.
GENERIC_PROPERTIES = (
    Property.WRITE_WITHIN_ROW,
    Property.NEIGHBOUR_ROWS_UNTOUCHED,
    Property.READ_WITHIN_ROW,
    Property.COPIED_FROM_OWN_ROW,
)


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
class Code:
    """A function a finding indicts, as one target holds it: where it is shown (``local``: a file on this machine,
    shown relative to the working directory; else a path of the engine's repository) and its file's text (None:
    not readable here)."""

    ref: CodeRef
    shown: str
    text: str | None
    local: bool = True


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
class Reach:
    """A closed form's answer for one configuration: each owner's width, and the furthest end its accesses reach
    (``prop``: write-within-row for a write, read-within-row for a published length its readers read);
    ``data``: a case of the table that reaches it (prove's witness, replayed like any case)."""

    width: int
    end: int
    data: Mapping[str, Any]
    prop: Property = Property.WRITE_WITHIN_ROW
    stopped_by: str | None = None  # the engine's own check that stops the furthest write (nothing written)


@dataclass(frozen=True)
class Swept:
    """One group of a closed form swept over a whole space at once (``Table.sweep``): the configurations that break
    ``prop`` in ``group``, how many, and the worst of them with its ``Reach``."""

    prop: Property
    group: str
    configurations: int
    worst: int  # columns past the part, at the worst configuration
    config: Any
    reach: Reach


@dataclass(frozen=True)
class Sweep:
    """A table's sweep of a space (``Table.sweep``): how many configurations it checked, over what, and each group
    it found broken."""

    configurations: int
    over: str  # what it swept, as prove prints it: "every residue of context_len mod the page"
    groups: tuple[Swept, ...]
    refused: str | None = None  # why the table has no closed form on this target (nothing was swept)


@dataclass(frozen=True)
class Explained:
    """An advisory's account of a finding on a table, in its engine's words: what the outcome means, the mismatch
    (Markdown lines), the fix, and what the regression test reads of the checkout it is pointed at."""

    outcome: str
    mismatch: tuple[str, ...]
    fix: str
    reads: str


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
    # The code a finding on it indicts where that is not its width (a table indexed by allocator location: the
    # allocator's ownership, not a width, bounds each owner's part): its root cause's identity and SARIF location.
    blame: tuple[CodeRef, ...] = ()
    # A property whose findings indict other code than the width (what a builder copies: the builder), each its own
    # root cause (``causes.table_causes``).
    blame_of: Mapping[Property, tuple[CodeRef, ...]] = field(default_factory=dict)
    # The generic flow (``fuzz.tables.case``): a table its engine does not hunt itself.  ``cases(target, pins)``: a
    # strategy of (configuration, case data); ``observe(target, config, data)``: the accesses its writers and
    # readers make (ValueError: data it does not take); ``group(config)``: the bug group a configuration falls
    # in (one of its engine's ``Names.groups``); ``closed_form(target, config)``: its ``Reach`` on ``target``
    # (prove sweeps it), None for a configuration it is not judged on (not counted as checked).
    cases: Callable[[Any, Mapping[str, Any]], Any] | None = None
    observe: Callable[[Any, Any, Mapping[str, Any]], list[Any]] | None = None
    group: Callable[[Any], str] | None = None
    closed_form: Callable[[Any, Any], Reach | None] | None = None
    proved: tuple[Property, ...] = ()  # what its closed form decides (each ``Reach.prop``); the rest sampled only
    # ``sweep(target, prover)``: the closed form over the prover's whole space at once (its engine's tensors), each
    # group it breaks (``Sweep``), where the space is too large to ask ``closed_form`` configuration by configuration.
    sweep: Callable[[Any, Any], Sweep] | None = None
    # ``unjudged(target)``: why this table cannot be judged on ``target`` (its code is not there to run), None where
    # it can: such a table is not hunted on it and every verdict names it NOT judged, with that reason.
    unjudged: Callable[[Any], str | None] | None = None
    # ``code_of(target, refs)``: the functions ``refs`` (its width's, its ``blame``'s or a property's ``blame_of``) as
    # ``target`` holds them (a model's twin, a release's wheel, a checkout); None: read from this machine's files.
    code_of: Callable[[Any, tuple[CodeRef, ...]], tuple[Code, ...]] | None = None
    # ``finish(target, finding)``: a group's finding as its hunt reports it (its engine's last step: a representative
    # case searched beside the minimal one); None: as found.
    finish: Callable[[Any, Any], Any] | None = None
    # ``reached(config, data)``: how the engine gets a request into the case's state, where the case says (a decode
    # scenario's), for the finding's ``reached_by``.
    reached: Callable[[Any, Mapping[str, Any]], str | None] | None = None
    # ``cover(target, pins)``: a covering set of (configuration, case data), judged before the search draws any.
    cover: Callable[[Any, Mapping[str, Any]], Sequence[tuple[Any, Any]]] | None = None
    # ``observer(target)``: whose accesses its observer reports on ``target`` (the engine's own code, a twin), for
    # what a verdict says it judged.
    observer: Callable[[Any], str] | None = None
    # The share of each round's examples its search draws (its covering set and closed form doing the rest).
    share: float = 1.0
    # ``pinned_out(pins)``: why no case of the table exists under the run's pins (a page its backend never runs),
    # None where some may: a table pinned out is not hunted, and the verdict says why.
    pinned_out: Callable[[Mapping[str, Any]], str | None] | None = None
    # ``explain(target, finding)``: the advisory's account of a finding on it (``Explained``); None: its engine's
    # default account of its tables.
    explain: Callable[[Any, Any], Explained] | None = None

    def __repr__(self) -> str:
        """The table by name: its fields bind an engine's functions (partials over its declaration), whose repr
        runs to tens of kB, and a test drawing a case repeats its arguments' repr in every report."""
        return f"Table({self.name!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """The same for Hypothesis' pretty printer, which prints a dataclass field by field unless told."""
        printer.text(repr(self))

    def refused_on(self, target: Any) -> str | None:
        """Why ``target`` cannot judge this table (``unjudged``), None where it can."""
        return self.unjudged(target) if self.unjudged is not None else None

    @property
    def indicted(self) -> tuple[CodeRef, ...]:
        """The code its findings indict: ``blame``, else its width functions."""
        return self.blame or self.width.code

    def sampled_only(self, prop: Property) -> bool:
        """Whether a clean verdict on ``prop`` here is sampled only: no closed form of the table decides it."""
        return self.closed_form is None or prop not in self.proved

    @property
    def hunted(self) -> bool:
        """Whether the generic flow hunts it (its engine hunts the others its own way)."""
        return self.cases is not None and self.observe is not None and self.group is not None


_TABLES: dict[str, Table] = {}


def declare_table(table: Table) -> Table:
    """Declare ``table`` (its engine does, once, when it is loaded); another table under a taken name is refused."""
    import re

    if not re.fullmatch(TABLE_NAME, table.name):
        raise ValueError(f"table name {table.name!r} is not {TABLE_NAME}")
    if table.hunted:  # judged by the generic checks alone: a property they lack would be a test that always passes
        unchecked = [p.value for p in table.properties if p not in GENERIC_PROPERTIES]
        if unchecked:
            raise ValueError(f"table {table.name}: no generic check of {', '.join(unchecked)}")
    undecided = [p.value for p in table.proved if p not in table.properties]
    if undecided:
        raise ValueError(f"table {table.name}: its closed form decides {', '.join(undecided)}, not a property of it")
    if _TABLES.get(table.name, table) != table:
        raise ValueError(f"table {table.name!r} is already declared (by engine {_TABLES[table.name].engine})")
    _TABLES[table.name] = table
    declare_table_name(table.name)
    return table


@contextlib.contextmanager
def declared(table: Table) -> Iterator[Table]:
    """``table`` declared in this process for the ``with`` block only (a test's table: no other test sees it)."""
    fresh = table.name not in _TABLES
    declare_table(table)
    try:
        yield table
    finally:
        if fresh:
            _TABLES.pop(table.name, None)
            undeclare_table_name(table.name)


_from_env: set[str] = set()


def _env_tables() -> None:
    """Declare the tables ``$KVROW_FUZZ_TABLES`` names (once per process and value); a malformed item, a module that
    cannot be imported or an attribute that is no ``Table`` is a ``TargetError``, said in one line."""
    value = os.environ.get(ENV, "")
    if value in _from_env:
        return
    _from_env.add(value)  # first: a table module that looks a name up while it loads does not load again
    for item in filter(None, (part.strip() for part in value.split(","))):
        module, sep, attr = item.partition(":")
        try:
            found = getattr(importlib.import_module(module), attr) if sep else None
            if not isinstance(found, Table):
                raise ValueError("not module:attr naming a Table")
            declare_table(found)
        except Exception as e:  # noqa: BLE001 - a table that cannot be declared is said in one line, every time
            _from_env.discard(value)
            raise TargetError(f"${ENV}: {item[:200]!r} cannot be declared ({type(e).__name__}: {e})") from None


declared_also(_env_tables)


def tables() -> list[Table]:
    """Every table a loadable engine declares (and ``$KVROW_FUZZ_TABLES``'s), in the order declared."""
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


def _case_problem(case: dict[str, Any]) -> str | None:
    """A table case's ``table`` that names no declared table hunted generically, or ``data`` that is no object."""
    name = case.get("table")
    try:
        found = table(name) if isinstance(name, str) else None
    except ValueError:
        found = None
    if found is None or not found.hunted:
        return f"{json.dumps(name)[:80]} is not a table this tool checks on its own"
    if not isinstance(case.get("data"), dict):
        return 'a table case\'s "data" must be a JSON object'
    return None


def _case_lines(case: dict[str, Any]) -> list[str]:
    return [f"table:  {case.get('table')}", f"case:   {json.dumps(case.get('data'), sort_keys=True)}"]


# A case of a generically checked table (``fuzz.tables.case``): the table's name and its data.
TABLE_CASE = declare_case_type(
    "table-case",
    "",
    frozenset({"table", "data"}),
    "fuzz.tables.case:replay_table_case",
    nested_problem=_case_problem,
    lines=_case_lines,
    case_engine=lambda case: table(case["table"]).engine,
)
