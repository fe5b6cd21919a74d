"""SGLang's own table tests of the sizing arithmetic, restated in this project's words, run on every target.

The cases are those of upstream's unit tests (sgl-project/sglang,
``test/registered/unit/mem_cache/``; none ship in a wheel), read and
rewritten here as (configuration -> expected value) rows, never copied:

* ``test_req_to_token_row_headroom.py`` (74dfe09, 20fd295): the row headroom
  covers the worst decode growth ``nxt - kv_committed_len`` over committed
  lengths [4096 - 2P, 4096], for DSPARK (D 17), EAGLE (5, 1, 8) and EAGLE
  (3, 2, 6) at P = 2, 8, 64, 256; UNO at page 1;
* ``test_uno_allocation_sizing.py`` (8f11a2c): UNO, D 8, page 1 -> L 9, R 18,
  headroom 18;
* ``test_allocation_sizing.py`` (92760af, 2f76d4a; main's design): the
  allocator page upper bound, page-aligned row widths, the headroom per
  algorithm at context 4096, the reserve at the allocator page, the
  candidate pages, the row-width guard;
* older stored versions of these tests (server-args, DSPARK, page-aligned
  growth and ``managers/utils`` designs), as ``older:`` rows.

Targets: ``reference`` (the embedded model), ``main``
(``tests/sglang_shapes/main.py``, main's design), ``shape:X.Y.Z`` (the
release's test-written module from the session's wheel cache, offline) and
``wheel:X.Y.Z`` (the release's real wheel; marked ``network``, run with
``--run-network``).  A row about the pool builders' rows skips the ``shape:``
targets, whose test wheels hold no ``kv_cache_configurator.py``.  Everything is read through the sizing surface every
target has (``fuzz.targets.base.SizingSurface``).

Where a target is known to differ from upstream's expectation, the row says
with what value and why (``Differ``), and the test asserts that value: a fix
or a regression either way fails.  ``NA``: the target's release does not
launch that configuration (an algorithm or DCP it does not have); the test
asserts the refusal instead.  (0.5.13 runs NGRAM and DFLASH on v1 workers the
model leaves out, but its sizing functions still answer for them: measured.)
The expected differences:

* #33579, the page-1 headroom gap: open in every release (the reference and
  main close it);
* UNO's own L (D + 1) and page-1 headroom: 0.5.20+ (no UNO before);
* the allocator page P * dcp in the sizing: 0.5.19+ (#35424; before, P);
* the ``+ page - 1`` headroom tail and page-rounded growth: 0.5.16+ (0.5.13 to
  0.5.15 cover the reserve alone, only for page > 1 with topk > 1, and grow
  exactly, #31616);
* main's design: page-aligned rows (so no tail), candidate pages, a guard;
* the unified builders' rows C + 4 + D (0.5.22-0.5.23, and main's version).

Left out, not expressible as a launch this tool accepts: upstream's NGRAM
without draft tokens and EAGLE without steps/topk (server_args fills both),
the prefill peer's effective algorithm, the DFLASH prepare assert (no wheel
has it), the unified builders' UNO and EAGLE topk-2 rows (unified memory
takes topk 1 and no UNO), the encoder-decoder write offset (not sizing).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from allocator_model.allocator import allocator_page_size
from allocator_model.config import ServingConfig
from allocator_model.numeric import ceil_to_page
from allocator_model.revisions import RELEASE_REVISIONS
from fuzz.engines.sglang.real.versions import parse_version
from fuzz.targets.base import Target
from fuzz.targets.resolve import resolve_target

MAIN = Path(__file__).parent / "sglang_shapes" / "main.py"
CONTEXT = 4096
RELEASES = sorted(RELEASE_REVISIONS, key=parse_version)
NA = "not launched"  # the target's release refuses the configuration


def releases(first: str, last: str) -> frozenset[str]:
    """The modeled releases from ``first`` to ``last``, both included."""
    lo, hi = parse_version(first), parse_version(last)
    found = frozenset(r for r in RELEASES if lo <= parse_version(r) <= hi)
    assert found, (first, last)
    return found


ALL_RELEASES = releases(RELEASES[0], RELEASES[-1])


@dataclass(frozen=True)
class Differ:
    """Where a target gives another value than upstream's test expects, and why."""

    on: frozenset[str]  # "reference", "main", release numbers (both the shape and the wheel)
    value: Any
    reason: str


