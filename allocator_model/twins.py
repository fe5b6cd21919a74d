"""The registry of formulas evaluated two ways, and the deterministic cases that check each pair agrees.

Most formulas are written once and work on ints and on tensors alike
(``SHARED``: the int evaluation and the tensor evaluation of the same
function must agree element for element).  What is left as a pair (``TWINS``)
is validation, whose int form raises a one-line error per rule and whose
tensor form is a mask; the grid bookkeeping of ``closed_form`` (run-time
shapes and Dmax over a bitmask encoding of the adaptive candidates); and
``closed_form.model_decode_rows``, which composes the shared formulas per
revision the way ``ModelSizing`` and ``decode.prepare_for_decode`` do one
configuration at a time.  ``tests/test_twins.py`` runs every entry over an
exhaustive small grid.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from . import algorithms as algo
from . import closed_form as cf
from .allocator import allocator_page_size
from .config import ConfigError, ServingConfig, _validate, valid_launch_mask
from .decode import (
    decode_alloc_ends,
    decode_reserve,
    draft_end,
    draft_extent,
    flat_draft_span,
    prepare_for_decode,
    row_guard,
    tree_draft_span,
    write_path,
)
from .model_sizing import ModelSizing
from .numeric import ceil_to_page
from .pools import KVPool, pool_alloc_page
from .regimes import REGIMES, moved_regime, regime, regime_codes
from .revisions import REVISIONS, Headroom, Revision
from .sizing import (
    alloc_len_per_decode,
    alloc_page_size,
    headroom_covers_reserve,
    page_aligned_decode_alloc_len,
    req_to_token_extra_context_len,
    tree_pages_per_branch,
)
from .surface import Entry, entries

ALGORITHMS: tuple[str | None, ...] = (None, *algo.ALL)


class Case(NamedTuple):
    """One comparison: per input, the int answer and the tensor answer."""

    label: str
    inputs: list[Any]
    want: list[Any]  # the int evaluation (or the step-by-step functions)
    got: list[Any]  # the tensor evaluation


@dataclass(frozen=True)
class Twin:
    """A formula and its tensor evaluation: the same function (SHARED) or its twin (TWINS)."""

    scalar: Callable[..., Any]
    tensor: Callable[..., Any]
    cases: Callable[[], Iterator[Case]]
    label: str | None = None  # the name, where the functions' own would not tell (a surface entry's)

    @property
    def name(self) -> str:
        if self.label is not None:
            return self.label

        def qual(f: Callable[..., Any]) -> str:
            return f"{f.__module__.rsplit('.', 1)[-1]}.{f.__qualname__}"

        return qual(self.scalar) if self.scalar is self.tensor else f"{qual(self.scalar)}~{qual(self.tensor)}"


# -- one implementation, two evaluations -----------------------------------------------


def _grid(**axes: Iterable[Any]) -> list[dict[str, Any]]:
    names = list(axes)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*axes.values())]


def _column(rows: Sequence[dict[str, Any]], name: str) -> torch.Tensor:
    values = [r[name] for r in rows]
    return torch.tensor(values, dtype=torch.bool if isinstance(values[0], bool) else cf.INT)


def elementwise(
    fn: Callable[..., Any], rows: list[dict[str, Any]], variants: Iterable[dict[str, Any]] = ({},)
) -> Callable[[], Iterator[Case]]:
    """Cases for a formula of ints: each row alone (ints), then all rows at once (a tensor per argument).

    ``variants`` are the arguments that stay Python values in both evaluations (an algorithm, a flag).
    """

    def cases() -> Iterator[Case]:
        for static in variants:
            want = [fn(**static, **row) for row in rows]
            got = fn(**static, **{name: _column(rows, name) for name in rows[0]})
            got = got.tolist() if isinstance(got, torch.Tensor) else [got] * len(rows)
            yield Case(f"{fn.__name__}({static})", rows, [int(w) for w in want], [int(g) for g in got])

    return cases


def covered_extra(
    algorithm: str | None,
    headroom: Headroom,
    page_tail: bool,
    max_draft_tokens: Any,
    reserve: Any,
    page: Any,
    topk: Any,
) -> Any:
    """``req_to_token_extra_context_len`` with ``headroom_covers_reserve``'s ``covered``, as ModelSizing calls them."""
    covered = headroom_covers_reserve(headroom, algorithm, page, topk)
    return req_to_token_extra_context_len(max_draft_tokens, [reserve], page, covered=covered, page_tail=page_tail)


