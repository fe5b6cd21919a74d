"""The builds of a backend's CUDA-graph page table a case judges, and whose they are: SGLang's own builders,
executed from the target's tree (``real.runtime.attention``), or on the model its twin
(``allocator_model.page_tables``); and what a real target's builders do, asked of them (``sizing_of``), for the
closed form.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.page_tables import (
    FLASHMLA_BLOCK_TOKENS,
    LENGTH_GRID,
    WIDTH_PADS,
    AttentionBackend,
    Build,
    GraphSizing,
    TableWidth,
    graph_builds,
)
from allocator_model.revisions import Revision
from fuzz.common.errors import TargetError
from fuzz.verdict import Unjudgeable


def row_width_of(target: Any, cfg: ServingConfig) -> int:
    return int(target.sizing.req_to_token_row_width(cfg))


def model_builds(
    sizing: GraphSizing | Revision,
    backend: AttentionBackend,
    cfg: ServingConfig,
    rt: SpecRuntime | None,
    seq: int,
    row: int,
) -> list[Build]:
    """The twin's builds under ``sizing`` (a ``GraphSizing``, or a ``Revision``: its fields for ``backend``)."""
    if isinstance(sizing, Revision):
        sizing = sizing.graph_sizing(backend)
    return graph_builds(cfg, rt, seq, sizing, row)


# The probe ``unjudged`` runs: a request near the limit of a small context, SGLang's default speculation.
PROBE = ServingConfig(context_len=40, page_size=4, speculative_algorithm="EAGLE", speculative_num_steps=3,
                      speculative_eagle_topk=1, speculative_num_draft_tokens=4)  # fmt: skip
PROBE_ROW = 50  # the probe's req_to_token row: wider than the context, so the widths differ


def probe_of(backend: AttentionBackend) -> tuple[ServingConfig, int]:
    """The probe and its row at the backend's page: ``PROBE``'s 10 pages of context and a row of 12.5 pages, so
    the context's pages, one past them and the row's are three widths."""
    p = backend.probe_page
    if p is None:
        return PROBE, PROBE_ROW
    return PROBE.replace(context_len=10 * p, page_size=p), 25 * p // 2


def _plain(cfg: ServingConfig) -> ServingConfig:
    return cfg.replace(speculative_algorithm=None, speculative_num_steps=None, speculative_eagle_topk=None,
                       speculative_num_draft_tokens=None)  # fmt: skip


_RAN: set[tuple[Any, AttentionBackend]] = set()  # (path, backend) whose probe ran: a success is kept, never a refusal


def _refusal(path: Any, backend: AttentionBackend) -> str | None:
    """Why SGLang's builders of ``backend`` cannot run from ``path``'s tree (None: they ran the probe).

    Only a success is kept across calls: a refusal is asked again (at once, within a command: its runtime remembers
    it), so a timeout one command met is not another's (``SGLangPath.runtime``)."""
    if (path, backend) in _RAN:
        return None
    probe, row = probe_of(backend)
    try:
        _executed(path, backend, probe, probe.launch_runtime, probe.context_len - 4, row - 2)
    except TargetError as e:  # StandInMissing too: a piece of SGLang the runtime has no faithful answer for
        return f"SGLang's {backend.label} builders do not run from {path.source}: {str(e).splitlines()[0]}"
    _RAN.add((path, backend))
    return None


# tokens: a grid block past this is not measured (the probe's request stays short): writes that reach it follow the
# length (``LENGTH_GRID``)
MAX_PROBED_BLOCK = 1 << 14


def _widths(cfg: ServingConfig, row: int, backend: AttentionBackend) -> dict[tuple[TableWidth, tuple[int, ...]], int]:
    """Each width the closed form knows of ``backend``'s table at ``cfg`` and a row of ``row``: its source, padded
    (``WIDTH_PADS``), in the table's columns (``GraphSizing.unit``)."""
    forms = itertools.product(TableWidth, WIDTH_PADS)
    return {(src, pad): GraphSizing(src, pad_to=pad, backend=backend).width_of(cfg, row) for src, pad in forms}


