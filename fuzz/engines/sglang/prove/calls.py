"""The sizing-call adapter for targets that are not a model: their own functions, once per distinct point.

A model target's sizing numbers come from the revision's formulas,
vectorized (``closed_form.model_decode_rows``).  Any other target (a
release wheel, a file, the installed SGLang) is asked: ``called_rows``
calls its sizing functions once per launch configuration (and once per
run-time shape for the reserve), ``growth_kind`` once per distinct
(reserve, page) to read its growth rule; everything after is vectorized.
A function that raises marks its configurations ``sizing-raised``; a
growth rule that is neither page-rounded nor exact marks them
``unproven``.  ``CountingSizing`` counts the calls (what ``--calls`` costs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from allocator_model import closed_form as cf
from allocator_model.config import ServingConfig
from allocator_model.decode import WritePath, decode_alloc_ends, decode_reserve, write_path
from allocator_model.numeric import Int, ceil_to_page, full_like, where
from allocator_model.surface import Entry, Surface
from fuzz.common.compat import StrEnum
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.targets.base import TargetCallError

SIZING_CONTEXT_LEN = 1 << 16  # any length: sizing does not read it


class Growth(StrEnum):
    """How a target grows kv_allocated_len for one (reserve, page)."""

    ALIGNED = "aligned"  # ceil_P(c + R)
    EXACT = "exact"  # c + R
    OTHER = "other"  # neither: the proof cannot read it (unproven)
    RAISED = "raised"  # the sizing function raised


class CountingSizing(Surface):
    """A target's sizing surface that counts calls per entry (what --calls costs)."""

    def __init__(self, sizing: Surface) -> None:
        self._sizing = sizing
        self.calls: dict[str, int] = {}
        self.growth_memo: dict[tuple[Any, ...], Growth] = {}

    def growth(self, key: tuple[Any, ...], read: Callable[[], Growth]) -> Growth:
        """A growth rule read once per (write path, reserve, page) over a sweep (``growth_kind`` is pure)."""
        if key not in self.growth_memo:
            self.growth_memo[key] = read()
        return self.growth_memo[key]

    def count(self, name: str, calls: int) -> None:
        """``calls`` calls of ``name`` made elsewhere (a traced call counts one per path)."""
        self.calls[name] = self.calls.get(name, 0) + calls

    def call(self, entry: Entry, *args: Any) -> Any:
        self.count(entry.name, 1)
        return self._sizing.call(entry, *args)


@dataclass
class CalledRows:
    """A block's sizing numbers as the target's functions gave them."""

    rows: cf.DecodeRows  # the rows with a recognised growth rule
    raised: torch.Tensor  # per configuration: a sizing function raised (a finding)
    unproven: torch.Tensor  # per configuration: some growth rule is neither page-rounded nor exact
    errors: dict[int, str] = field(default_factory=dict)  # configuration index -> what its first raise said
    first_error: str | None = None


def called_rows(
    target: SGLangTarget, sizing: CountingSizing, g: cf.LaunchGrid, tick: Callable[[], None] | None = None
) -> CalledRows:
    """The sizing numbers of every configuration from the target's functions, one call per distinct point.

    ``tick`` is called once per configuration (the sweep's progress).
    """
    return finish_rows(target, sizing, g, *called_columns(sizing, g, tick))


Columns = tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, dict[int, str]]


