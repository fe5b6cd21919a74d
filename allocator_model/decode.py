"""The write paths that fill a request's ``req_to_token`` row: prefill and decode, per algorithm.

| path      | algorithms                                   | columns written per decode step      |
|-----------|----------------------------------------------|--------------------------------------|
| non-spec  | speculative decoding off                     | one column, at seq_len               |
| eagle     | EAGLE, EAGLE3, STANDALONE, FROZEN_KV_MTP, NGRAM | [a, ceil_P(c + R)), R from sizing |
| dflash    | DFLASH, DSPARK                               | [a, ceil_P(c + 2D)), own reserve     |
| uno       | UNO                                          | [a, ceil_P(c + R)), raises past W    |

P is the allocator's own page (``token_to_kv_pool_allocator.page_size``),
whatever the sizing module believes.  Every path allocates the new slots,
writes them through the unchecked kernel, and sets kv_allocated_len.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import Tensor

from fuzz.common.compat import StrEnum

from . import algorithms as algo
from .allocator import TokenToKVPoolAllocator
from .config import ServingConfig, SpecRuntime
from .guards import Guard
from .numeric import Int, full_like, maximum, or_one, where
from .req_to_token import ReqToTokenPool, WriteRecord
from .revisions import Revision
from .sizing import NON_SPEC_DECODE_COLUMNS, page_aligned_decode_alloc_len, spec_v2_tree
from .surface import Surface


class WritePath(StrEnum):
    """Which code path writes a request's row (the table above)."""

    PREFILL = "prefill"
    NON_SPEC = "non-spec"
    EAGLE = "eagle"
    DFLASH = "dflash"
    UNO = "uno"


class Refusal(StrEnum):
    """Why a write did not happen."""

    OUT_OF_MEMORY = "out of memory"  # the allocator cannot fit it: the scheduler retracts
    GUARD = "guard"  # one of SGLang's own checks of the allocation end against the row width stops the step


@dataclass
class Req:
    """The KV bookkeeping of one running request (SGLang's ``req.kv``)."""

    rid: int
    req_pool_idx: int  # its row of req_to_token
    kv_committed_len: int = 0
    kv_allocated_len: int = 0


@dataclass
class RowWrite:
    """One write into a row: what was asked, and what the kernel did."""

    rid: int
    path: WritePath
    reserve: int
    page: int
    cur: int
    nxt: int
    record: WriteRecord | None = None
    refusal: Refusal | None = None  # why nothing was written
    refused: str | None = None  # ... in words, for the story
    guard: Guard | None = None  # Refusal.GUARD: which of SGLang's checks stopped it

    def refuse(self, why: Refusal, text: str, guard: Guard | None = None) -> None:
        self.refusal, self.guard = why, guard
        self.refused = f"{guard.value if guard else why.value}: {text}"


def write_path(algorithm: str | None) -> WritePath:
    """The decode write path of a speculative algorithm (None: speculation off)."""
    if algorithm is None:
        return WritePath.NON_SPEC
    if algorithm in algo.DFLASH_FAMILY:
        return WritePath.DFLASH
    if algo.is_uno(algorithm):
        return WritePath.UNO
    return WritePath.EAGLE


def grows_unrounded(path: WritePath, revision: Revision) -> bool:
    """Whether the path grows kv_allocated_len by its own exact c + R rather than asking the sizing module.

    Non-spec decode writes one column at seq_len; 0.5.18's DFLASH/DSPARK
    grow by their unrounded reserve (#35265).  Every other path asks the
    sizing module, whose rounding is its own (``page_aligned_growth``).
    """
    return path is WritePath.NON_SPEC or (path is WritePath.DFLASH and not revision.dflash_page_rounded)


def dflash_reserve(num_draft_tokens: Int) -> Int:
    """DFLASH/DSPARK's own reserve, 2D: a double buffer of the current block, on its own code path.

    Not the sizing module's 2L, and sized for the batch's D, not Dmax.
    """
    return 2 * num_draft_tokens


def _last_loc(pool: ReqToTokenPool, req: Req, col: int) -> int | None:
    # The kernel reads through the flat offset too, so a spilled column is read back from where it landed.
    if col < 0:
        return None
    return int(pool.storage[req.req_pool_idx * pool.width + col])