PAGES = (1, 2, 3, 4, 16)
_STEPS_TOPK_D = dict(num_steps=(0, 1, 2, 5), topk=(1, 2, 4))
# (the formula, what the cases call: the formula or a caller that adapts its arguments, rows, variants)
_SHARED_GRIDS: tuple[tuple[Callable[..., Any], Callable[..., Any], list[dict[str, Any]], list[dict[str, Any]]], ...] = (
    (ceil_to_page, ceil_to_page, _grid(x=range(0, 40), page=PAGES), [{}]),
    (alloc_page_size, alloc_page_size, _grid(page_size=range(1, 17), attn_dcp_size=range(1, 17)), [{}]),
    (tree_pages_per_branch, tree_pages_per_branch, _grid(page=PAGES, num_steps=range(0, 20)), [{}]),
    (
        alloc_len_per_decode,
        alloc_len_per_decode,
        _grid(**_STEPS_TOPK_D, max_draft_tokens=(1, 2, 8, 17), page=PAGES),
        _grid(algorithm=ALGORITHMS, tree_footprint=(True, False)),
    ),
    (
        page_aligned_decode_alloc_len,
        page_aligned_decode_alloc_len,
        _grid(
            kv_committed_len=range(0, 40, 3),
            kv_allocated_len=(0, 10, 37, 64),
            reserve=(1, 8, 17),
            page=PAGES,
            aligned=(True, False),
        ),
        [{}],
    ),
    (
        req_to_token_extra_context_len,
        covered_extra,
        _grid(max_draft_tokens=(0, 1, 8, 17), reserve=(1, 2, 16, 34, 128), page=PAGES, topk=(1, 2, 4)),
        _grid(algorithm=(None, algo.EAGLE, algo.UNO), headroom=tuple(Headroom), page_tail=(True, False)),
    ),
    (
        moved_regime,
        moved_regime,
        _grid(code=range(len(REGIMES)), counterpart=range(len(REGIMES)), counterpart_fails=(True, False)),
        [{}],  # every input: 72 comparisons
    ),
    (flat_draft_span, flat_draft_span, _grid(**_STEPS_TOPK_D, draft_tokens=(1, 2, 8, 17)), _grid(algorithm=ALGORITHMS)),
    (
        tree_draft_span,
        tree_draft_span,
        _grid(page_offset=range(0, 16), num_steps=(1, 2, 5, 17), topk=(1, 2, 4), page=PAGES),
        [{}],
    ),
    (
        draft_end,
        draft_end,
        _grid(**_STEPS_TOPK_D, draft_tokens=(1, 8, 17), device_seq_len=(0, 1, 5, 15, 16, 17, 33), page=PAGES),
        _grid(algorithm=ALGORITHMS),
    ),
)
SHARED: tuple[Twin, ...] = tuple(
    Twin(listed, listed, elementwise(call, rows, variants)) for listed, call, rows, variants in _SHARED_GRIDS
)


# -- twins -----------------------------------------------------------------------------

# A small launch space, valid and invalid: every rule of server_args' validation decides some of it.
LAUNCH_SPACE = dict(
    page_size=(0, 1, 16),
    attn_dcp_size=(0, 1, 2),
    num_steps=(0, 1, 2, 3),
    topk=(0, 1, 2, 17),
    draft_tokens=(0, 1, 2, 3, 4, 128, 129),
    candidates=(0, 0b1, 0b1010, 0b1011),
)


def _kwargs(algorithm: str | None, e: dict[str, int]) -> dict[str, Any]:
    """The ServingConfig arguments of a grid element (0: an unused field, None without speculation)."""
    kw: dict[str, Any] = dict(
        page_size=e["page_size"], attn_dcp_size=e["attn_dcp_size"], speculative_algorithm=algorithm
    )
    for name, field in (
        ("num_steps", "speculative_num_steps"),
        ("topk", "speculative_eagle_topk"),
        ("draft_tokens", "speculative_num_draft_tokens"),
    ):
        if algorithm is not None or e[name]:
            kw[field] = e[name]
    if e["candidates"]:
        kw.update(speculative_adaptive=True, speculative_adaptive_candidate_steps=cf.bits(e["candidates"]))
    return kw


