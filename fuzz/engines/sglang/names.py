"""SGLang's names: the properties it judges beyond the core's, and what its signatures may carry.

Declared when the engine is loaded (``fuzz.findings.kinds``): a case file,
a report or a baseline naming one of them is parsed against these.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from allocator_model.guards import Guard
from allocator_model.pools import KVPool
from allocator_model.regimes import Regime
from allocator_model.surface import SURFACE
from fuzz.findings.kinds import Declaration, Names, Property, Scope, declare_names

from .specs import NAME

REQ_TO_TOKEN = "req_to_token"  # the table every SGLang cause is in: a row per request, a column per token


def _declare(value: str, rank: int, scope: Scope, rule: str) -> Property:
    return Property.declare(value, Declaration(rank, scope, rule, NAME))


class SGLangProperty:
    """SGLang's own properties: the decode path's (proved where the bounded proof reads them in closed form) and
    the lifecycle's invariants (sampled), ranked after the core's two row properties."""

    DRAFTS_WITHIN_ALLOCATION = _declare(
        "drafts-within-allocation",
        2,
        Scope.PROVED,
        "Draft/verify columns (the spec v2 tree layout included) stay below kv_allocated_len.",
    )
    PAGE_ALIGNED_GROWTH = _declare(
        "page-aligned-growth",
        3,
        Scope.PROVED,
        "On a paged allocator, spec decode grows kv_allocated_len to whole pages.",
    )
    KV_LENS_ORDERED = _declare(
        "kv-lens-ordered",
        4,
        Scope.SAMPLED,
        "0 <= kv_committed_len <= kv_allocated_len <= W for every request holding a row.",
    )
    ROW_HOLDS_OWN_SLOTS = _declare(
        "row-holds-own-slots", 5, Scope.SAMPLED, "Every column in [0, kv_allocated_len) holds a slot the request owns."
    )
    SLOT_SINGLE_OWNER = _declare("slot-single-owner", 6, Scope.SAMPLED, "No slot stands twice among the live rows.")
    NO_STRANDED_PAGE_TAIL = _declare(
        "no-stranded-page-tail",
        7,
        Scope.SAMPLED,
        "After a spec decode allocation on a paged allocator, slots owned == kv_allocated_len.",
    )
    FREE_LIST_UNIQUE = _declare(
        "free-list-unique", 8, Scope.SAMPLED, "No page is freed twice; the free list holds free pages, once."
    )
    NO_LEAK = _declare(
        "no-leak",
        9,
        Scope.SAMPLED,
        "A released request owns no slot; with no request holding KV, every slot and row is free.",
    )


class MismatchGroups(Collection[str]):
    """What a ``model-mismatch`` is grouped by, read live: each entry of the sizing surface (a test's declared entry
    too; the decode write path's is ``decode_step``), and each checked table of this engine besides
    ``req_to_token`` (whose writes are the decode steps'), whose builders ``fidelity`` holds to the model's twin
    (``fidelity/page_tables.py``: ``model-mismatch/fa3_page_table``)."""

    @staticmethod
    def _names() -> list[str]:
        from fuzz.tables.declared import tables

        return [*SURFACE, *(t.name for t in tables() if t.engine == NAME and t.name != REQ_TO_TOKEN)]

    def __contains__(self, name: object) -> bool:
        return name in SURFACE or name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


NAMES = declare_names(
    NAME,
    Names(
        groups=frozenset(r.value for r in Regime),
        variants=frozenset(k.value for k in KVPool if k is not KVPool.STANDARD),
        guards=frozenset(g.value for g in Guard),
        mismatch_groups=MismatchGroups(),
    ),
)
