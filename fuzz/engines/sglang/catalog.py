"""The known bugs of the reference doc's catalog, each as an explicit scenario on the revision that has it.

Every entry must fail its property on ``revision`` and pass on the
reference; the tests run them as ``@example`` cases and as plain
regression tests.  Numbers in the titles are the doc's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario, PriorStep
from allocator_model.scheduler import max_committed_len_at_decode_alloc
from fuzz.engines.sglang.decode.properties import DRAFTS_WITHIN_ALLOCATION, PAGE_ALIGNED_GROWTH, WRITE_WITHIN_ROW


@dataclass(frozen=True)
class KnownBug:
    bug: str
    title: str
    revision: str
    prop: str | None  # None: a scenario that must stay clean everywhere (a false alarm guard)
    scenario: DecodeScenario

    @property
    def id(self) -> str:
        return f"{self.bug}:{self.title}"


def _at_bound(
    cfg: ServingConfig, gap: int = 0, *, num_steps: int | None = None, prior: PriorStep | None = None
) -> DecodeScenario:
    """The decode allocation ``gap`` below the scheduler's committed-length bound.

    Overlap is off in every entry, where the bound (min(C, capacity) - 4) is
    the same on every revision, so it is taken without one.
    """
    assert not cfg.enable_overlap, "the bound of an overlap config depends on the revision"
    return DecodeScenario(cfg, max_committed_len_at_decode_alloc(cfg) - gap, num_steps, prior)


def _unified_eagle_at_bound(kind: str) -> DecodeScenario:
    """EAGLE (3, 1, 4) at page 64 on a unified pool, C = 4093, at the committed-length bound."""
    return _at_bound(
        _cfg(
            context_len=4093,
            page_size=64,
            speculative_algorithm="EAGLE",
            speculative_num_steps=3,
            speculative_num_draft_tokens=4,
            kv_pool=kind,
        )
    )


def _cfg(**kw: Any) -> ServingConfig:
    kw.setdefault("enable_overlap", False)
    return ServingConfig.resolve(**kw)


CATALOG: tuple[KnownBug, ...] = (
    KnownBug(
        "#35424",
        "p=64 dcp=8 EAGLE 3,1,4: width C+71, write end C+515",
        "sglang-0.5.18",
        WRITE_WITHIN_ROW,
        _at_bound(
            _cfg(
                context_len=4093,
                page_size=64,
                attn_dcp_size=8,
                speculative_algorithm="EAGLE",
                speculative_num_steps=3,
                speculative_eagle_topk=1,
                speculative_num_draft_tokens=4,
            )
        ),
    ),
    KnownBug(
        "#35424",
        "p=1 dcp=8 EAGLE3 3,1,4: the p=1 sizing branch under a page-8 allocator",
        "sglang-0.5.18",
        WRITE_WITHIN_ROW,
        _at_bound(_cfg(context_len=4093, page_size=1, attn_dcp_size=8, speculative_algorithm="EAGLE3")),
    ),
    KnownBug(
        "#35424",
        "p=1 dcp=4 EAGLE 2,8,6: tree path reached with L sized for page 1 (21 below the bound: nearer it, "
        "EAGLE's prepare-for-decode assert stops the step first)",
        "sglang-0.5.18",
        DRAFTS_WITHIN_ALLOCATION,
        _at_bound(
            _cfg(
                context_len=4096,
                page_size=1,
                attn_dcp_size=4,
                speculative_algorithm="EAGLE",
                speculative_num_steps=2,
                speculative_eagle_topk=8,
                speculative_num_draft_tokens=6,
            ),
            gap=21,
        ),
    ),
    KnownBug(
        "#33579",
        "page 1 DSPARK gamma 16: R 34 vs extra 21",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _at_bound(_cfg(context_len=2048, speculative_algorithm="DSPARK", speculative_num_draft_tokens=17)),
    ),
    KnownBug(
        "#33579",
        "page 1 DFLASH block 16",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _at_bound(_cfg(context_len=2048, speculative_algorithm="DFLASH")),
    ),
    KnownBug(
        "#33579",
        "page 1 NGRAM defaults",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _at_bound(_cfg(context_len=2048, speculative_algorithm="NGRAM")),
    ),
    KnownBug(
        "#33579",
        "page 1 EAGLE Llama default 5,4,8: spill up to 24 columns",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _at_bound(
            _cfg(
                context_len=2048,
                speculative_algorithm="EAGLE",
                speculative_num_steps=5,
                speculative_eagle_topk=4,
                speculative_num_draft_tokens=8,
            )
        ),
    ),
    KnownBug(
        "#33579",
        "page 1 EAGLE topk 1 with D = 9",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _at_bound(
            _cfg(context_len=2048, speculative_algorithm="EAGLE", speculative_num_steps=8, speculative_eagle_topk=1)
        ),
    ),
    KnownBug(
        "#26972",
        "p=16 EAGLE 5,4,8: the page-duplicated tree outgrows max(S*K, D)",
        "pre-26972",
        DRAFTS_WITHIN_ALLOCATION,
        _at_bound(
            _cfg(
                context_len=2048,
                page_size=16,
                speculative_algorithm="EAGLE",
                speculative_num_steps=5,
                speculative_eagle_topk=4,
                speculative_num_draft_tokens=8,
            ),
            gap=20,
        ),
    ),
    KnownBug(
        "#31616",
        "p=16 EAGLE 3,1,4: nxt = c + R leaves a page tail unrecorded",
        "pre-31616",
        PAGE_ALIGNED_GROWTH,
        _at_bound(_cfg(context_len=2048, page_size=16, speculative_algorithm="EAGLE"), gap=1),
    ),
    KnownBug(
        "#35265",
        "p=16 DFLASH block 16: unrounded 2D reserve",
        "pre-35265",
        PAGE_ALIGNED_GROWTH,
        _at_bound(_cfg(context_len=2048, page_size=16, speculative_algorithm="DFLASH"), gap=1),
    ),
    KnownBug(
        "#35265",
        "0.5.18 ships the unrounded DFLASH reserve",
        "sglang-0.5.18",
        PAGE_ALIGNED_GROWTH,
        _at_bound(_cfg(context_len=2048, page_size=16, speculative_algorithm="DFLASH"), gap=1),
    ),
    KnownBug(
        "#35265",
        "p=1 dcp=2 DFLASH: the unrounded reserve under a paged (DCP) allocator",
        "sglang-0.5.18",
        PAGE_ALIGNED_GROWTH,
        _at_bound(
            _cfg(context_len=2048, attn_dcp_size=2, speculative_algorithm="DFLASH", speculative_num_draft_tokens=3),
            gap=1,
        ),
    ),
    KnownBug(
        "unified-rows",
        "unified Mamba + SWA p=64 EAGLE 3,1,4: width C+8 (4 + D), write end ceil_64(C+4): 59 past at C=4093 "
        "(upstream's newer row-headroom test of the unified builders)",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _unified_eagle_at_bound("unified-mamba-swa"),
    ),
    KnownBug(
        "unified-rows",
        "unified Mamba p=64 dcp=1 EAGLE 3,1,4: the same narrow row",
        "sglang-0.5.23",
        WRITE_WITHIN_ROW,
        _unified_eagle_at_bound("unified-mamba"),
    ),
    KnownBug(
        "dcp-bare-page",
        "SWA allocator under DCP keeps page 64: 0.5.18's dcp>1 seed-bug case is inside the row there",
        "sglang-0.5.18",
        None,
        _at_bound(
            _cfg(
                context_len=4093,
                page_size=64,
                attn_dcp_size=8,
                speculative_algorithm="EAGLE",
                speculative_num_steps=3,
                speculative_num_draft_tokens=4,
                kv_pool="swa",
            )
        ),
    ),
    KnownBug(
        "bound",
        "adaptive default at page 1 fits exactly at c = C - 4 (c = C would be a false alarm)",
        "sglang-0.5.23",
        None,
        _at_bound(_cfg(context_len=2048, speculative_algorithm="EAGLE", speculative_adaptive=True), num_steps=7),
    ),
)