@dataclass(frozen=True)
class Row:
    name: str
    config: dict[str, Any]
    measure: Callable[[Target, ServingConfig], Any]
    upstream: Any  # what upstream's test expects
    differs: tuple[Differ, ...] = field(default=())
    # False: the row needs the release's own pool builders (kv_cache_configurator.py), which the
    # session's test wheels (``shape:``) do not hold; it runs on the real wheels, the model and main.
    on_shapes: bool = True

    def expected(self, key: str) -> tuple[Any, str | None]:
        for d in self.differs:
            if key in d.on:
                return d.value, d.reason
        return self.upstream, None


# -- what is measured, through the sizing surface ------------------------------------


def alloc_page(t: Target, cfg: ServingConfig) -> int:
    return t.sizing.alloc_page_size(cfg)


def alloc_len(t: Target, cfg: ServingConfig) -> int:
    return t.sizing.alloc_len_per_decode(cfg, cfg.launch_runtime)


def reserve(t: Target, cfg: ServingConfig) -> int:
    return t.sizing.alloc_reserve_per_decode(cfg, cfg.launch_runtime)


def extra(t: Target, cfg: ServingConfig) -> int:
    return t.sizing.req_to_token_extra_context_len(cfg)


def row_width(t: Target, cfg: ServingConfig) -> int:
    return t.sizing.req_to_token_row_width(cfg)


def both(*measures: Callable[[Target, ServingConfig], Any]) -> Callable[[Target, ServingConfig], tuple[Any, ...]]:
    def measure(t: Target, cfg: ServingConfig) -> tuple[Any, ...]:
        return tuple(m(t, cfg) for m in measures)

    measure.__name__ = "+".join(m.__name__ for m in measures)
    return measure


def extra_at_least(n: int) -> Callable[[Target, ServingConfig], bool]:
    def measure(t: Target, cfg: ServingConfig) -> bool:
        return extra(t, cfg) >= n

    return measure


def worst_growth(t: Target, cfg: ServingConfig) -> int:
    """The largest ``nxt - kv_committed_len`` of one decode allocation, committed in [4096 - 2P, 4096].

    The target's own growth rule (its ``page_aligned_decode_alloc_lens``, or
    its version's: exact before 0.5.16) at the allocator's page, a fresh
    request (allocated = committed), the launch shape's reserve.
    """
    page = allocator_page_size(cfg)
    lens = [(c, c) for c in range(CONTEXT - 2 * page, CONTEXT + 1)]
    _, nxt, _ = t.sizing.page_aligned_decode_alloc_lens(lens, reserve(t, cfg), page)
    return max(n - c for n, (c, _) in zip(nxt, lens, strict=True))


def headroom_covers_growth(t: Target, cfg: ServingConfig) -> bool:
    return extra(t, cfg) >= worst_growth(t, cfg)


def row_covers_growth(t: Target, cfg: ServingConfig) -> bool:
    """The row of the configuration's pool kind (its builder's width) holds C + the worst growth."""
    return row_width(t, cfg) - cfg.context_len >= worst_growth(t, cfg)


def row_is_page_aligned(t: Target, cfg: ServingConfig) -> tuple[bool, bool]:
    """(W >= ceil_P(C), W divisible by P) without speculation."""
    width, page = row_width(t, cfg), cfg.page_size
    return width >= ceil_to_page(cfg.context_len, page), width % page == 0


def guard_fires(t: Target, cfg: ServingConfig) -> tuple[bool, bool]:
    """Whether the target's sizing-module guard stops an allocation ending at 128, then 129, in a row 128 wide."""
    return t.sizing.row_guard_fires(cfg, 128, 128), t.sizing.row_guard_fires(cfg, 129, 128)


def aligned_lens(t: Target, cfg: ServingConfig) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """Two requests (committed, allocated) (65, 64) and (100, 192), reserve 16, page 64."""
    cur, nxt, need = t.sizing.page_aligned_decode_alloc_lens([(65, 64), (100, 192)], 16, 64)
    return tuple(cur), tuple(nxt), need


# -- the tables ----------------------------------------------------------------------


def spec(algorithm: str, steps: int, topk: int, drafts: int, **more: Any) -> dict[str, Any]:
    return dict(
        speculative_algorithm=algorithm,
        speculative_num_steps=steps,
        speculative_eagle_topk=topk,
        speculative_num_draft_tokens=drafts,
        **more,
    )