def _launch_grid(algorithm: str | None, elements: list[dict[str, int]]) -> cf.LaunchGrid:
    return cf.LaunchGrid(algorithm, *(torch.tensor([e[n] for e in elements], dtype=cf.INT) for n in LAUNCH_SPACE))


def _accepts(kw: dict[str, Any]) -> bool:
    try:
        ServingConfig(context_len=4096, **kw)
    except ConfigError:
        return False
    return True


def _validation_cases() -> Iterator[Case]:
    for a in ALGORITHMS:
        elements = _grid(**LAUNCH_SPACE)
        want = [_accepts(_kwargs(a, e)) for e in elements]
        got = cf.valid_mask(_launch_grid(a, elements)).tolist()
        yield Case(f"validation of {a}", elements, want, got)


@functools.cache
def _valid_launches(a: str | None) -> tuple[list[ServingConfig], cf.LaunchGrid]:
    """The valid configurations of LAUNCH_SPACE (at pages 1, 2, 3 and 16), as configs and as a grid."""
    elements = [
        e
        for e in _grid(**{**LAUNCH_SPACE, "page_size": (1, 2, 3, 16), "attn_dcp_size": (1, 2, 3)})
        if _accepts(_kwargs(a, e))
    ]
    return [ServingConfig(context_len=4096, **_kwargs(a, e)) for e in elements], _launch_grid(a, elements)


def _runtime_cases() -> Iterator[Case]:
    for a in ALGORITHMS:
        configs, g = _valid_launches(a)
        want = [
            (i, rt.num_steps, rt.num_draft_tokens) if rt else (i, 0, 0)
            for i, cfg in enumerate(configs)
            for rt in cfg.runtimes()
        ]
        got = list(zip(*(t.tolist() for t in cf.runtime_shapes(g)), strict=True))
        yield Case(f"run-time shapes of {a}", configs, want, [tuple(x) for x in got])


def _max_draft_tokens_cases() -> Iterator[Case]:
    for a in ALGORITHMS:
        configs, g = _valid_launches(a)
        dmax = [cfg.max_speculative_num_draft_tokens or 0 for cfg in configs]
        yield Case(f"Dmax of {a}", configs, dmax, g.max_draft_tokens.tolist())


# Committed lengths / device seq_lens: page offsets 0, 1, the middle and the last of pages up to 48, both sides of a
# page boundary.
COMMITTED = (96, 97, 100, 103, 111, 112, 113, 127, 128, 143)


def _decode_row_cases() -> Iterator[Case]:
    """Per revision and configuration: the allocator page, reserve, headroom, allocation ends and draft ends."""
    for rev in REVISIONS.values():
        sizing = ModelSizing(rev)
        for a in ALGORITHMS:
            configs, g = _valid_launches(a)
            want = []
            for cfg in configs:
                page, extra = allocator_page_size(cfg), sizing.req_to_token_extra_context_len(cfg)
                for rt in cfg.runtimes():
                    reserve = decode_reserve(cfg, rt, sizing)
                    ends = decode_alloc_ends(write_path(a), [(c, c) for c in COMMITTED], reserve, page, sizing, rev)
                    drafts = [draft_extent(cfg, rt, v, page) for v in COMMITTED]
                    want.append((page, reserve, extra, *ends, *drafts))
            rows = cf.model_decode_rows(g, rev)
            topk = g.topk[rows.config]
            columns = [rows.alloc_page, rows.reserve, rows.extra]
            columns += [cf.alloc_end(rows, torch.full_like(rows.reserve, c)) for c in COMMITTED]
            columns += [cf.draft_extent(rows, a, topk, torch.full_like(rows.reserve, v)) for v in COMMITTED]
            got = [tuple(x) for x in zip(*(t.tolist() for t in columns), strict=True)]
            yield Case(f"decode rows of {a} on {rev.name}", configs, want, got)