def sizing_of(target: Any, backend: AttentionBackend) -> GraphSizing | str:
    """``target``'s ``GraphSizing`` of ``backend``'s builders, or why it has none the closed form can take.

    A model: its revision's fields.  A real target: its own builders, run on its probe (``probe_of``: C = 40,
    P = 4, a row of ``PROBE_ROW`` columns; at a backend's fixed page the same in pages): the buffer's width is
    ``ceil(C/P)`` (CONTEXT), ``(C + P) // P`` (CONTEXT_NEXT_PAGE) or ``ceil(W/P)`` (ROW), or one of them padded to
    whole blocks (``WIDTH_PADS``: told apart at a context of one block, a row of two and a half), else none;
    each mode asked past the width either spills (it masks by length alone: a request far past it measures the
    grid's end, hence the block), is stopped (it asserts first), or clamps.  Then every probe is run again
    against the twin under that sizing: a build the twin does not reproduce (``Build.verdict``) means
    the builders do something no closed form here says, and there is none.
    """
    rev: Revision = target.revision
    if target.is_model:
        return rev.graph_sizing(backend)
    why = unjudged(target, backend)
    if why is not None:
        return why
    path = target.sizing.write_path
    probe, row = probe_of(backend)
    c = probe.context_len
    p = 1 if backend.counts_tokens else probe.page_size  # the tokens of a column
    rt, plain = probe.launch_runtime, _plain(probe)
    assert rt is not None

    def run(cfg: ServingConfig, r: SpecRuntime | None, seq: int) -> tuple[Build, ...]:
        return _executed(path, backend, cfg, r, seq, row)

    w = run(probe, rt, p)[0].width
    forms = [form for form, width in _widths(probe, row, backend).items() if width == w]
    if len(forms) > 1:  # padded to whole blocks, as wide whatever sizes it: a context of one block tells them apart
        wide, wide_row = probe.replace(context_len=FLASHMLA_BLOCK_TOKENS), FLASHMLA_BLOCK_TOKENS * 5 // 2
        w2 = _executed(path, backend, wide, wide.launch_runtime, p, wide_row)[0].width
        forms = [form for form in forms if _widths(wide, wide_row, backend)[form] == w2]
    if len(forms) != 1:
        return (
            f"{backend.label}'s graph table is {w} columns wide at context_len {c}, page {probe.page_size}, a "
            f"req_to_token row of {row}: not the context's pages, one past them, nor the row's, padded to whole "
            f"blocks or not (the closed form knows those)"
        )
    ((source, pad),) = forms
    far = w + MAX_PROBED_BLOCK // p
    # every mode past the width: a draft step publishes seq + s + 1 (or seq), verify and extend seq + D
    past = run(probe, rt, w * p + 1) + run(plain, None, w * p + 1)
    unclamped = frozenset(b.mode for b in past if b.spilled)
    asserts = frozenset(b.mode for b in past if b.stopped_by is not None)
    block = None
    if unclamped:
        grid_end = w + max((b.spilled for b in run(probe, rt, far * p) + run(plain, None, far * p)), default=0)
        # no grid end within the probe: the writes follow the length itself (the furthest any grid could reach:
        # never less than the builders write)
        block = grid_end * p if grid_end < far else LENGTH_GRID
    built = {b.mode for b in run(probe, rt, p) + run(plain, None, p)}  # the modes its own builders run
    sizing = GraphSizing(source, block, unclamped, asserts, backend, frozenset(built), pad)
    probes: list[tuple[ServingConfig, SpecRuntime | None, int]]
    probes = [(probe, rt, need * p - rt.num_draft_tokens) for need in (w - 1, w, w + 1, far)]
    probes += [(plain, None, seq) for seq in (w * p - p + 1, w * p, w * p + 1, far * p)]
    for cfg, r, seq in probes:
        for got, twin in zip(run(cfg, r, seq), model_builds(sizing, backend, cfg, r, seq, row), strict=True):
            if got.verdict != twin.verdict:
                return (
                    f"{backend.label}'s {got.label} at device length {seq} ({cfg.short()}, a row of {row}) builds "
                    f"(width, spill, published, stopped) = {got.verdict}, which no closed form here gives (the "
                    f"nearest: {sizing})"
                )
    return sizing


def unjudged(target: Any, backend: AttentionBackend) -> str | None:
    """Why ``backend``'s page table is not judged on ``target``: a real target whose builders cannot run (no tree
    of SGLang's files around a lone sizing file, no triton, or a release the runtime refuses); the model judges
    its twin."""
    if target.is_model:
        return None
    missing = without_tree(target, f"{backend.label}'s builders are")
    return missing if missing is not None else _refusal(target.sizing.write_path, backend)


def without_tree(target: Any, what: str) -> str | None:
    """Why a real target cannot run SGLang's code (``what``: "X's builders are"): it has no tree of SGLang's files
    around its sizing file; None where it has one."""
    if getattr(target.sizing, "write_path", None) is not None:
        return None
    missing = getattr(target.sizing, "write_path_missing", lambda: None)() or "no SGLang tree to run it from"
    return f"{what} SGLang's own code, not run here: {missing}"


@functools.lru_cache(maxsize=4096)
def _executed(
    path: Any, backend: AttentionBackend, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row: int
) -> tuple[Build, ...]:
    from .real.runtime.attention import graph_builds as executed

    return tuple(executed(path.runtime, backend, cfg, rt, seq, row))


def builds(
    target: Any, backend: AttentionBackend, cfg: ServingConfig, rt: SpecRuntime | None, seq: int
) -> tuple[list[Build], str]:
    """Each mode's build of the request's row at device length ``seq``, and whose they are: SGLang's own builders
    on a real target (``Unjudgeable`` where they cannot run: ``unjudged``), the model's twin on the model."""
    row = row_width_of(target, cfg)
    if target.is_model:
        twin = model_builds(target.revision, backend, cfg, rt, seq, row)
        return twin, f"the model's twin of {backend.label}'s builders"
    why = unjudged(target, backend)
    if why is not None:
        raise Unjudgeable(why)
    return list(_executed(target.sizing.write_path, backend, cfg, rt, seq, row)), "SGLang's own builders (executed)"


__all__ = ["PROBE", "builds", "model_builds", "probe_of", "row_width_of", "sizing_of", "unjudged", "without_tree"]