OLD_SIZING = releases("0.5.13", "0.5.15")  # mem_cache/common.py: headroom R only for page > 1 with topk > 1
NO_DCP = releases("0.5.13", "0.5.14")
BARE_PAGE_SIZING = releases("0.5.15", "0.5.18")  # DCP exists, the sizing reads page_size alone (#35424)
NO_DSPARK = releases("0.5.13", "0.5.15")
NO_UNO = releases("0.5.13", "0.5.19")
# Upstream's UNO tests pass (S, K, D) = (5, 1, 8) to the sizing functions; a launch resolves topk 1 to UNO's linear
# mode, S 1 (``_handle_uno``), the configuration a server runs and the one kept here: UNO's sizing reads D alone.
UNO_LAUNCHED = (1, 1, 8)

PAGE_1_GAP = "#33579: at page 1 the headroom is 4 + Dmax in every release (the reference and main close it)"
TOPK_1_GAP = "0.5.13-0.5.15 cover the reserve only for page > 1 with topk > 1 [cite: common-headroom]"
NO_TAIL = "0.5.13-0.5.15 cover the reserve without + page - 1 (their growth is exact) [cite: common-headroom]"
MAIN_ALIGNS = (
    "main aligns the row to the allocator page instead of adding a page tail to the headroom: "
    "safe for committed <= C - 4, not for every committed length upstream's sweep tries"
)
BARE_PAGE = "#35424: the sizing pages at page_size, not page_size * dcp, before 0.5.19"
EXACT_GROWTH = "#31616: growth nxt = c + R is not page-rounded before 0.5.16"


def headroom_rows() -> list[Row]:
    """test_req_to_token_row_headroom.py: the headroom holds the worst page-rounded decode growth."""
    rows = []
    for label, config in (
        ("DSPARK D17", spec("DSPARK", 1, 1, 17)),
        ("EAGLE 5,1,8", spec("EAGLE", 5, 1, 8)),
        ("EAGLE 3,2,6", spec("EAGLE", 3, 2, 6)),
    ):
        for page in (2, 8, 64, 256):
            differs = [Differ(frozenset({"main"}), False, MAIN_ALIGNS)]
            if label.startswith("DSPARK"):
                differs.append(Differ(NO_DSPARK, NA, "no DSPARK before 0.5.16 (spec_info.py)"))
            elif label == "EAGLE 5,1,8":
                differs.append(Differ(OLD_SIZING, False, TOPK_1_GAP))
            rows.append(
                Row(
                    f"row_headroom: {label} P{page}",
                    {**config, "page_size": page},
                    headroom_covers_growth,
                    True,
                    tuple(differs),
                )
            )
    rows.append(
        Row(
            "row_headroom: UNO 5,1,8 P1",
            spec("UNO", *UNO_LAUNCHED),
            headroom_covers_growth,
            True,
            (
                Differ(NO_UNO, NA, "no UNO before 0.5.20"),
                Differ(frozenset({"main"}), NA, "tests/sglang_shapes/main.py has no UNO branch"),
            ),
        )
    )
    return rows


def uno_rows() -> list[Row]:
    """test_uno_allocation_sizing.py: UNO keeps a clean-root slot (L = D + 1) and covers it at page 1."""
    return [
        Row(
            "uno_allocation_sizing: UNO D8 P1 -> (L, R, extra)",
            spec("UNO", *UNO_LAUNCHED),
            both(alloc_len, reserve, extra),
            (9, 18, 18),
            (
                Differ(NO_UNO, NA, "no UNO before 0.5.20"),
                Differ(frozenset({"main"}), NA, "tests/sglang_shapes/main.py has no UNO branch"),
            ),
        )
    ]


