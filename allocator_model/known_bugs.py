"""The known row-sizing bugs as fixes of a revision: which fields each resets, which surface entries it replaces.

A root cause is decided by counterfactual (``fuzz.engines.sglang.causes``): a case whose
failure goes away when one known bug is fixed, and nothing else changes, has
that bug for its cause. Each ``KnownFix`` says how to fix one bug on any
target:

  * on the model: the revision's ``fields`` set back to the reference's values;
  * on a real target: the same revision fix, and the target's answers to
    ``entries`` (the SGLang functions the bug lives in) replaced by the fixed
    model's, so one function holding two bugs (0.5.18's headroom holds the
    seed bug and #33579) is fixed one bug at a time.

``bug`` is the upstream number where one is known, ``NEW`` where no upstream
report names it. The entries named here are the sizing functions the fix
changes in SGLang's code: the alloc page reaches every function that pages
(#35424), the headroom only ``get_req_to_token_extra_context_len`` (#33579),
the unified builders only the row width they compute. A fix of the headroom
reaches the row width too (the standard builder sizes the row C + headroom);
a unified builder that bypasses the headroom keeps its own row, so a case
there needs both fixes. Order matters where two fixes each make a case pass
(a page-1 case under DCP fails without DCP too): the narrower fix comes first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .revisions import REFERENCE, Revision
from .surface import (
    ALIGNED_LENS,
    ALLOC_LEN_PER_DECODE,
    ALLOC_RESERVE_PER_DECODE,
    EXTRA_CONTEXT_LEN,
    ROW_WIDTH,
    SIZING_ALLOC_PAGE,
    Entry,
)

NEW = "new"  # no upstream report names it

# The sizing pieces a real target answers, in SGLang's order of computation (each feeds the next): the reference's
# version of one is the fix of a NEW cause (``fuzz.engines.sglang.causes``).
PIECES: tuple[Entry, ...] = (
    SIZING_ALLOC_PAGE,
    ALLOC_LEN_PER_DECODE,
    ALLOC_RESERVE_PER_DECODE,
    EXTRA_CONTEXT_LEN,
    ROW_WIDTH,
)


@dataclass(frozen=True)
class KnownFix:
    """One known bug, as the fix that removes it (see the module docstring)."""

    key: str  # short and stable: the cause's id in reports
    bug: str  # "#35424", or NEW
    title: str  # what is wrong, in SGLang's terms
    fix: str  # the fix as the reference states it
    fields: tuple[str, ...]  # Revision fields reset to the reference's values
    entries: tuple[Entry, ...]  # the surface entries a real target's answers are replaced in
    missing: str = ""  # the term the buggy formula lacks, where the catalog can name one ("": it does not)

    def applies(self, revision: Revision) -> bool:
        """Whether ``revision`` carries this bug (one of its fields differs from the reference)."""
        return any(getattr(revision, f) != getattr(REFERENCE, f) for f in self.fields)


KNOWN_FIXES: tuple[KnownFix, ...] = (
    KnownFix(
        "page-1-headroom",
        "#33579",
        "the row headroom covers the decode reserve only at allocator page > 1 (or UNO): at page 1 the row is "
        "C + 4 + Dmax while a decode step reserves 2 * max(S*K, Dmax)",
        "headroom = max(4 + Dmax, R + page - 1) whenever speculation is on, at every page",
        ("headroom", "headroom_page_tail"),
        (EXTRA_CONTEXT_LEN, ROW_WIDTH),
        "the reserve term R + page - 1 of the headroom at allocator page 1",
    ),
    KnownFix(
        "alloc-page-dcp",
        "#35424",
        "the sizing functions page at page_size while the allocator pages at page_size * attn_dcp_size",
        "page every sizing function at the allocator's page, page_size * attn_dcp_size (get_alloc_page_size)",
        ("alloc_page_with_dcp",),
        (SIZING_ALLOC_PAGE, ALLOC_LEN_PER_DECODE, ALLOC_RESERVE_PER_DECODE, EXTRA_CONTEXT_LEN, ROW_WIDTH),
        "the attn_dcp_size factor of the allocator page",
    ),
    KnownFix(
        "tree-term",
        "#26972",
        "the decode length has no page-duplicated tree term and the headroom is 4 + Dmax only",
        "L = max(ceil((page - 1 + S) / page) * page * K, Dmax) for a paged tree; headroom R + page - 1",
        ("tree_alloc_len",),
        (ALLOC_LEN_PER_DECODE, ALLOC_RESERVE_PER_DECODE, EXTRA_CONTEXT_LEN, ROW_WIDTH),
        "the page-duplicated tree term ceil((page - 1 + S) / page) * page * K",
    ),
    KnownFix(
        "page-aligned-growth",
        "#31616",
        "decode growth nxt = kv_committed_len + R is not rounded up to whole allocator pages",
        "nxt = ceil_P(kv_committed_len + R) (page_aligned_decode_alloc_lens)",
        ("page_aligned_growth",),
        (ALIGNED_LENS,),
        "the round-up of nxt to whole allocator pages",
    ),
    KnownFix(
        "dflash-page-rounding",
        "#35265",
        "DFLASH/DSPARK's reserve is not rounded to the allocator page",
        "round the DFLASH/DSPARK decode allocation up to the allocator page",
        ("dflash_page_rounded",),
        (),
        "the round-up of the DFLASH/DSPARK reserve to the allocator page",
    ),
    KnownFix(
        "unified-rows",
        NEW,
        "the unified Mamba pool builders size the row C + 4 + D instead of C + get_req_to_token_extra_context_len()",
        "extra_max_context_len = get_req_to_token_extra_context_len() in each unified builder",
        ("narrow_rows",),
        (ROW_WIDTH,),
        "the decode reserve's part of the headroom (R + page - 1): the builders add 4 + D only",
    ),
    KnownFix(
        "launch-shape-headroom",
        "planted",
        "the row headroom is sized from the launch-time shape of adaptive spec, not its largest candidate",
        "size the headroom over every run-time candidate (Dmax)",
        ("headroom_from_launch_shape",),
        (EXTRA_CONTEXT_LEN, ROW_WIDTH),
    ),
)
KNOWN_FIX = {f.key: f for f in KNOWN_FIXES}


def with_fixes(revision: Revision, fixes: tuple[KnownFix, ...]) -> Revision:
    """``revision`` with each of ``fixes`` applied (its fields at the reference's values); never registered."""
    changes = {name: getattr(REFERENCE, name) for fix in fixes for name in fix.fields}
    return dataclasses.replace(revision, **changes)


def fully_fixed(revision: Revision) -> Revision:
    """``revision`` with every known bug fixed: the release's semantics (its algorithms, pools, scheduler
    rules) and the reference's sizing."""
    return with_fixes(revision, KNOWN_FIXES)
