"""The bounded configuration space both samplers draw from (Hypothesis and uniform).

Page sizes: every power of two up to 256 and a few others (backends force
16..128; nothing forbids 3 or 48).  DCP sizes up to 16.  Context lengths are
drawn as m * P_a + r so every residue modulo the allocator page is reachable,
not only powers of two.
"""

PAGE_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 3, 12, 48)
DCP_SIZES = (1, 2, 4, 8, 16, 3, 6)
MAX_STEPS = 16
MAX_TOPK = 16
MAX_DRAFT_TOKENS = 64
UNO_MAX_DRAFT_TOKENS = 128
MAX_RUNNING_REQUESTS = (2, 8)
# Context lengths stay below this many tokens (times at most 2 for big pages):
# long enough for every regime, small enough for a real tensor per example.
CONTEXT_SPAN = 1 << 15
MIN_CONTEXT = 8


def context_pages_range(alloc_page: int) -> tuple[int, int]:
    """The range of m in C = m * P_a + r."""
    lo = max(1, -(-MIN_CONTEXT // alloc_page))
    return lo, max(lo, CONTEXT_SPAN // alloc_page)


def near_limit_gap_max(bound: int, alloc_page: int, max_draft_tokens: int | None) -> int:
    """How far below the committed-length bound lengths are drawn: about one allocator page.

    The write end ceil_P(c + R) never decreases with c, so the worst write is
    at the bound itself; a gap of up to a page (plus one draft block) still
    visits every page offset of c for the tree layout and the alignment checks.
    """
    return max(0, min(bound - 1, alloc_page + (max_draft_tokens or 1)))
