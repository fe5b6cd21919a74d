"""The builds of FA3's page table a case judges, and whose they are: SGLang's own builders, executed from the
target's tree (``real.runtime.attention``), or on the model its twin (``allocator_model.page_tables``); and what a
real target's builders do, asked of them (``sizing_of``), for the closed form.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.page_tables import Build, Mode, TableWidth, fa3_builds, pages
from allocator_model.revisions import Revision
from fuzz.common.errors import TargetError
from fuzz.verdict import Unjudgeable


def row_width_of(target: Any, cfg: ServingConfig) -> int:
    return int(target.sizing.req_to_token_row_width(cfg))


def model_builds(sizing: Any, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row: int) -> list[Build]:
    """The twin's builds under ``sizing`` (a ``Sizing``, or a ``Revision``: its fields)."""
    if isinstance(sizing, Revision):
        sizing = Sizing.of(sizing)
    return fa3_builds(cfg, rt, seq, sizing.width, row, sizing.verify_block_tokens, sizing.decode_asserts)


# The probe ``unjudged`` runs: a request near the limit of a small context, SGLang's default speculation.
PROBE = ServingConfig(context_len=40, page_size=4, speculative_algorithm="EAGLE", speculative_num_steps=3,
                      speculative_eagle_topk=1, speculative_num_draft_tokens=4)  # fmt: skip


@functools.lru_cache(maxsize=64)
def _refusal(path: Any) -> str | None:
    """Why SGLang's FA3 builders cannot run from ``path``'s tree (None: they ran the probe)."""
    try:
        _executed(path, PROBE, PROBE.launch_runtime, 36, 48)
    except TargetError as e:  # StandInMissing too: a piece of SGLang the runtime has no faithful answer for
        return f"SGLang's FA3 builders do not run from {path.source}: {str(e).splitlines()[0]}"
    return None


@dataclass(frozen=True)
class Sizing:
    """What a target's FA3 builders do, as the closed form takes it: the width's source, the verify builder's grid
    block where it does not clamp, whether the decode builders assert first.  The model's revision says it for a
    model; a real target's own builders are asked (``sizing_of``)."""

    width: TableWidth
    verify_block_tokens: int | None
    decode_asserts: bool

    @classmethod
    def of(cls, revision: Revision) -> Sizing:
        """What the model's revision says (its fields, as the twin takes them)."""
        return cls(revision.page_table_width, revision.fa3_verify_block_tokens, revision.fa3_decode_asserts)


MAX_PROBED_BLOCK = 1 << 14  # tokens: a verify grid block past this is not measured (the probe's request stays short)


def sizing_of(target: Any) -> Sizing | str:
    """``target``'s ``Sizing``, or why it has none the closed form can take.

    A model: its revision's fields.  A real target: its own builders, run on ``PROBE`` (C = 40, P = 4, a row of
    50 columns): the buffer's width is ``ceil(C/P)`` (CONTEXT) or ``ceil(W/P)`` (ROW), else no closed form; a
    verify publishing one page past the width either spills (then one far past it measures the grid's end, hence
    the block) or not (clamped); a decode one page past it is stopped or not.  Then every probe is run again
    against the twin under that sizing: a build the twin does not reproduce (its width, spill, published length or
    stop) means the builders do something no closed form here says, and there is none.
    """
    rev: Revision = target.revision
    if target.is_model:
        return Sizing.of(rev)
    why = unjudged(target)
    if why is not None:
        return why
    path, p, row = target.sizing.write_path, PROBE.page_size, 50
    rt = PROBE.launch_runtime
    assert rt is not None
    plain = PROBE.replace(speculative_algorithm=None, speculative_num_steps=None, speculative_eagle_topk=None,
                          speculative_num_draft_tokens=None)  # fmt: skip

    def verify(need: int) -> Build:  # a verify publishing ``need`` pages by the twin's account
        return next(
            b for b in _executed(path, PROBE, rt, need * p - rt.num_draft_tokens, row) if b.mode is Mode.TARGET_VERIFY
        )

    w = verify(2).width
    widths = {pages(PROBE.context_len, p): TableWidth.CONTEXT, pages(row, p): TableWidth.ROW}
    if w not in widths:
        return (
            f"FA3's graph page table is {w} pages wide at context_len {PROBE.context_len}, page {p}, a req_to_token "
            f"row of {row}: neither the context's pages nor the row's (the closed form knows those two)"
        )
    far = w + MAX_PROBED_BLOCK // p
    block = None
    if verify(w + 1).spilled:
        grid_end = w + verify(far).spilled
        block = grid_end * p if grid_end < far else rev.fa3_verify_block_tokens or MAX_PROBED_BLOCK
    asserts = _executed(path, plain, None, w * p + 1, row)[0].stopped_by is not None
    sizing = Sizing(widths[w], block, asserts)
    probes: list[tuple[ServingConfig, SpecRuntime | None, int]]
    probes = [(PROBE, rt, need * p - rt.num_draft_tokens) for need in (w - 1, w, w + 1, far)]
    probes += [(plain, None, seq) for seq in (w * p - p + 1, w * p, w * p + 1)]
    for cfg, r, seq in probes:
        for got, twin in zip(_executed(path, cfg, r, seq, row), model_builds(sizing, cfg, r, seq, row), strict=True):
            if got.verdict != twin.verdict:
                return (
                    f"FA3's {got.label} at device length {seq} ({cfg.short()}, a row of {row}) builds (width, spill, "
                    f"published, stopped) = {got.verdict}, which no closed form here gives (the nearest: {sizing})"
                )
    return sizing


def unjudged(target: Any) -> str | None:
    """Why FA3's page table is not judged on ``target``: a real target whose builders cannot run (no tree of SGLang's
    files around a lone sizing file, no triton, or a release the runtime refuses); the model judges its twin."""
    if target.is_model:
        return None
    path = getattr(target.sizing, "write_path", None)
    if path is None:
        missing = getattr(target.sizing, "write_path_missing", lambda: None)() or "no SGLang tree to run them from"
        return f"FA3's builders are SGLang's own code, not run here: {missing}"
    return _refusal(path)


@functools.lru_cache(maxsize=4096)
def _executed(path: Any, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row: int) -> tuple[Build, ...]:
    from .real.runtime.attention import fa3_builds as executed

    return tuple(executed(path.runtime, cfg, rt, seq, row))


def builds(target: Any, cfg: ServingConfig, rt: SpecRuntime | None, seq: int) -> tuple[list[Build], str]:
    """Each mode's build of the request's row at device length ``seq``, and whose they are: SGLang's own builders
    on a real target (``Unjudgeable`` where they cannot run: ``unjudged``), the model's twin on the model."""
    row = row_width_of(target, cfg)
    if target.is_model:
        return model_builds(target.revision, cfg, rt, seq, row), "the model's twin of FA3's builders"
    why = unjudged(target)
    if why is not None:
        raise Unjudgeable(why)
    return list(_executed(target.sizing.write_path, cfg, rt, seq, row)), "SGLang's own builders (executed)"
