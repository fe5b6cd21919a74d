"""The names findings are grouped by: properties (and invariants), groups, case kinds, and their signature.

A signature is ``property/group``: the property a case breaks and the group
it falls in, normally the configuration's regime (``write-within-row/dcp>1``
is the seed bug, ``write-within-row/alloc-page-1`` the open page-1 gap); a
``model-mismatch`` is grouped by the sizing function instead.  Each group
is one distinct bug: Hypothesis shrinks it on its own and it gets one case
file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, ClassVar

from fuzz.common.compat import StrEnum

from .declared_names import DeclaredName, _engines_declared


class Scope(StrEnum):
    """How a property is decided: what a clean verdict on it covers."""

    PROVED = "proved"  # the bounded proof (``prove``) decides it in closed form for every configuration of its space
    SAMPLED = "sampled"  # only sampling checks it (a lifecycle invariant, what a step did to the other rows)
    OWN = "own"  # a kind of its own: a sizing function raised, the model disagrees, a rule the proof could not read


@dataclass(frozen=True)
class Declaration:
    """What a property is, as the core or an engine declares it once."""

    rank: int  # its place in every list of properties (SARIF's rules, the known names): the order of blame
    scope: Scope
    rule: str  # what it asks, as the tables of docs/properties.md state it (the SARIF rule's text)
    engine: str = ""  # the engine that declared it ("" for the core's own)


_DECLARATIONS: dict[str, Declaration] = {}


class Property(DeclaredName):
    """What a finding breaks: declared once, by the core (the row properties and the kinds of their own, below)
    or by an engine (its invariants), with its ``Declaration``; listed in rank order (the order of blame)."""

    WRITE_WITHIN_ROW: ClassVar[Property]
    NEIGHBOUR_ROWS_UNTOUCHED: ClassVar[Property]
    READ_WITHIN_ROW: ClassVar[Property]
    COPIED_FROM_OWN_ROW: ClassVar[Property]
    SIZING_RAISED: ClassVar[Property]
    MODEL_MISMATCH: ClassVar[Property]
    UNPROVEN: ClassVar[Property]

    def __new__(cls, name: object) -> Property:
        prop: Property = super().__new__(cls, name)
        return prop

    @classmethod
    def declare(cls, value: str, declaration: Declaration) -> Property:
        """``value`` as a property; declaring it again the same way is a no-op, differently an error."""
        if value in _DECLARATIONS:
            if _DECLARATIONS[value] != declaration:
                raise ValueError(f"property {value!r} is already declared ({_DECLARATIONS[value]})")
            prop: Property = cls._declared[value]
            return prop
        taken = [v for v, d in _DECLARATIONS.items() if d.rank == declaration.rank]
        if taken:  # the rank orders SARIF's rules: two at one rank would be ordered by import order
            raise ValueError(f"property {value!r}: rank {declaration.rank} is {taken[0]!r}'s")
        _DECLARATIONS[value] = declaration
        prop = cls._add(value)
        return prop

    @classmethod
    def _order(cls, name: Any) -> Any:
        return _DECLARATIONS[name].rank

    @property
    def declaration(self) -> Declaration:
        return _DECLARATIONS[self.value]

    @property
    def scope(self) -> Scope:
        return self.declaration.scope

    @property
    def rule(self) -> str:
        return self.declaration.rule


# The core's own: a write within its own row, the neighbours untouched and a published length within the row (every
# table: each table words them in its own terms, ``fuzz.tables.rule_text``), and the kinds of their own.
Property.WRITE_WITHIN_ROW = Property.declare(
    "write-within-row",
    Declaration(0, Scope.PROVED, "Every write ends within its owner's part of the table it writes."),
)
Property.NEIGHBOUR_ROWS_UNTOUCHED = Property.declare(
    "neighbour-rows-untouched",
    Declaration(1, Scope.SAMPLED, "No write changes another owner's part of the table."),
)
Property.READ_WITHIN_ROW = Property.declare(
    "read-within-row",
    Declaration(
        10,
        Scope.SAMPLED,  # a table's closed form decides it there (``Table.proved``)
        "Every length a table publishes stays within its owner's part: readers read no column past it.",
    ),
)
Property.COPIED_FROM_OWN_ROW = Property.declare(
    "copied-from-own-row",
    Declaration(
        11,
        Scope.SAMPLED,
        "Every entry a builder copies into a table comes from its owner's part of the table it copies from.",
    ),
)
Property.SIZING_RAISED = Property.declare(
    "sizing-raised",
    Declaration(100, Scope.OWN, "A sizing function returns an integer for every valid configuration (it raised)."),
)
Property.MODEL_MISMATCH = Property.declare(
    "model-mismatch",
    Declaration(101, Scope.OWN, "The real sizing module and the model of its version agree on every function."),
)
Property.UNPROVEN = Property.declare(
    "unproven", Declaration(102, Scope.OWN, "Every growth rule of the target can be checked in closed form.")
)


@dataclass(frozen=True)
class Names:
    """The names an engine's signatures and outcomes may carry, declared with the engine: a group, its
    ``@variant``, a ``guard:NAME`` outcome, a ``model-mismatch`` group.  A signature read from a file is
    parsed against these, never taken as free text."""

    groups: Collection[str]  # the configuration class a failure belongs to (SGLang: its regimes)
    variants: Collection[str]  # ``GROUP@VARIANT``: a deployment other than the default (SGLang: a KV pool kind)
    guards: Collection[str]  # the engine's own checks that stop a step (``guard:NAME``)
    mismatch_groups: Collection[str]  # what a ``model-mismatch`` is grouped by (SGLang: its sizing functions)


_NAMES: dict[str, Names] = {}


def declare_names(engine: str, names: Names) -> Names:
    """Declare ``engine``'s names (it does, once, when it is loaded); declaring others for it is an error: which
    names a signature may carry never depends on which declaration ran last."""
    if _NAMES.get(engine, names) != names:
        raise ValueError(f"engine {engine!r} has already declared its names")
    _NAMES[engine] = names
    return names


def declared_names() -> list[Names]:
    """Every loadable engine's names."""
    _engines_declared()
    return list(_NAMES.values())