def allocation_sizing_rows() -> list[Row]:
    """test_allocation_sizing.py (main's design)."""
    not_aligned = "every release (and the reference) sizes the row C + extra, not page-aligned"
    rows = [
        Row("allocation_sizing: alloc page P64 dcp1", {"page_size": 64}, alloc_page, 64),
        Row(
            "allocation_sizing: alloc page P64 dcp4",
            {"page_size": 64, "attn_dcp_size": 4},
            alloc_page,
            256,
            (Differ(NO_DCP, NA, "no DCP before 0.5.15"), Differ(BARE_PAGE_SIZING, 64, BARE_PAGE)),
        ),
        Row(
            "allocation_sizing: row width P64 C131074",
            {"page_size": 64, "context_len": 131074},
            row_width,
            131136,
            (Differ(ALL_RELEASES | {"reference"}, 131078, not_aligned),),
        ),
        Row("allocation_sizing: row width P1 C4096", {}, row_width, 4100),
    ]
    for page in (1, 16, 64, 128):
        for context_len, unaligned in (
            (8 * page - 1, (True, False)),
            (8 * page, (True, False)),
            (8 * page + 1, (False, False)),
        ):
            differs = () if page == 1 else (Differ(ALL_RELEASES | {"reference"}, unaligned, not_aligned),)
            rows.append(
                Row(
                    f"allocation_sizing: row grid P{page} C{context_len}",
                    {"page_size": page, "context_len": context_len},
                    row_is_page_aligned,
                    (True, True),
                    differs,
                )
            )
    for label, config, needed, differs in (
        ("NGRAM K10 D12 P1", spec("NGRAM", 1, 10, 12), 24, (Differ(ALL_RELEASES, False, PAGE_1_GAP),)),
        ("DFLASH D16 P1", spec("DFLASH", 1, 1, 16), 32, (Differ(ALL_RELEASES, False, PAGE_1_GAP),)),
        ("EAGLE 3,4,8 P16", spec("EAGLE", 3, 4, 8, page_size=16), 256, ()),
        (
            "EAGLE 3,4,8 P16 dcp4",
            spec("EAGLE", 3, 4, 8, page_size=16, attn_dcp_size=4),
            1024,
            (Differ(NO_DCP, NA, "no DCP before 0.5.15"), Differ(BARE_PAGE_SIZING, False, BARE_PAGE)),
        ),
        (
            "EAGLE 3,4,8 P1 dcp4",
            spec("EAGLE", 3, 4, 8, attn_dcp_size=4),
            64,
            (Differ(NO_DCP, NA, "no DCP before 0.5.15"), Differ(BARE_PAGE_SIZING, False, BARE_PAGE)),
        ),
    ):
        rows.append(
            Row(f"allocation_sizing: headroom {label} >= {needed}", config, extra_at_least(needed), True, differs)
        )
    rows += [
        Row(
            "allocation_sizing: reserve at the allocator page, EAGLE 3,4,8 P16 dcp4",
            spec("EAGLE", 3, 4, 8, page_size=16, attn_dcp_size=4),
            reserve,
            1024,
            (Differ(NO_DCP, NA, "no DCP before 0.5.15"), Differ(BARE_PAGE_SIZING, 256, BARE_PAGE)),
        ),
        Row(
            "allocation_sizing: the row-width guard at 128 and 129 in a row 128 wide",
            spec("EAGLE", 3, 4, 8, page_size=16),
            guard_fires,
            (False, True),
            (
                Differ(
                    ALL_RELEASES | {"reference"},
                    (False, False),
                    "no sizing-module guard before main's assert_alloc_within_row_width",
                ),
            ),
        ),
    ]
    return rows


