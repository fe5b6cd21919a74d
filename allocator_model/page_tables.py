"""The attention backends' CUDA-graph page tables: a row per batch position, a column per KV page.

A backend captured in a CUDA graph keeps fixed buffers ``[max_bs, width]`` and refills them at each replay from
``req_to_token``: row i holds the pages of the batch's request i.  The kernel then reads each row up to the length
the backend publishes to it (``cache_seqlens``).  The width is sized from one length (FA3: the model's context length,
in pages) while the published length is another (the device's ``seq_lens`` plus the draft tokens a verify or
draft-extend step appends).  Near the context limit the second outgrows the first: a builder that clamps its writes
at the width leaves the kernel reading past the row (the next batch row's pages, or past the buffer); one that does
not clamp writes into the next row.

A ``Build`` is one builder's run for one request alone in a one-row bucket (so nothing of a later row hides its
spill): what SGLang's own builders did (``fuzz.engines.sglang.real.runtime.attention``), or the model's twin here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from torch import Tensor

from fuzz.common.compat import StrEnum

from . import algorithms as algo
from .attention_backends import DRAFT_KV_INDICES_BACKENDS as DRAFT_KV_INDICES_BACKENDS  # the tables' backends, kept
from .attention_backends import DRAFT_ROWS_ASSERTED as DRAFT_ROWS_ASSERTED  # importable from here
from .attention_backends import FLASHMLA_BLOCK_TOKENS as FLASHMLA_BLOCK_TOKENS
from .attention_backends import FLASHMLA_PAGE as FLASHMLA_PAGE
from .attention_backends import TRTLLM_BLOCK_TOKENS as TRTLLM_BLOCK_TOKENS
from .attention_backends import AttentionBackend as AttentionBackend
from .config import ServingConfig, SpecRuntime
from .guards import Guard
from .numeric import Int, ceil_div, lcm


class Mode(StrEnum):
    """The forward modes whose CUDA-graph metadata a decode step rebuilds (SGLang's ``ForwardMode`` names)."""

    DECODE = "decode"  # no speculation: publishes seq
    DRAFT_DECODE = "draft_decode"  # the draft model's step s (0 .. S-2): publishes seq + s + 1
    TARGET_VERIFY = "target_verify"  # the target verifies D drafts: publishes seq + D
    DRAFT_EXTEND = "draft_extend"  # the draft model extends by D after verify: publishes seq + D


class TableWidth(StrEnum):
    """What a backend's CUDA-graph page table is sized from."""

    CONTEXT = "context"  # ceil(context_len / page): the model's context length (upstream's FA3)
    ROW = "row"  # ceil(W / page): the req_to_token row it copies (sized with the headroom; the corrected model)
    # (context_len + page) // page: the context's whole pages plus one (upstream's FlashMLA [cite: flashmla-width]):
    # one page more than CONTEXT where the page divides the context, the same elsewhere
    CONTEXT_NEXT_PAGE = "context-next-page"


@dataclass(frozen=True)
class Build:
    """One builder's run on one request alone in a one-row bucket, guard rows below it.

    ``written``: the end of the columns ``[0, written)`` of its own row the builder changed (0: none; columns are
    pages, or tokens on a backend whose table ``counts_tokens``, whose ``page_size`` is then 1);
    ``spilled``: how many columns past the row's end it wrote (into the next row at offset ``row * width + col``,
    a guard row here); ``published``: the tokens the kernel reads, ``ceil(published / page)`` pages of the row;
    ``stopped_by``: SGLang's own check that refused the build (its assert): nothing written, nothing read, the
    step raises on a server (``published`` is then what the step asked to store, ``stored_length``);
    ``foreign``: how many of the page indices in the row's used part (the columns both written and read) are not
    pages of the request's own ``req_to_token`` row (a builder reading that row past its width reads the next
    request's: ``foreign_pages``).
    """

    mode: Mode
    step: int | None  # the draft step (DRAFT_DECODE), else None
    buffer: str  # SGLang's name of the buffer: "target_verify_metadata['page_table']"
    width: int  # pages per row (``buffer.shape[1]``)
    page_size: int
    written: int
    spilled: int
    published: int
    stopped_by: str | None = None
    foreign: int = 0

    @property
    def read_pages(self) -> int:
        """The pages the kernel reads of the row: the published length in whole pages."""
        return pages(self.published, self.page_size)

    @property
    def used(self) -> int:
        """The columns of the row the kernel reads that this build wrote."""
        return min(self.written, self.read_pages)

    @property
    def verdict(self) -> tuple[int, int, int, bool, int]:
        """What a verdict reads of a build (the width, the spill, the published length, whether it was stopped, the
        foreign pages): two builds equal here are judged alike, whoever made them."""
        return self.width, self.spilled, self.published, self.stopped_by is not None, self.foreign

    @property
    def label(self) -> str:
        return self.mode.value if self.step is None else f"{self.mode.value} step {self.step}"


def pages(tokens: Int, page: Int) -> Int:
    """Whole pages of ``tokens`` (ints or tensors alike)."""
    return ceil_div(tokens, page)


# SGLang's names of a backend's CUDA-graph page tables, per mode (topk 1): FA3's, which trtllm_mha's mirror (the
# same dictionaries and keys in its ``init_cuda_graph_state``); FlashMLA fills one buffer in every mode (each of
# its backends its own: the target's, each draft step's, the draft's extend).
GRAPH_BUFFERS: dict[Mode, str] = {
    Mode.DECODE: "decode_cuda_graph_metadata['page_table']",
    Mode.DRAFT_DECODE: "decode_cuda_graph_metadata['page_table_draft_decode']",
    Mode.TARGET_VERIFY: "target_verify_metadata['page_table']",
    Mode.DRAFT_EXTEND: "draft_extend_metadata['page_table']",
}
FLASHMLA_BUFFER = "cuda_graph_kv_indices"
TRTLLM_MLA_BUFFER = "decode_cuda_graph_kv_indices"  # trtllm_mla's one buffer, every mode's rows views of it
# triton's and FlashInfer's draft decode: the multi-step backend's, a row per draft step (each step's backend reads one)
DRAFT_KV_INDICES_BUFFER = "cuda_graph_kv_indices"


def graph_buffer(backend: AttentionBackend, mode: Mode) -> str:
    """SGLang's name of the buffer ``backend`` fills in ``mode``."""
    one = {
        AttentionBackend.FLASHMLA: FLASHMLA_BUFFER,
        AttentionBackend.TRTLLM_MLA: TRTLLM_MLA_BUFFER,
        **dict.fromkeys(DRAFT_KV_INDICES_BACKENDS, DRAFT_KV_INDICES_BUFFER),
    }
    return one.get(backend) or GRAPH_BUFFERS[mode]


def steps(
    cfg: ServingConfig, rt: SpecRuntime | None, backend: AttentionBackend = AttentionBackend.FA3
) -> Iterator[tuple[Mode, int | None]]:
    """The modes one decode step of ``cfg`` runs through a backend's CUDA-graph metadata, in order.

    No speculation: the decode.  The EAGLE family (a draft model): its S - 1 draft decode steps after the first
    (on a backend that ``fills_every_draft_step``, all S rows its kernel fills, from S = 2: SGLang builds no
    multi-step draft backend for one step), the target's verify, the draft's extend.  NGRAM and the DFLASH
    family: the target's verify.  Topk > 1 runs other tables (its prefix and expand tables), and UNO its own
    verify layout: none here (``judged``).
    """
    if rt is None:
        yield Mode.DECODE, None
        return
    if not judged(cfg.speculative_algorithm, cfg.topk):
        return
    if cfg.speculative_algorithm in algo.EAGLE_FAMILY:
        rows = rt.num_steps if backend.fills_every_draft_step and rt.num_steps >= 2 else rt.num_steps - 1
        for s in range(max(0, rows)):
            yield Mode.DRAFT_DECODE, s
    yield Mode.TARGET_VERIFY, None
    if cfg.speculative_algorithm in algo.EAGLE_FAMILY:
        yield Mode.DRAFT_EXTEND, None


def judged(algorithm: str | None, topk: Int) -> bool | Tensor:
    """Whether this table's modes cover a launch: none or any algorithm but UNO, at topk 1 (per element where
    ``topk`` is a tensor: what the proof counts as judged, and ``reach_grid`` reaches)."""
    if algorithm is None:
        return True
    if algo.is_uno(algorithm):
        return False
    return topk == 1


# What the tables of ``steps`` judge, as a verdict says it: a launch outside it is never called clean.
JUDGED_LAUNCHES = "topk 1, no speculation or any algorithm but UNO"


def published(
    mode: Mode, step: int | None, seq_len: int, rt: SpecRuntime | None, backend: AttentionBackend = AttentionBackend.FA3
) -> int:
    """The length a mode publishes to the kernel, from the device's ``seq_lens``: decode the length itself, draft
    step s the length plus s + 1 (the length itself on a backend whose steps do not publish their step; 0 for the
    row of step S - 1 a backend that ``fills_every_draft_step`` fills and no step reads), verify and draft extend
    the length plus the D draft tokens."""
    if mode is Mode.DECODE:
        return seq_len
    assert rt is not None  # the speculative modes run with a shape
    if mode is Mode.DRAFT_DECODE and backend.fills_every_draft_step and step == rt.num_steps - 1:
        return 0
    if mode is Mode.DRAFT_DECODE:
        return seq_len + ((step or 0) + 1 if backend.draft_steps_publish_their_step else 0)
    return seq_len + rt.num_draft_tokens


def stored_length(mode: Mode, step: int | None, seq_len: int, rt: SpecRuntime | None, backend: AttentionBackend) -> int:
    """The tokens a mode's builder stores for the request: the length it publishes; on a backend that
    ``fills_every_draft_step``, each draft step's row its own ``seq + s + 1`` (its kernel stores that whatever the
    step publishes: the row of step S - 1, which no step reads, and FlashInfer MLA's steps, which publish ``seq``)."""
    if mode is Mode.DRAFT_DECODE and backend.fills_every_draft_step:
        return seq_len + (step or 0) + 1
    return published(mode, step, seq_len, rt, backend)


def widths(sized_from: TableWidth, context_len: Int, row_width: Int, page: Int) -> Int:
    """The pages of a row sized from ``sized_from``, unpadded (``GraphSizing.widths_of`` pads them), of ints or
    tensors alike: the context's (``CONTEXT``), one past its whole pages (``CONTEXT_NEXT_PAGE``) or the
    ``req_to_token`` row's (``ROW``)."""
    if sized_from is TableWidth.CONTEXT_NEXT_PAGE:
        return (context_len + page) // page
    return pages(context_len if sized_from is TableWidth.CONTEXT else row_width, page)


def foreign_pages(used: int, row_width: int, page: int) -> int:
    """Of a row's first ``used`` pages, copied from the request's ``req_to_token`` row (page j from its column
    j * P), how many come from past that row's ``row_width`` columns: the next request's row, as the flat
    ``req_to_token`` lays it (a builder that copies its pages in its own row and at its stride, as SGLang's do)."""
    return max(0, used - pages(row_width, page))


def clamped_end(need: int, w: int, block_tokens: int | None, page: int) -> int:
    """The end of the pages a builder writes of its row for a length of ``need`` pages.

    Clamped (``block_tokens`` None): ``min(need, w)``.  A grid of blocks of ``block_tokens`` tokens over the
    width, each masked by the length but not the width: ``min(need, blocks * block)``, past ``w`` when the
    width is no whole number of blocks.  ``LENGTH_GRID`` (0): a loop over the length itself, which no width
    bounds: ``need``.
    """
    if block_tokens is None:
        return min(need, w)
    if block_tokens == LENGTH_GRID:
        return need
    per_block = block_tokens // page
    return min(need, pages(w, per_block) * per_block)


DECODE_ASSERT = Guard.BUFFER_FITS.value
# A builder's ``block_tokens`` where it loops over the published length itself (triton's draft kernel: ``cdiv(seq_len,
# BLOCK)`` blocks, each masked by the length): nothing bounds its writes but the length.
LENGTH_GRID = 0  # SGLang's check that a decode's pages fit its graph buffer


@dataclass(frozen=True)
class GraphSizing:
    """What a backend's CUDA-graph builders do, as the twin and the closed form take it: the width's source; the
    modes whose builder masks its writes by the published length alone over a grid of ``block_tokens``-token
    blocks (``unclamped``: the rest clamp at the width); the modes whose builder first asserts the pages fit
    (``asserts``: a build past the width is stopped, nothing written)."""

    width: TableWidth
    block_tokens: int | None = None
    unclamped: frozenset[Mode] = frozenset()
    asserts: frozenset[Mode] = frozenset()
    backend: AttentionBackend = AttentionBackend.FA3  # whose buffers, and what its draft steps publish
    modes: frozenset[Mode] = frozenset(Mode)  # the modes this backend builds (another runs the rest: not its table)
    # token multiples the width is padded to, in whole pages (trtllm_mla's ``_calc_padded_blocks``: trtllm-gen's
    # 128 tokens and its builder's 4096-token grid block [cite: trtllm-mla-width]); () leaves it as sized
    pad_to: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.unclamped and self.block_tokens is None:
            raise ValueError("a builder that does not clamp masks over a grid (or the length: LENGTH_GRID)")

    @classmethod
    def draft_kv_indices(cls, sized_from: TableWidth, backend: AttentionBackend) -> GraphSizing:
        """A multi-step draft's decode kv_indices (triton's, FlashInfer's): a row per draft step sized from
        ``sized_from``, each step's ``seq + s + 1`` slots stored by a kernel that loops over that length alone
        (``LENGTH_GRID``); on a backend of ``DRAFT_ROWS_ASSERTED``, SGLang first asserts that every step's slots fit
        a row (FlashInfer's ``assert_buffer_fits``, over all S steps at once: it stops every step or none)."""
        draft = frozenset({Mode.DRAFT_DECODE})
        asserts = draft if backend in DRAFT_ROWS_ASSERTED else frozenset()
        return cls(sized_from, LENGTH_GRID, draft, asserts, backend=backend, modes=draft)

    def width_of(self, cfg: ServingConfig, row_width: int) -> int:
        """The pages of a row of this backend's table for ``cfg`` (its ``req_to_token`` row ``row_width`` wide)."""
        return int(self.widths_of(cfg.context_len, row_width, cfg.page_size))

    def unit(self, page: Int) -> Int:
        """The tokens one column of the table holds at the launch's ``page``: a page, or one token where the
        backend ``counts_tokens``."""
        return page // page if self.backend.counts_tokens else page

    def widths_of(self, context_len: Int, row_width: Int, page: Int) -> Int:
        """``width_of`` of ints or tensors alike: the width's source in columns (``unit``), padded to a whole
        number of each ``pad_to`` multiple's pages (their least common multiple)."""
        page = self.unit(page)
        w = widths(self.width, context_len, row_width, page)
        if not self.pad_to:
            return w
        per = self.pad_pages(page)
        return ceil_div(w, per) * per

    def pad_pages(self, page: Int) -> Int:
        """The pages a width is padded to a multiple of: the least common multiple of each ``pad_to`` multiple's
        pages (1: unpadded)."""
        per: Int = page // page
        for tokens in self.pad_to:
            per = lcm(per, tokens // page)
        return per

    def block(self, mode: Mode) -> int | None:
        """The grid block of ``mode``'s builder where it masks by length alone; None: it clamps at the width."""
        return self.block_tokens if mode in self.unclamped else None


# The paddings of a width the closed form knows: none, and trtllm_mla's (to trtllm-gen's 128 tokens and the 4096-token
# grid block of the builder it shares with FlashMLA).
WIDTH_PADS: tuple[tuple[int, ...], ...] = ((), (TRTLLM_BLOCK_TOKENS, FLASHMLA_BLOCK_TOKENS))
# The backends whose tables ``create_flashmla_kv_indices_triton`` fills (the MLA ones).
KV_INDICES_BACKENDS = (AttentionBackend.FLASHMLA, AttentionBackend.TRTLLM_MLA)


def kv_indices_sizing(backend: AttentionBackend, sized_from: TableWidth, flashmla_draft_extend: bool) -> GraphSizing:
    """An MLA backend's table, filled in every mode it builds by ``create_flashmla_kv_indices_triton``, whose
    stores are masked by the published length alone over its 4096-token grid blocks.  Upstream (``sized_from``
    CONTEXT) FlashMLA's is one page past the context's whole pages, trtllm_mla's the context's pages padded to whole
    blocks (and trtllm-gen's 128 tokens): its grid ends with its width.  ROW: the row's pages (trtllm_mla's padded
    alike).  FlashMLA builds the draft's extend only where ``flashmla_draft_extend``."""
    if backend is AttentionBackend.FLASHMLA:
        w = TableWidth.CONTEXT_NEXT_PAGE if sized_from is TableWidth.CONTEXT else sized_from
        modes = frozenset(Mode) - (set() if flashmla_draft_extend else {Mode.DRAFT_EXTEND})
        return GraphSizing(w, FLASHMLA_BLOCK_TOKENS, modes, backend=backend, modes=modes)
    return GraphSizing(sized_from, FLASHMLA_BLOCK_TOKENS, frozenset(Mode), backend=backend, pad_to=WIDTH_PADS[1])


def graph_builds(
    cfg: ServingConfig, rt: SpecRuntime | None, seq_len: int, sizing: GraphSizing, row_width: int
) -> list[Build]:
    """The model's twin of a backend's CUDA-graph builders for one request at device length ``seq_len``.

    Every mode's builder writes its row's pages up to the published length, clamped at the width, but a builder
    that masks on the length alone over its grid (``sizing.unclamped``); a mode whose builder asserts first
    (``sizing.asserts``) is stopped where the pages pass the width.
    """
    out = []
    w, unit = sizing.width_of(cfg, row_width), int(sizing.unit(cfg.page_size))
    # one launch fills every draft step's row: its assert (where it has one) checks the last, longest one first
    every = rt is not None and sizing.backend.fills_every_draft_step and Mode.DRAFT_DECODE in sizing.asserts
    all_stopped = every and pages(seq_len + rt.num_steps, unit) > w  # type: ignore[union-attr]
    for mode, step in steps(cfg, rt, sizing.backend):
        if mode not in sizing.modes:
            continue
        length = published(mode, step, seq_len, rt, sizing.backend)
        asked = stored_length(mode, step, seq_len, rt, sizing.backend)  # a row no step reads: its step's own
        stored, buffer = pages(asked, unit), graph_buffer(sizing.backend, mode)
        if mode in sizing.asserts and (all_stopped if every else stored > w):
            out.append(Build(mode, step, buffer, w, unit, 0, 0, asked, DECODE_ASSERT))
            continue
        end = clamped_end(stored, w, sizing.block(mode), unit)
        written = min(end, w)
        foreign = foreign_pages(min(written, pages(length, unit)), row_width, unit)
        out.append(Build(mode, step, buffer, w, unit, written, max(0, end - w), length, None, foreign))
    return out