def _allocate_and_write(pool: ReqToTokenPool, allocator: TokenToKVPoolAllocator, req: Req, w: RowWrite) -> RowWrite:
    slots = allocator.alloc_extend(req.rid, w.cur, w.nxt, _last_loc(pool, req, w.cur - 1))
    if slots is None:
        w.refuse(Refusal.OUT_OF_MEMORY, "the scheduler would retract")
        return w
    w.record = pool.write(req.req_pool_idx, w.cur, w.nxt, slots)
    req.kv_allocated_len = w.nxt
    return w


def prefill(pool: ReqToTokenPool, allocator: TokenToKVPoolAllocator, req: Req, seq_len: int) -> RowWrite:
    """Extend: columns [kv_allocated_len, seq_len); then a = c = seq_len (never past C)."""
    w = RowWrite(req.rid, WritePath.PREFILL, 0, allocator.page_size, req.kv_allocated_len, seq_len)
    _allocate_and_write(pool, allocator, req, w)
    if w.refusal is None:
        req.kv_committed_len = seq_len
    return w


def decode_reserve(cfg: ServingConfig, rt: SpecRuntime | None, sizing: Surface) -> int:
    """The reserve the path asks for: DFLASH/DSPARK reserve 2D themselves, the rest ask the sizing module."""
    path = write_path(cfg.speculative_algorithm)
    if path is WritePath.NON_SPEC:
        return NON_SPEC_DECODE_COLUMNS
    if path is WritePath.DFLASH:
        assert rt is not None
        return dflash_reserve(rt.num_draft_tokens)
    return sizing.alloc_reserve_per_decode(cfg, rt)


def decode_alloc_ends(
    path: WritePath, lens: Sequence[tuple[int, int]], reserve: int, page: int, sizing: Surface, revision: Revision
) -> list[int]:
    """nxt, the new kv_allocated_len, of each request (kv_committed_len, kv_allocated_len) on ``path``.

    Non-spec decode writes one column at seq_len; 0.5.18's DFLASH/DSPARK
    grow by their unrounded reserve; every other path asks the sizing module.
    """
    if path is WritePath.NON_SPEC:
        reserve = NON_SPEC_DECODE_COLUMNS  # one column, whatever was asked
    if grows_unrounded(path, revision):
        return [page_aligned_decode_alloc_len(c, a, reserve, page, aligned=False) for c, a in lens]
    _, nxts, _ = sizing.page_aligned_decode_alloc_lens(list(lens), reserve, page)
    return list(nxts)


def prepare_for_decode(
    pool: ReqToTokenPool,
    allocator: TokenToKVPoolAllocator,
    req: Req,
    cfg: ServingConfig,
    rt: SpecRuntime | None,
    sizing: Surface,
    revision: Revision,
    committed_len: int | None = None,
) -> RowWrite:
    """Allocate and record the KV one decode step of ``req`` may write.

    ``committed_len``: the kv_committed_len the scheduler allocates with when
    it differs from the request's (overlap mode counts the in-flight token).
    """
    path = write_path(cfg.speculative_algorithm)
    page = allocator.page_size
    c, a = req.kv_committed_len if committed_len is None else committed_len, req.kv_allocated_len
    reserve = decode_reserve(cfg, rt, sizing)
    (nxt,) = decode_alloc_ends(path, [(c, a)], reserve, page, sizing, revision)
    w = RowWrite(req.rid, path, reserve, page, a, nxt)
    guard = row_guard(path, nxt, pool.width, page, sizing, cfg, revision)
    if guard is not None:
        w.refuse(Refusal.GUARD, f"allocation end {nxt} passes the row width {pool.width}", guard)
        return w
    return _allocate_and_write(pool, allocator, req, w)