def older_rows() -> list[Row]:
    """Older stored versions of these tests (server-args, DSPARK, page-aligned growth, managers/utils designs)."""
    no_tail_or_aligned = (Differ(OLD_SIZING, 256, NO_TAIL), Differ(frozenset({"main"}), 256, MAIN_ALIGNS))
    return [
        Row("older: no spec -> (L, R, extra)", {}, both(alloc_len, reserve, extra), (1, 2, 4)),
        Row("older: EAGLE 3,4,20 P1 -> L", spec("EAGLE", 3, 4, 20), alloc_len, 20),
        # upstream's (5, 1, 7): server_args forces D = S + 1 at topk 1, so S = 6 gives its D = 7
        Row("older: EAGLE 6,1,7 P16 -> L", spec("EAGLE", 6, 1, 7, page_size=16), alloc_len, 7),
        Row(
            "older: EAGLE 5,4,6 P16 -> (L, R)",
            spec("EAGLE", 5, 4, 6, page_size=16),
            both(alloc_len, reserve),
            (128, 256),
        ),
        Row(
            "older: NGRAM K4 D20 P16 -> L (no draft KV: flat)",
            spec("NGRAM", 5, 4, 20, page_size=16),
            alloc_len,
            20,
            (
                Differ(
                    releases("0.5.13", "0.5.13"),
                    128,
                    "0.5.13's L has the tree term for NGRAM too [cite: tree-term-condition]",
                ),
            ),
        ),
        Row("older: EAGLE 5,4,6 P16 -> extra", spec("EAGLE", 5, 4, 6, page_size=16), extra, 271, no_tail_or_aligned),
        Row(
            "older: DSPARK D6 P256 -> (L, R, extra)",
            spec("DSPARK", 1, 1, 6, page_size=256),
            both(alloc_len, reserve, extra),
            (6, 12, 267),
            (Differ(NO_DSPARK, NA, "no DSPARK before 0.5.16"), Differ(frozenset({"main"}), (6, 12, 12), MAIN_ALIGNS)),
        ),
        Row(
            "older: DSPARK D6 P1 -> extra",
            spec("DSPARK", 1, 1, 6),
            extra,
            12,
            (
                Differ(NO_DSPARK, NA, "no DSPARK before 0.5.16"),
                Differ(releases("0.5.16", RELEASES[-1]), 10, PAGE_1_GAP),
            ),
        ),
        Row("older: EAGLE 4,2,6 P1 -> (L, R)", spec("EAGLE", 4, 2, 6), both(alloc_len, reserve), (8, 16)),
        Row("older: no spec P256 -> extra", {"page_size": 256}, extra, 4),
        Row(
            "older: page_aligned_decode_alloc_lens (65,64) (100,192) R16 P64",
            {},
            aligned_lens,
            ((64, 192), (128, 192), 64),
            (Differ(OLD_SIZING, ((64, 192), (81, 192), 17), EXACT_GROWTH),),
        ),
        Row(
            "older: EAGLE 3,2,4 P1 dcp4 -> (alloc page, L, extra)",
            spec("EAGLE", 3, 2, 4, attn_dcp_size=4),
            both(alloc_page, alloc_len, extra),
            (4, 16, 35),
            (
                Differ(NO_DCP, NA, "no DCP before 0.5.15"),
                Differ(BARE_PAGE_SIZING, (1, 6, 8), BARE_PAGE),
                Differ(frozenset({"main"}), (4, 16, 32), MAIN_ALIGNS),
            ),
        ),
        Row(
            "older: no spec P2 dcp4 -> extra 4 + 8 - 1 (an alloc_page_size design never shipped)",
            {"page_size": 2, "attn_dcp_size": 4},
            extra,
            11,
            (
                Differ(NO_DCP, NA, "no DCP before 0.5.15"),
                Differ(
                    (ALL_RELEASES - NO_DCP) | {"reference", "main"},
                    4,
                    "no release, main or the reference adds a page tail without speculation",
                ),
            ),
        ),
        Row(
            "older: EAGLE 3,2,4 P2 dcp4 -> L",
            spec("EAGLE", 3, 2, 4, page_size=2, attn_dcp_size=4),
            alloc_len,
            32,
            (Differ(NO_DCP, NA, "no DCP before 0.5.15"), Differ(BARE_PAGE_SIZING, 8, BARE_PAGE)),
        ),
        Row(
            "older: DSPARK D8 P1 -> (R, extra)",
            spec("DSPARK", 1, 1, 8),
            both(reserve, extra),
            (16, 16),
            (
                Differ(NO_DSPARK, NA, "no DSPARK before 0.5.16"),
                Differ(releases("0.5.16", RELEASES[-1]), (16, 12), PAGE_1_GAP),
            ),
        ),
        # a test that pinned the gap: EAGLE at page 1 keeps 4 + D
        Row(
            "older: EAGLE 7,1,8 P1 -> (R, extra)",
            spec("EAGLE", 7, 1, 8),
            both(reserve, extra),
            (16, 12),
            (Differ(frozenset({"reference", "main"}), (16, 16), "the page-1 fix (#33579 closed)"),),
        ),
        Row("older: EAGLE 5,3,10 P1 -> L", spec("EAGLE", 5, 3, 10), alloc_len, 15),
        Row("older: EAGLE 3,2,20 P1 -> L", spec("EAGLE", 3, 2, 20), alloc_len, 20),
        Row(
            "older: EAGLE 5,4,10 P16 -> L > 20 (the paged tree)",
            spec("EAGLE", 5, 4, 10, page_size=16),
            lambda t, cfg: alloc_len(t, cfg) > 20,
            True,
        ),
        Row(
            "older: EAGLE 15,1,16 P1 -> extra 4 + D",
            spec("EAGLE", 15, 1, 16),
            extra,
            20,
            (Differ(frozenset({"reference", "main"}), 32, "the page-1 fix (#33579 closed)"),),
        ),
        Row(
            "older: EAGLE 5,4,10 P16 -> extra > 4 + D (the tree is covered)",
            spec("EAGLE", 5, 4, 10, page_size=16),
            lambda t, cfg: extra(t, cfg) > 14,
            True,
        ),
    ]