def _launch_cases() -> Iterator[Case]:
    """Per revision and kind of pool: which valid launch configurations (LAUNCH_SPACE's) the release runs."""
    space = {**LAUNCH_SPACE, "page_size": (1, 16), "attn_dcp_size": (1, 2)}
    for a in ALGORITHMS:
        for kind in KVPool:
            elements = [e for e in _grid(**space) if _accepts({**_kwargs(a, e), "kv_pool": kind})]
            configs = [ServingConfig(context_len=4096, **_kwargs(a, e), kv_pool=kind) for e in elements]
            grid = dataclasses.replace(_launch_grid(a, elements), kv_pool=kind)
            for rev in REVISIONS.values():
                want = [rev.refuses(cfg) is None for cfg in configs]
                yield Case(
                    f"launches of {a} on {kind.value} in {rev.name}", configs, want, rev.launch_mask(grid).tolist()
                )


def _regime_cases() -> Iterator[Case]:
    """Per algorithm and kind: the regime of each valid launch, at its allocator page, one by one and as a grid."""
    for a in ALGORITHMS:
        configs, g = _valid_launches(a)
        for kind in (KVPool.STANDARD, KVPool.SWA):
            pages = pool_alloc_page(kind, g.page_size, g.attn_dcp_size)
            want = [REGIMES.index(regime(cfg, int(p))) for cfg, p in zip(configs, pages.tolist(), strict=True)]
            got = regime_codes(g, torch.arange(len(g)), pages).tolist()
            yield Case(f"regimes of {a} on {kind.value}", configs, want, got)


def _guard_cases() -> Iterator[Case]:
    """Per revision and algorithm: what stops a write one column past W, one launch at a time and per block."""
    for rev in REVISIONS.values():
        sizing = ModelSizing(rev)
        for a in ALGORITHMS:
            configs, g = _valid_launches(a)
            rows = cf.model_decode_rows(g, rev)
            want = []
            for i in rows.config.tolist():
                cfg = configs[i]
                width = cfg.context_len + sizing.req_to_token_extra_context_len(cfg)
                guard = row_guard(write_path(a), width + 1, width, allocator_page_size(cfg), sizing, cfg, rev)
                want.append(cf.GUARDS.index(guard))
            yield Case(f"guards of {a} on {rev.name}", configs, want, cf.guard_codes(g, rows, rev).tolist())


def _fget(p: Any) -> Callable[..., Any]:
    fget: Callable[..., Any] = p.fget
    return fget


TWINS: tuple[Twin, ...] = (
    Twin(_validate, valid_launch_mask, _validation_cases),
    Twin(regime, regime_codes, _regime_cases),
    Twin(row_guard, cf.guard_codes, _guard_cases),
    Twin(Revision.refuses, Revision.launch_mask, _launch_cases),
    Twin(ServingConfig.runtimes, cf.runtime_shapes, _runtime_cases),
    Twin(
        _fget(ServingConfig.max_speculative_num_draft_tokens),
        _fget(cf.LaunchGrid.max_draft_tokens),
        _max_draft_tokens_cases,
    ),
    # ModelSizing's numbers and the decode path's allocation and draft ends, per (configuration, run-time shape).
    Twin(prepare_for_decode, cf.model_decode_rows, _decode_row_cases),
)


def _surface_cases(entry: Entry) -> Callable[[], Iterator[Case]]:
    """An entry's model formula on every valid launch of the small space, against its ``twin`` over the grid."""

    def cases() -> Iterator[Case]:
        for rev in REVISIONS.values():
            sizing = ModelSizing(rev)
            for a in ALGORITHMS:
                configs, g = _valid_launches(a)
                for kind in (KVPool.STANDARD, KVPool.SWA):  # a paged-with-DCP allocator and a bare-page one
                    kinds = [cfg.replace(kv_pool=kind) for cfg in configs]
                    want = [int(sizing.call(entry, cfg)) for cfg in kinds]
                    assert entry.twin is not None
                    got = entry.twin(dataclasses.replace(g, kv_pool=kind), rev)
                    yield Case(f"{entry.name} of {a} on {kind.value} in {rev.name}", kinds, want, got.tolist())

    return cases


def surface_twins() -> tuple[Twin, ...]:
    """A twin for every declared surface entry that has one (``Entry.twin``), as declared now."""
    return tuple(Twin(e.model, e.twin, _surface_cases(e), f"surface.{e.name}") for e in entries() if e.twin is not None)


def all_entries() -> tuple[Twin, ...]:
    """Every twin: the shared formulas, the pairs, and the surface's entries with a tensor evaluation."""
    return SHARED + TWINS + surface_twins()


ALL_ENTRIES: tuple[Twin, ...] = all_entries()