class CaseKind(DeclaredName):
    """What a case file holds, and so which replayer replays it: declared by an engine with its ``CaseType``."""


def _one_json_line(case: dict[str, Any]) -> list[str]:
    return [f"case:   {json.dumps(case, sort_keys=True)}"]


def _short(config: Any) -> str:
    return str(config.short())


def _no_suffix(case: dict[str, Any], revision: Any) -> str:
    return ""


def _nothing_nested(case: dict[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class CaseType:
    """A kind of case as its engine declares it: what its case object holds, who replays it, how it prints."""

    kind: CaseKind
    engine: str
    fields: frozenset[str]  # the fields of its "case" object (its replayer reads no others)
    replayer: str  # "module:function" of its replayer, imported the first time a case of the kind is read
    # Why the objects inside a case are not what the replayer reads (None: they are); values are the replayer's.
    nested_problem: Callable[[dict[str, Any]], str | None] = _nothing_nested
    lines: Callable[[dict[str, Any]], list[str]] = _one_json_line  # the case as a COUNTEREXAMPLE block shows it
    config_line: Callable[[Any], str] = _short  # the configuration as the block's config line shows it
    suffix: Callable[[dict[str, Any], Any], str] = _no_suffix  # after the target on the block's first line
    named_apart: bool = True  # its case files' names carry the kind (the engine's main kind's do not)
    carries_revision: bool = False  # its case files record the model revision the case was judged against
    # A core kind's (``engine`` ""): the engine a case of it belongs to, read from the case (a table case: its table's).
    case_engine: Callable[[dict[str, Any]], str] | None = None

    def engine_of(self, case: dict[str, Any]) -> str:
        """The engine a case of this kind belongs to: its declaring engine's, or for a core kind the case's own."""
        return self.case_engine(case) if self.case_engine is not None else self.engine


_CASE_TYPES: dict[str, CaseType] = {}


def declare_case_type(kind: str, engine: str, fields: frozenset[str], replayer: str, **how: Any) -> CaseKind:
    """Declare a kind of case (an engine does, once, when it is loaded).  The same engine declaring it again with the
    same fields and replayer is its module imported again (a reload, pytester's module snapshot): the kind keeps its
    value and takes the new module's functions; another engine's or another shape is an error."""
    before = _CASE_TYPES.get(kind)
    if before is not None and (before.engine, before.fields, before.replayer) != (engine, fields, replayer):
        raise ValueError(f"case kind {kind!r} is already declared by {before.engine or 'the core'}")
    declared = before.kind if before is not None else CaseKind._add(kind)
    _CASE_TYPES[kind] = CaseType(declared, engine, fields, replayer, **how)
    return declared


def case_type(kind: str) -> CaseType:
    """The declared type of case ``kind``; ValueError for a kind nobody declared."""
    return _CASE_TYPES[CaseKind(kind).value]


def group_name(group: str, variant: str = "") -> str:
    """A bug group's name: the group (a regime), with ``@variant`` for a deployment other than the default.

    ``write-within-row/paged@unified-mamba`` and ``write-within-row/paged`` are
    different bugs: one is the unified builder's narrow row, the other the
    sizing module's headroom.
    """
    return f"{group}@{variant}" if variant else group


class OutcomeKind(StrEnum):
    """What SGLang itself does when a write would leave its bounds, worst first."""

    SILENT = "silent"  # the write lands: it corrupts a neighbour's row or leaks slots, and nothing stops
    STALE_READ = "stale-read"  # the step reads columns no one wrote for it (stale KV), and nothing stops
    GUARD = "guard"  # SGLang stops first: an assert or error of its own (a crash, not a corruption)


@dataclass(frozen=True)
class Outcome:
    """``silent``, ``stale-read`` or ``guard:NAME``: how a violation shows in a running SGLang.

    An SGLang developer triages a crash and a silent corruption very
    differently, so the outcome is part of a bug group's identity, and
    reports list silent groups first (``rank``).
    """

    kind: OutcomeKind = OutcomeKind.SILENT
    guard: str = ""  # the guard's name (GUARD only): SGLang's function, or its file.function

    def __post_init__(self) -> None:
        if (self.kind is OutcomeKind.GUARD) != bool(self.guard):
            raise ValueError("a guard outcome names its guard, and only a guard outcome does")

    def __str__(self) -> str:
        return f"guard:{self.guard}" if self.kind is OutcomeKind.GUARD else self.kind.value

    @property
    def rank(self) -> int:
        """Sort order: silent, then stale-read, then guards."""
        return list(OutcomeKind).index(self.kind)

    @classmethod
    def parse(cls, text: str) -> Outcome:
        """``silent``, ``stale-read`` or ``guard:NAME``, NAME one of an engine's guards (``Names``); else ValueError."""
        kind, _, guard = text.partition(":")
        guards = {g for names in declared_names() for g in names.guards} if guard else set()
        if guard and guard not in guards:
            raise ValueError(f"unknown guard {guard!r} (known: {', '.join(sorted(guards))})")
        return cls(OutcomeKind(kind), guard)

    @classmethod
    def stopped_by(cls, guard: str) -> Outcome:
        return cls(OutcomeKind.GUARD, guard)


SILENT = Outcome()
STALE_READ = Outcome(OutcomeKind.STALE_READ)


@dataclass(frozen=True)
class Signature:
    """``property/group``, with ``[outcome]`` unless silent: the identity of one bug group."""

    prop: Property
    group: str
    outcome: Outcome = SILENT

    def __str__(self) -> str:
        tail = "" if self.outcome == SILENT else f"[{self.outcome}]"
        return f"{self.prop.value}/{self.group}{tail}"

    def __lt__(self, other: Signature) -> bool:
        return self.sort_key < other.sort_key

    @property
    def sort_key(self) -> tuple[int, str]:
        """Silent groups first, then by name."""
        return self.outcome.rank, str(self)

    @classmethod
    def parse(cls, text: str) -> Signature:
        """``write-within-row/dcp>1[guard:NAME]`` -> Signature; ValueError for an unknown property, group or outcome.

        Parsed against the known names, never taken as free text: the group
        must be one ``known_group`` accepts for the property, the outcome one
        of ``Outcome``'s with a known guard.  A signature from a file (a case,
        a shard's report) can so never carry text of its own into what is
        printed or generated from it.
        """
        if not isinstance(text, str):
            raise ValueError(f"a signature is text, got {type(text).__name__}")
        prop, sep, rest = text.partition("/")
        group, bracket, outcome = rest.partition("[")
        if not sep or not group or (bracket and not outcome.endswith("]")):
            raise ValueError(f"signature {text[:80]!r} is not PROPERTY/GROUP or PROPERTY/GROUP[OUTCOME]")
        try:
            parsed = cls(Property(prop), group, Outcome.parse(outcome[:-1]) if bracket else SILENT)
        except ValueError as e:
            raise ValueError(f"signature {text[:80]!r}: {e}") from None
        if not known_group(parsed.prop, group):
            raise ValueError(f"signature {text[:80]!r}: {group[:80]!r} is not a group of {prop}")
        if str(parsed) != text:
            raise ValueError(f"signature {text[:80]!r} is not in its canonical form {str(parsed)!r}")
        return parsed


# The group of ``unproven`` configurations (prove: a growth rule not read in closed form).
GROWTH_RULE = "growth-rule"


_TABLE_NAMES: set[str] = set()  # the declared tables (``fuzz.tables.declare_table``): a table's groups' variants


def declare_table_name(name: str) -> None:
    """``name`` is a declared table: ``GROUP@TABLE`` is a group of a finding on it (``fuzz.tables.case``)."""
    _TABLE_NAMES.add(name)


def undeclare_table_name(name: str) -> None:
    _TABLE_NAMES.discard(name)


def known_group(prop: Property, group: str) -> bool:
    """Whether ``group`` is a group ``prop`` can have: ``GROUP[@VARIANT]`` of one engine's ``Names``
    (sizing-raised: a group alone), ``growth-rule`` for unproven, an engine's mismatch group for model-mismatch.
    A VARIANT may be a declared table: a finding on a table its engine does not hunt itself is grouped apart."""
    if prop is Property.UNPROVEN:
        return group == GROWTH_RULE
    if prop is Property.MODEL_MISMATCH:
        return any(group in names.mismatch_groups for names in declared_names())
    name, at, variant = group.partition("@")
    for names in declared_names():
        variants = (*names.variants, *_TABLE_NAMES)
        if name in names.groups and (not at or (prop is not Property.SIZING_RAISED and variant in variants)):
            return True
    return False