def unified_rows() -> list[Row]:
    """The unified builders' rows (20fd295's intent), on the case 0.5.23's launch rules accept: EAGLE 3,1,4 P64."""
    return [
        Row(
            "row_headroom (unified): EAGLE 3,1,4 P64 on unified-mamba: the row holds the worst growth",
            spec("EAGLE", 3, 1, 4, page_size=64, kv_pool="unified-mamba"),
            row_covers_growth,
            True,
            (
                Differ(releases("0.5.13", "0.5.14"), NA, "no unified memory pool before 0.5.15"),
                Differ(releases("0.5.15", "0.5.21"), NA, "unified memory refuses EAGLE before 0.5.22"),
                Differ(
                    releases("0.5.22", RELEASES[-1]),
                    False,
                    "the unified Mamba builders size the row C + 4 + D (kv_cache_configurator.py 883-886)",
                ),
                Differ(frozenset({"main"}), False, MAIN_ALIGNS),
            ),
            on_shapes=False,
        )
    ]


ROWS = headroom_rows() + uno_rows() + allocation_sizing_rows() + older_rows() + unified_rows()


# -- the targets -----------------------------------------------------------------------

TARGETS = [
    ("reference", ()),
    ("main", ()),
    *((f"shape:{r}", ()) for r in RELEASES),
    *((f"wheel:{r}", (pytest.mark.network,)) for r in RELEASES),
]
CASES = [
    pytest.param(name, row, id=f"{name.replace(':', '-')}-{row.name}", marks=marks)
    for name, marks in TARGETS
    for row in ROWS
    if row.on_shapes or not name.startswith("shape:")
]
_RESOLVED: dict[tuple[str, str], Target] = {}


def target_of(name: str, request: pytest.FixtureRequest) -> tuple[Target, str]:
    """The target and the key its differences are listed under (reference, main, or the release number)."""
    if name.startswith("wheel:"):
        request.getfixturevalue("real_wheel_cache")  # the user's cache of real wheels, downloads allowed
    kind, _, release = name.partition(":")
    spec_text = {"reference": "reference", "main": str(MAIN)}.get(kind, f"sglang=={release}")
    key = (spec_text, os.environ.get("KVROW_FUZZ_CACHE", ""))
    if key not in _RESOLVED:
        _RESOLVED[key] = resolve_target(spec_text)
    return _RESOLVED[key], release or kind


@pytest.mark.parametrize("name, row", CASES)
def test_upstream_table_row(name: str, row: Row, request: pytest.FixtureRequest) -> None:
    target, key = target_of(name, request)
    cfg = ServingConfig.resolve(**{"context_len": CONTEXT, **row.config})
    want, reason = row.expected(key)
    refusal = target.revision.refuses(cfg)
    if want == NA:
        assert refusal is not None, f"{name} now launches {cfg.short()} (expected not: {reason})"
        return
    got = row.measure(target, cfg)  # the sizing functions answer even where a release runs the algorithm on v1
    because = f" (an expected difference: {reason})" if reason else " (upstream's value)"
    assert got == want, f"{name}: {row.name} gives {got!r}, expected {want!r}{because}"


def test_every_difference_differs_and_names_real_targets() -> None:
    """A listed difference is another value than upstream's, with a reason, on targets that exist, listed once."""
    known = ALL_RELEASES | {"reference", "main"}
    assert len({r.name for r in ROWS}) == len(ROWS)
    for row in ROWS:
        seen: set[str] = set()
        for d in row.differs:
            assert d.value != row.upstream and d.reason, row.name
            assert d.on and d.on <= known, (row.name, d.on - known)
            assert not d.on & seen, (row.name, d.on & seen)
            seen |= d.on


def test_main_headroom_takes_every_candidate_allocator_page() -> None:
    """test_allocation_sizing.py on main's own functions: candidate pages, and the reserve at a given page."""
    module = resolve_target(str(MAIN)).sizing.module
    candidates = module.functions["get_candidate_alloc_page_sizes"]
    reserve_at = module.functions["get_alloc_reserve_per_decode"]
    for dcp, pages in ((4, (16, 64)), (1, (16, 16))):
        cfg = ServingConfig.resolve(context_len=CONTEXT, **spec("EAGLE", 3, 4, 8, page_size=16, attn_dcp_size=dcp))
        with module.published.bound(cfg, cfg.launch_runtime):
            args = module.published.read("server_args")
            assert tuple(candidates(args)) == pages
            if dcp == 4:
                assert reserve_at(args, page_size=16) == 256
                assert reserve_at(args, page_size=64) == 1024
                assert reserve_at(args) == 256  # the default: server_args.page_size