def called_columns(sizing: CountingSizing, g: cf.LaunchGrid, tick: Callable[[], None] | None = None) -> Columns:
    """(``ROW_COLUMNS`` per (configuration, run-time shape), raised, odd row rule, errors), one call at a time.

    The plain Python program every faster path is held equal to
    (``traced_rows`` checks a sample of each block against it).
    """
    cols: dict[str, list[int]] = {k: [] for k in ROW_COLUMNS}
    raised = torch.zeros(len(g), dtype=torch.bool)
    odd_rows = torch.zeros(len(g), dtype=torch.bool)
    errors: dict[int, str] = {}
    for i in range(len(g)):
        if tick:
            tick()
        cfg = ServingConfig.resolve(context_len=SIZING_CONTEXT_LEN, **g.config_kwargs(i))
        try:
            extra = int(sizing.req_to_token_extra_context_len(cfg))
            page = int(sizing.allocator_page_size(cfg))
            rule = row_alignment(cfg, sizing, extra, page)
            align, extra = rule if rule is not None else (1, extra)
            width = ceil_to_page(cfg.context_len + extra, align)
            guarded = bool(sizing.row_guard_fires(cfg, width + 1, width))
            shapes = [(rt, int(decode_reserve(cfg, rt, sizing))) for rt in cfg.runtimes()]
        except TargetCallError as e:
            raised[i] = True
            errors[i] = f"{cfg.short()}: {e}"
            continue
        if rule is None:
            odd_rows[i] = True
            continue
        for rt, reserve in shapes:
            for k, v in zip(
                cols,
                (
                    i,
                    rt.num_steps if rt else 0,
                    rt.num_draft_tokens if rt else 0,
                    page,
                    reserve,
                    extra,
                    align,
                    guarded,
                ),
                strict=True,
            ):
                cols[k].append(v)
    return {k: torch.tensor(v, dtype=cf.INT) for k, v in cols.items()}, raised, odd_rows, errors


ROW_COLUMNS = ("config", "steps", "drafts", "page", "reserve", "extra", "row_align", "guarded")
PAIR_KEY = 1 << 32  # (reserve, page) as one int64: reserve * PAIR_KEY + page, page < 2^31
Pair = tuple[int, int]  # (reserve, allocator page)
GrowthReader = Callable[[SGLangTarget, "CountingSizing", WritePath, list[Pair]], tuple[list["Growth"], dict[int, str]]]


def growth_kinds(
    target: SGLangTarget, sizing: CountingSizing, path: WritePath, pairs: list[Pair]
) -> tuple[list[Growth], dict[int, str]]:
    """``growth_kind`` of each (reserve, page) pair, one call each; (kinds, what raised, by pair index)."""
    kinds: list[Growth] = []
    errors: dict[int, str] = {}
    for j, (reserve, page) in enumerate(pairs):
        try:
            kinds.append(
                sizing.growth(
                    (path, reserve, page), functools.partial(growth_kind, target, sizing, path, reserve, page)
                )
            )
        except TargetCallError as e:
            kinds.append(Growth.RAISED)
            errors[j] = f"page_aligned_decode_alloc_lens(reserve={reserve}, page={page}): {e}"
    return kinds, errors


