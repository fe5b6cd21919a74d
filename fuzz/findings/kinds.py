"""The names findings are grouped by: properties (and invariants), regimes, case kinds, and their signature.

A signature is ``property/group``: the property a case breaks and the group
it falls in, normally the configuration's regime (``write-within-row/dcp>1``
is the seed bug, ``write-within-row/alloc-page-1`` the open page-1 gap); a
``model-mismatch`` is grouped by the sizing function instead.  Each group
is one distinct bug: Hypothesis shrinks it on its own and it gets one case
file.
"""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model.guards import Guard
from allocator_model.pools import KVPool
from allocator_model.regimes import REGIMES, Regime, moved_regime, regime, regime_codes
from allocator_model.surface import SURFACE
from fuzz.common.compat import StrEnum

__all__ = ["REGIMES", "Regime", "moved_regime", "regime", "regime_codes"]  # with this module's own names


class Property(StrEnum):
    """What a finding breaks: a decode property, a lifecycle invariant, or a kind of its own."""

    # decode properties (fuzz.run) and lifecycle invariants (fuzz.lifecycle)
    WRITE_WITHIN_ROW = "write-within-row"
    NEIGHBOUR_ROWS_UNTOUCHED = "neighbour-rows-untouched"
    DRAFTS_WITHIN_ALLOCATION = "drafts-within-allocation"
    PAGE_ALIGNED_GROWTH = "page-aligned-growth"
    KV_LENS_ORDERED = "kv-lens-ordered"
    ROW_HOLDS_OWN_SLOTS = "row-holds-own-slots"
    SLOT_SINGLE_OWNER = "slot-single-owner"
    NO_STRANDED_PAGE_TAIL = "no-stranded-page-tail"
    FREE_LIST_UNIQUE = "free-list-unique"
    NO_LEAK = "no-leak"
    # kinds of their own
    SIZING_RAISED = "sizing-raised"  # a real sizing function raised for a valid configuration
    MODEL_MISMATCH = "model-mismatch"  # the model and a real module disagree (fuzz.fidelity)
    UNPROVEN = "unproven"  # prove could not read a growth rule in closed form


# The properties the bounded proof (``fuzz.prove.sweep``) decides in closed form for every configuration of its
# space, besides its own kinds (sizing-raised, unproven).  Anything else a campaign finds (a lifecycle
# invariant, what a step's writes did to the other rows or the slots) lies outside the proof: sampled only.
PROVED_PROPERTIES = frozenset(
    {Property.WRITE_WITHIN_ROW, Property.DRAFTS_WITHIN_ALLOCATION, Property.PAGE_ALIGNED_GROWTH}
)
# The other decode properties and the lifecycle invariants: what only sampling checks.
SAMPLED_ONLY = (
    frozenset(Property) - PROVED_PROPERTIES - {Property.SIZING_RAISED, Property.MODEL_MISMATCH, Property.UNPROVEN}
)
REGIME_NAMES = frozenset(r.value for r in Regime)
POOL_NAMES = frozenset(k.value for k in KVPool)
GUARD_NAMES = frozenset(g.value for g in Guard)


class CaseKind(StrEnum):
    """What a case file holds, and so which replayer replays it."""

    DECODE = "decode-scenario"  # one request's last decode steps (fuzz.run)
    LIFECYCLE = "lifecycle"  # a step script over a running batch (fuzz.lifecycle)
    FIDELITY = "fidelity-case"  # one configuration the model and a real module disagree on (fuzz.fidelity)


def group_name(regime: str, kv_pool: KVPool = KVPool.STANDARD) -> str:
    """A bug group's name: the regime, with ``@kind`` for a deployment other than the standard pool.

    ``write-within-row/paged@unified-mamba`` and ``write-within-row/paged`` are
    different bugs: one is the unified builder's narrow row, the other the
    sizing module's headroom.
    """
    return regime if kv_pool is KVPool.STANDARD else f"{regime}@{kv_pool.value}"


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
        """``silent``, ``stale-read`` or ``guard:NAME``, NAME one of SGLang's guards (``Guard``); else ValueError."""
        kind, _, guard = text.partition(":")
        if guard and guard not in GUARD_NAMES:
            raise ValueError(f"unknown guard {guard!r} (known: {', '.join(sorted(GUARD_NAMES))})")
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


def known_group(prop: Property, group: str) -> bool:
    """Whether ``group`` is a group ``prop`` can have: ``REGIME[@POOL]`` (sizing-raised: a regime alone),
    ``growth-rule`` for unproven, a declared surface entry for model-mismatch (``allocator_model.surface``)."""
    if prop is Property.UNPROVEN:
        return group == GROWTH_RULE
    if prop is Property.MODEL_MISMATCH:
        return group in SURFACE
    regime_name, at, pool = group.partition("@")
    if regime_name not in REGIME_NAMES:
        return False
    if not at:
        return True
    return prop is not Property.SIZING_RAISED and pool in POOL_NAMES and pool != KVPool.STANDARD.value
