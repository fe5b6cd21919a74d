"""Historical revisions: the reference with one known bug switched back on.

Like SGLang's ``SGLANG_DEBUG_REVERT_PR`` toggles, each revision is a small,
named difference from the reference.  The reference is SAFE for every valid
configuration (page size 1 included, which no upstream release is yet).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from . import algorithms as algo


class Headroom(StrEnum):
    """When the row headroom (``req_to_token_extra_context_len``) covers the decode reserve R + page - 1.

    Otherwise it is 4 + Dmax only, which a reserve 2 * max(S*K, Dmax) can outgrow.
    """

    ALWAYS = "always"  # spec on, at every page: the page-1 fix (#33579 closed); every run-time shape
    PAGED = "paged"  # only for alloc page > 1 or UNO, sized for the launch shape: upstream 0.5.16 to 0.5.23
    NONE = "none"  # never: 4 + Dmax only, before #26972

    @property
    def every_runtime(self) -> bool:
        """Whether the reserve is sized for every run-time shape (adaptive spec), not only the launch one.

        The reference sizes for every shape a batch may switch to; upstream
        reads the launch configuration's shape.
        """
        return self is Headroom.ALWAYS


@dataclass(frozen=True)
class Revision:
    name: str
    summary: str
    bug: str | None = None  # catalog id of the bug this revision carries, if one
    # -- the sizing module ----------------------------------------------------
    # alloc page = page_size * attn_dcp_size (#35424); False: page_size alone.
    alloc_page_with_dcp: bool = True
    # L has the page-duplicated tree term (#26972).
    tree_alloc_len: bool = True
    # When the row headroom covers R + page - 1:
    #   ALWAYS (spec on; the page-1 fix), PAGED (page > 1 or UNO, upstream),
    #   NONE (never: 4 + Dmax only, before #26972).
    headroom: Headroom = Headroom.ALWAYS
    # The headroom sized from the launch shape and its draft count D, not every run-time shape
    # and Dmax (a planted bug: adaptive spec launches below its largest candidate).
    headroom_from_launch_shape: bool = False
    # nxt rounds up to whole allocator pages (#31616).
    page_aligned_growth: bool = True
    # -- the decode path and the scheduler --------------------------------------
    # DFLASH/DSPARK round their reserve to the allocator page (#35265, 0.5.19).
    dflash_page_rounded: bool = True
    # Overlap mode drops requests the in-flight batch finishes by length (0.5.19).
    overlap_drops_finishing: bool = True
    # Algorithms this revision knows (UNO from 0.5.20).
    algorithms: frozenset[str] = frozenset(algo.ALL)

    def __post_init__(self) -> None:
        object.__setattr__(self, "headroom", Headroom(self.headroom))  # a plain "paged" too

    def but(self, name: str, summary: str, **changes: Any) -> Revision:
        return dataclasses.replace(self, name=name, summary=summary, **changes)


REFERENCE = Revision(
    name="reference",
    summary="all catalogued fixes, plus the page-1 headroom (#33579 closed): safe everywhere",
)

_UPSTREAM_0_5_23 = REFERENCE.but(
    "sglang-0.5.23",
    "upstream 0.5.20-0.5.23: headroom covers the reserve only when alloc page > 1 or UNO (#33579 open)",
    bug="#33579",
    headroom=Headroom.PAGED,
)
_UPSTREAM_0_5_19 = _UPSTREAM_0_5_23.but(
    "sglang-0.5.19", "upstream 0.5.19: alloc page with dcp, no UNO", algorithms=frozenset(algo.ALL) - {algo.UNO}
)
_UPSTREAM_0_5_18 = _UPSTREAM_0_5_19.but(
    "sglang-0.5.18",
    "upstream 0.5.16-0.5.18: sizing pages at page_size without dcp (#35424), DFLASH reserve unrounded "
    "(#35265), overlap keeps requests the in-flight batch finishes",
    bug="#35424",
    alloc_page_with_dcp=False,
    dflash_page_rounded=False,
    overlap_drops_finishing=False,
)

REVISIONS: dict[str, Revision] = {
    r.name: r
    for r in (
        REFERENCE,
        _UPSTREAM_0_5_18,
        _UPSTREAM_0_5_19,
        _UPSTREAM_0_5_23,
        REFERENCE.but(
            "pre-26972",
            "reference without #26972: no tree term in L, headroom 4 + Dmax only",
            bug="#26972",
            tree_alloc_len=False,
            headroom=Headroom.NONE,
        ),
        REFERENCE.but(
            "adaptive-launch-headroom",
            "reference, but the row headroom sized from the launch-time shape and draft count of adaptive spec "
            "(launched at its middle candidate) instead of the largest candidate (planted)",
            bug="planted",
            headroom_from_launch_shape=True,
        ),
        REFERENCE.but(
            "pre-31616",
            "reference without #31616: decode growth nxt = c + R is not page-aligned",
            bug="#31616",
            page_aligned_growth=False,
        ),
        REFERENCE.but(
            "pre-35265",
            "reference without #35265: the DFLASH/DSPARK reserve is not page-aligned",
            bug="#35265",
            dflash_page_rounded=False,
        ),
    )
}

# The sizing semantics of each upstream release, by the API generation it shipped.
RELEASE_REVISIONS: dict[str, str] = {
    "0.5.16": "sglang-0.5.18",
    "0.5.17": "sglang-0.5.18",
    "0.5.18": "sglang-0.5.18",
    "0.5.19": "sglang-0.5.19",
    "0.5.20": "sglang-0.5.23",
    "0.5.21": "sglang-0.5.23",
    "0.5.22": "sglang-0.5.23",
    "0.5.23": "sglang-0.5.23",
}


def get_revision(name: str) -> Revision:
    try:
        return REVISIONS[name]
    except KeyError:
        raise KeyError(f"unknown revision {name!r} (known: {', '.join(REVISIONS)})") from None