def finish_rows(
    target: SGLangTarget,
    sizing: CountingSizing,
    g: cf.LaunchGrid,
    t: dict[str, torch.Tensor],
    raised: torch.Tensor,
    odd_rows: torch.Tensor,
    errors: Mapping[int, str],
    growth: GrowthReader | None = None,
) -> CalledRows:
    """The rows of the configurations that neither raised nor have an odd row rule, growth rule read per (R, P).

    ``t`` has one entry per (configuration, run-time shape) in ``ROW_COLUMNS``
    (``config`` indexes ``g``); ``growth_kind`` is called once per distinct
    (reserve, page) pair, and a growth rule that raised marks its configurations.
    """
    path = write_path(g.algorithm)
    growth = growth or growth_kinds
    errors = dict(errors) if not isinstance(errors, dict) else errors
    first_error = next(iter(errors.values()), None) if errors else None
    key = t["reserve"].to(torch.int64) * PAIR_KEY + t["page"].to(torch.int64)  # one int per (reserve, page)
    unique, inverse = torch.unique(key, return_inverse=True)
    pairs = [(int(k) // PAIR_KEY, int(k) % PAIR_KEY) for k in unique.tolist()]
    kinds, growth_errors = growth(target, sizing, path, pairs)
    first_error = first_error or next(iter(growth_errors.values()), None)
    code = torch.tensor([list(Growth).index(k) for k in kinds], dtype=cf.INT)[inverse] if kinds else inverse

    def rows_of(kind: Growth) -> torch.Tensor:
        return code == list(Growth).index(kind)

    raised = raised.clone()
    raised[t["config"][rows_of(Growth.RAISED)]] = True
    unproven = odd_rows.clone()
    unproven[t["config"][rows_of(Growth.OTHER)]] = True
    for row in rows_of(Growth.RAISED).nonzero().flatten().tolist():
        errors.setdefault(int(t["config"][row]), growth_errors[int(inverse[row])])
    rows = cf.DecodeRows(
        t["config"],
        t["steps"],
        t["drafts"],
        t["page"],
        t["reserve"],
        t["extra"],
        rows_of(Growth.ALIGNED),
        t["row_align"],
        t["guarded"].to(torch.bool),
    )
    unproven &= ~raised
    keep = ~(raised | unproven)[t["config"]]
    return CalledRows(rows.select(keep), raised, unproven, errors, first_error)


def row_probe_context_len(page_size: Int, attn_dcp_size: Int, extra: Int) -> Int:
    """The context length the row rule is probed at: C + extra = 0 mod page_size * attn_dcp_size (a multiple of
    every kind's allocator page), two such multiples in, so C and C + 1 tell the two rules apart."""
    upper = page_size * attn_dcp_size
    return 2 * upper + (-extra) % upper


def row_rule(extra: Int, width0: Int, width1: Int, page: Int) -> tuple[Int, Int, bool | Tensor]:
    """(A, E, odd) in W = ceil_A(C + E), from the row width minus C at the probe length and one past it.

    Every release sizes W = C + E (the two agree: A = 1), E the headroom or a
    pool builder's own extra (a unified pool: 4 + D); SGLang main aligns
    W = ceil_A(C + extra) to page_size * attn_dcp_size, a multiple of the
    allocator page P (at the probe W - C = extra, one past it extra + A - 1).
    ``odd``: neither rule.  Works on ints and on tensors (``calls`` and
    ``traced_rows`` both read it here).
    """
    same = width0 == width1
    align_if = width1 - extra + 1
    page_rule = (width0 == extra) & (align_if > 1) & (align_if % page == 0)
    other = same == 0  # not ``same``, on a bool and on a bool tensor alike
    align = where(other & page_rule, align_if, full_like(align_if, 1))
    return align, where(same, width0, extra), other & (page_rule == 0)


def row_alignment(cfg: ServingConfig, sizing: Surface, extra: int, page: int) -> tuple[int, int] | None:
    """(A, E) in W = ceil_A(C + E), read from the target's row width at two context lengths (``row_rule``);
    None: neither rule.  ``page``: the target's allocator page P for ``cfg``."""
    context_len = row_probe_context_len(cfg.page_size, cfg.attn_dcp_size, extra)
    w0, w1 = (int(sizing.req_to_token_row_width(cfg.at_context_len(c))) - c for c in (context_len, context_len + 1))
    align, e, odd = row_rule(extra, w0, w1, page)
    return None if odd else (int(align), int(e))


def growth_kind(target: SGLangTarget, sizing: Surface, path: WritePath, reserve: int, page: int) -> Growth:
    """How the target grows kv_allocated_len: aligned (ceil_P(c + R)), exact (c + R) or other.

    One call over a whole page of committed lengths (a fresh request: a = c).
    """
    base = 1024 * page
    lens = [(base + j, base + j) for j in range(page)]
    got = [int(n) for n in decode_alloc_ends(path, lens, reserve, page, sizing, target.revision)]
    rule: Callable[[int], int]
    for growth, rule in (
        (Growth.ALIGNED, lambda c: ceil_to_page(c + reserve, page)),
        (Growth.EXACT, lambda c: c + reserve),
    ):
        if got == [max(c, rule(c)) for c, _ in lens]:
            return growth
    return Growth.OTHER
