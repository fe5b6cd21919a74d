"""SGLang's checked tables: ``req_to_token``, a row per running request and a column per token.

Its width is the row the pool builder allocates (``C + extra``, the extra from
``get_req_to_token_extra_context_len`` or the unified pools' own builders);
its writers are the sites of every release's write path that store into a row
(``write_sites.json``, generated from the wheels); a write whose rounded end
passes the row lands in the next request's row (``Layout.ROWS``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import ROW_BUILDERS
from allocator_model.req_to_token import GUARD, Spill
from allocator_model.scenario import ScenarioRun
from fuzz.engines.sglang.real.runtime.sites import ROW_KINDS, expected, listed_releases
from fuzz.engines.sglang.real.wheels import COMMON_MODULE, CONFIGURATOR_MODULE, MIXIN_MODULE, SIZING_MODULE
from fuzz.findings.kinds import Property
from fuzz.findings.report import Command
from fuzz.tables import GUARD as PAST_THE_TABLE
from fuzz.tables import Access, AccessKind, CodeRef, Layout, Span, Table, Width, declare_table

from .locations import ROW_WIDTH, SGLANG_REPO_PATH
from .names import REQ_TO_TOKEN, SGLangProperty
from .specs import NAME


def _width(target: Any, cfg: ServingConfig) -> int:
    """The target's own row: its sizing surface's ``req_to_token_row_width`` (SGLang's builders where it has them)."""
    return int(target.sizing.req_to_token_row_width(cfg))


def _model_width(cfg: ServingConfig, revision: Any) -> int:
    return int(ModelSizing(revision).req_to_token_row_width(cfg))


def _repo(member: str) -> str:
    return SGLANG_REPO_PATH + member


def _writers() -> tuple[CodeRef, ...]:
    """Every function that stores into a row of ``req_to_token`` in a listed release, once each."""
    found = {(s.member, s.function) for r in listed_releases() for s in expected(r) or () if s.kind in ROW_KINDS}
    return tuple(CodeRef(_repo(m), f) for m, f in sorted(found))


def _width_code() -> tuple[CodeRef, ...]:
    """The headroom function (``allocation_sizing.py``; ``common.py`` before it) and the pool builders (the
    configurator's; the ModelRunner mixin's ``_init_pools`` before it): each release has some of them."""
    builders = [CodeRef(_repo(CONFIGURATOR_MODULE), f"KVCacheConfigurator.{b}") for b in ROW_BUILDERS.values()]
    return (
        CodeRef(_repo(SIZING_MODULE), ROW_WIDTH),
        CodeRef(_repo(COMMON_MODULE), ROW_WIDTH),
        *builders,
        CodeRef(_repo(MIXIN_MODULE), "ModelRunnerKVCacheMixin._init_pools"),
    )


def _span(spill: Spill, width: int, owner: dict[int, int]) -> Span:
    if spill.victim_row == GUARD:
        return Span(None, spill.col_start, spill.col_end, PAST_THE_TABLE)
    row = int(spill.victim_row)
    return Span(row, spill.col_start, spill.col_end, f"request {owner[row]}" if row in owner else None)


def accesses(run: ScenarioRun) -> list[Access]:
    """The model's run as accesses of ``req_to_token``: each request's write of columns ``[cur, nxt)`` of its row
    (what it asked for where SGLang's own guard stopped it), bound by ``[0, W)``, and what changed outside it."""
    out = []
    for obs in run.writes:
        w, row = obs.write, obs.req.req_pool_idx
        out.append(
            Access(
                REQ_TO_TOKEN,
                f"request {obs.req.rid}",
                AccessKind.WRITE,
                (Span(row, w.cur, w.nxt),),
                (Span(row, 0, run.width),),
                tuple(_span(s, run.width, obs.row_owner) for s in obs.changed_outside),
                w.guard.value if w.guard is not None and w.refused else None,
                obs.step,
                obs,
            )
        )
    return out


REQ_TO_TOKEN_TABLE = declare_table(
    Table(
        REQ_TO_TOKEN,
        NAME,
        Layout.ROWS,
        Width(_width, _model_width, _width_code()),
        _writers(),
        (),  # its readers (the clamped free of a row) are not judged yet
        (
            Property.WRITE_WITHIN_ROW,
            Property.NEIGHBOUR_ROWS_UNTOUCHED,
            SGLangProperty.DRAFTS_WITHIN_ALLOCATION,
            SGLangProperty.PAGE_ALIGNED_GROWTH,
        ),
        {Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        {
            Property.WRITE_WITHIN_ROW: "Every rounded decode write ends within its own req_to_token row: "
            "ceil_P(c + R) <= W.",
            Property.NEIGHBOUR_ROWS_UNTOUCHED: "No write changes another live request's columns [0, kv_allocated_len).",
        },
    )
)


def judged_by(table: str, command: Command, stats: Mapping[str, Any]) -> str | None:
    """How each command judges SGLang's tables (``Engine.judges``): ``req_to_token`` by the model's decode steps
    (SGLang's own write path on the covering set and a sample where the run had it, the sizing arithmetic in
    closed form where the run proved it), by the request lifecycle's steps, or by prove's closed form."""
    if table != REQ_TO_TOKEN:
        return None
    if command is Command.RUN:
        parts = ["the model's decode steps"]
        if stats.get("write_path") == "sglang":
            parts.append("SGLang's own write path on the covering set and a sample")
        if stats.get("proof_space") and not stats.get("proof_skipped"):
            parts.append(f"the sizing arithmetic in closed form ({stats['proof_space']} space)")
        return "; ".join(parts)
    if command is Command.LIFECYCLE:
        return "the request lifecycle's steps"
    if command is Command.PROVE:
        return "the sizing arithmetic in closed form"
    return None