def row_guard(
    path: WritePath, nxt: int, width: int, page: int, sizing: Surface, cfg: ServingConfig, revision: Revision
) -> Guard | None:
    """The check of SGLang's own that stops a decode allocation ending at ``nxt`` in a row ``width`` wide, if any.

    UNO checks in its decode path (every release that has UNO); the EAGLE
    path asserts when its allocator page > 1 and topk > 1 (``Guard``); a
    sizing module with a row-width guard (SGLang main) checks every
    speculative allocation through it.  Each runs before the write.
    """
    if nxt <= width and path is WritePath.NON_SPEC:
        return None
    if path is WritePath.UNO and nxt > width:
        return Guard.UNO_ROW
    if path is not WritePath.NON_SPEC and sizing.row_guard_fires(cfg, nxt, width):
        return Guard.ROW_WIDTH  # the sizing module's own guard (main) speaks for the tree it comes from
    if revision.eagle_tree_assert and eagle_tree_guarded(path, page, cfg.topk) and nxt > width:
        return Guard.EAGLE_TREE_ROW
    return None


def eagle_tree_guarded(path: WritePath, page: Int, topk: Int) -> bool | Tensor:
    """Whether EAGLE's prepare-for-decode assert checks the allocation end: its path, allocator page > 1, topk > 1."""
    return (path is WritePath.EAGLE) & (page > 1) & (topk > 1)


def commit(req: Req, accepted: int) -> None:
    """Verify accepted ``accepted`` tokens (their KV is final now)."""
    req.kv_committed_len += accepted


def flat_draft_span(algorithm: str | None, num_steps: Int, topk: Int, draft_tokens: Int) -> Int:
    """Columns past the device seq_len the draft and verify phases touch outside the spec v2 tree.

    One column without speculation; UNO's Q draft slots and the clean root
    (D + 1); NGRAM only the verify block (D); otherwise the draft chains or
    the verify block, whichever is longer: max(S * K, D), S 0 counting as 1.
    """
    if algorithm is None:
        return full_like(draft_tokens, NON_SPEC_DECODE_COLUMNS)
    if algo.is_uno(algorithm):
        return draft_tokens + 1  # Q draft slots and the clean root
    if not algo.has_draft_kv(algorithm):
        return draft_tokens  # NGRAM: only the verify block
    return maximum(or_one(num_steps) * topk, draft_tokens)


def tree_draft_span(page_offset: Int, num_steps: Int, topk: Int, page: Int) -> Int:
    """Columns past the device seq_len's page base pb the spec v2 tree touches, seq_len at ``page_offset`` lp.

    Each of the K branches has its own nnp = ceil((lp + S) / P) pages (at
    most ``sizing.tree_pages_per_branch(page, S)``); branch t's draft step s
    sits at pb + t * nnp * P + lp + s, so the last branch ends at
    (K - 1) * nnp * P + max(lp + S, P) past pb.
    """
    nnp = -(-(page_offset + num_steps) // page)
    return (topk - 1) * nnp * page + maximum(page_offset + num_steps, page)


def draft_end(
    algorithm: str | None, num_steps: Int, topk: Int, draft_tokens: Int, device_seq_len: Int, page: Int
) -> Int:
    """The highest column (exclusive) the draft and verify phases write for one request.

    It must stay <= kv_allocated_len, or the draft reads stale slot ids and
    writes KV into slots the request does not own.  The spec v2 tree (page >
    1, topk > 1, draft KV) gives each of the K branches its own
    ``tree_pages_per_branch`` pages after the device seq_len's page base pb;
    branch t's draft step s sits at pb + t*nnp*P + lp + s.  Works on ints
    (``draft_extent``) and on tensors (``closed_form.draft_extent``).
    """
    flat = device_seq_len + flat_draft_span(algorithm, num_steps, topk, draft_tokens)
    if not algo.drafts_tree(algorithm):
        return flat
    lp = device_seq_len % page
    tree = device_seq_len - lp + tree_draft_span(lp, or_one(num_steps), topk, page)
    return where(spec_v2_tree(page, topk), tree, flat)


def draft_extent(cfg: ServingConfig, rt: SpecRuntime | None, device_seq_len: int, page: int) -> int:
    """``draft_end`` of one request of ``cfg`` whose batch runs the spec shape ``rt`` (None: speculation off)."""
    if rt is None:
        return draft_end(None, 0, 1, 0, device_seq_len, page)
    return draft_end(cfg.speculative_algorithm, rt.num_steps, cfg.topk, rt.num_draft_tokens, device_seq_len, page)
