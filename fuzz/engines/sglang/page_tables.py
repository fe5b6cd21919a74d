"""The attention backends' CUDA-graph page tables as checked tables: a row per batch position, a column per KV page.

One table per backend (``GraphTable``; FA3's is ``fa3_page_table``).  Its
width is the buffer the backend's ``init_cuda_graph_state`` allocates (FA3's
``max_num_pages``, sized from the model's context length); its writers are the
builders that refill it at each replay; its reader is the backend's kernel,
which reads each row up to the length the backend publishes
(``cache_seqlens``).  A case is a decode scenario, the same ones
``req_to_token`` is judged on: the request's device length at that step is
its committed length plus the overlap lag, and each mode of the step (draft
decode, verify, draft extend) is one build of its row.  On a target with
SGLang's files the builds are SGLang's own, executed
(``real.runtime.attention``); on the model they are its twin
(``allocator_model.page_tables``), which a test holds equal to SGLang's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.page_tables import JUDGED_LAUNCHES, Build, Mode, judged, pages
from allocator_model.pools import KVPool, pool_alloc_page
from allocator_model.regimes import regime
from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario, max_device_lag, scenario_problem
from allocator_model.scheduler import decode_alloc_bound
from fuzz.findings.kinds import Property
from fuzz.tables import Access, AccessKind, CodeRef, Layout, Span, Table, Width, declare_table
from fuzz.tables.declared import Code, Reach, Sweep

from . import tables as _req_to_token  # noqa: F401  (declared first: the engine's tables in the order of blame)
from .backends import FA3, FA3_PAGE_TABLE, FLASHMLA, GRAPH_TABLES, TRITON, TRTLLM_MHA, TRTLLM_MLA, backend_of
from .graph_tables import DRAFT_STEP_LAUNCHES, FOREIGN, GraphTable
from .locations import SGLANG_REPO_PATH
from .page_table_builds import builds, model_builds, row_width_of, sizing_of, unjudged
from .page_table_cover import COVER_SPECS, cover, modes
from .real.runtime.tree import DirectoryTree, open_tree
from .specs import NAME


def accesses(t: GraphTable, b: Build, owner: str, whose: str, row_pages: int) -> list[Access]:
    """One build as accesses of its row (batch row 0, bound ``[0, width)``): the builder's write (with what it
    stored past the row, which lands in the next batch row), the kernel's read of the published length, and what
    the builder copied into the row's used part from the request's ``req_to_token`` row (``row_pages`` pages of
    it are the request's; what it copied from elsewhere, ``Build.foreign``, is the next request's)."""
    bound, units = (Span(0, 0, b.width),), "slots" if t.backend.counts_tokens else "pages"
    if b.stopped_by is not None:  # SGLang's own assert refused it: what it asked for, nothing written or read
        asked = Span(0, 0, b.read_pages)
        what = f"{b.label}: SGLang's {b.stopped_by} stops the replay: {b.read_pages} {units} asked of {b.buffer}"
        return [Access(t.name, owner, AccessKind.WRITE, (asked,), bound, (), b.stopped_by, what, b)]
    outside = (Span(1, 0, b.spilled, t.next_row(b)),) if b.spilled else ()
    write = Access(
        t.name,
        owner,
        AccessKind.WRITE,
        (Span(0, 0, b.written + b.spilled),),
        bound,
        outside,
        step=f"{b.label}: the CUDA-graph replay stores {b.written + b.spilled} {units} into {b.buffer} ({whose})",
        native=b,
    )
    read = Access(
        t.name,
        owner,
        AccessKind.READ,
        (Span(0, 0, b.read_pages),),
        bound,
        step=f"{b.label}: {t.kernel} reads {t.lengths} = {b.published} tokens = {b.read_pages} {units} of "
        f"{b.buffer} (the length {whose} published; the kernel is {t.kernel_kind}'s: the read follows from it)",
        native=b,
    )
    # in pages of the request's req_to_token row: its own, then what came from elsewhere (past its part)
    foreign = (Span(None, row_pages, row_pages + b.foreign, FOREIGN),) if b.foreign else ()
    copy = Access(
        t.name,
        owner,
        AccessKind.COPY,
        (Span(None, 0, b.used - b.foreign), *foreign),
        (Span(None, 0, row_pages),),
        step=f"{b.label}: the builder stores {b.used} {units[:-1]} indices into {b.buffer}, copied from the request's "
        f"req_to_token row ({whose})",
        native=b,
        source="req_to_token",
    )
    return [write, read, copy]


def scenario(target: Any, cfg: ServingConfig, data: Mapping[str, Any]) -> DecodeScenario:
    """The case's decode scenario, checked against the target's scheduler rules (ValueError: one it cannot run)."""
    s = DecodeScenario.from_dict(cfg, data)
    problem = scenario_problem(s, target.revision)
    if problem:
        raise ValueError(problem)
    return s


def observe(t: GraphTable, target: Any, cfg: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
    """The accesses of the backend's page tables in one decode step of the case's scenario (none where ``takes``
    is False, or at topk > 1, whose tables are others)."""
    s = scenario(target, cfg, data)
    if not t.takes(cfg):
        return []
    rt = s.runtime(s.num_steps)
    built, whose = builds(target, t.backend, cfg, rt, s.committed_len + s.device_lag)
    owner = f"request 1 (batch row 0, device seq_len {s.committed_len + s.device_lag})"
    row_pages = pages(row_width_of(target, cfg), 1 if t.backend.counts_tokens else cfg.page_size)
    return [a for b in built for a in accesses(t, b, owner, whose, row_pages)]


@st.composite
def _scenario_data(
    draw: st.DrawFn, t: GraphTable, revision: Revision, pins: Mapping[str, Any]
) -> tuple[ServingConfig, dict]:
    from strategies import space
    from strategies.configs import DrawChooser

    fixed = {"kv_pool": KVPool.STANDARD, "attn_dcp_size": 1, "page_size": draw(st.sampled_from(t.pages)), **pins}
    s = space.decode_scenario(DrawChooser(draw), revision, pins=fixed, topk_one=t.topk_1_only or t.draft_steps_only)
    if s is None or not t.takes(s.config):
        reject()
    return s.config, s.to_dict()


def pinned_out(t: GraphTable, pins: Mapping[str, Any]) -> str | None:
    """Why the pins leave no launch the backend's table is judged on (``GraphTable.takes``), None where some may."""
    pool, dcp, page, topk = (pins.get(k) for k in ("kv_pool", "attn_dcp_size", "page_size", "speculative_eagle_topk"))
    out = "the pins leave no launch it is judged on"
    if pool is not None and str(pool) != KVPool.STANDARD.value or dcp is not None and int(dcp) != 1:
        return f"{out}: the standard pool without DCP"
    if page is not None and int(page) not in t.pages:
        return f"{out}: {t.backend.label} runs page {', '.join(map(str, t.pages))}"
    if topk is not None and int(topk) > 1:
        if t.topk_1_only:
            return f"{out}: {t.backend.label} refuses topk > 1"
        if t.draft_steps_only:
            return f"{out}: {DRAFT_STEP_LAUNCHES} (at topk > 1 each branch's range of a step's row: not checked)"
        label = t.backend.label
        return f"{out}: {JUDGED_LAUNCHES} (at topk > 1 {label} builds its prefix and expand tables: not checked)"
    algorithm = pins.get("speculative_algorithm")
    steps = pins.get("speculative_num_steps")
    if t.draft_steps_only and algorithm is not None and algo.normalize(algorithm) not in algo.EAGLE_FAMILY:
        return f"{out}: {DRAFT_STEP_LAUNCHES} (it holds the draft model's decode steps alone)"
    if t.draft_steps_only and steps is not None and int(steps) < 2:
        return f"{out}: {DRAFT_STEP_LAUNCHES} (SGLang builds no multi-step draft backend for one step)"
    if algorithm is not None and not judged(algo.normalize(algorithm), 1):
        return f"{out}: {JUDGED_LAUNCHES} ({algo.normalize(algorithm)}'s verify builds its own tables: not checked)"
    return None


def cases(t: GraphTable, target: Any, pins: Mapping[str, Any]) -> st.SearchStrategy[tuple[ServingConfig, dict]]:
    """Decode scenarios near the context limit on the target's rules (``strategies.space.decode_scenario``), on
    the standard pool without DCP: the draws ``req_to_token``'s hunt makes there."""
    return _scenario_data(t, target.revision, dict(pins))


def group(cfg: ServingConfig) -> str:
    """The bug group of a configuration: its regime, as ``req_to_token``'s findings are grouped."""
    return regime(cfg, pool_alloc_page(cfg.kv_pool, cfg.page_size, cfg.attn_dcp_size)).value


def closed_form(t: GraphTable, target: Any, cfg: ServingConfig) -> Reach | None:
    """The furthest an access of the row reaches over every scenario of ``cfg``: each mode's published length only
    grows with the device length and the draft tokens, so the worst is the scheduler's bound plus the largest
    overlap lag, at the largest D; a write past the width where a builder does not clamp, else a read.  None: a
    launch the table is not judged on (``GraphTable.coverage``)."""
    revision: Revision = target.revision
    sizing = sizing_of(target, t.backend)
    if isinstance(sizing, str):
        raise ValueError(sizing)
    row = ModelSizing(revision).req_to_token_row_width(cfg) if target.is_model else row_width_of(target, cfg)
    bound, lag = decode_alloc_bound(cfg, revision), max_device_lag(cfg)
    best = Reach(pages(cfg.context_len, cfg.page_size), 0, {}, Property.READ_WITHIN_ROW)
    if not t.takes(cfg) or not judged(cfg.speculative_algorithm, cfg.topk):
        return None
    if bound < 1:
        return best
    for rt in cfg.runtimes():
        num_steps = rt.num_steps if cfg.speculative_adaptive and rt is not None else None
        data = DecodeScenario(cfg, bound, num_steps, None, lag).to_dict()
        for b in model_builds(sizing, t.backend, cfg, rt, bound + lag, row):
            wrote = b.read_pages if b.stopped_by else b.written + b.spilled
            reach = (
                Reach(b.width, wrote, data, Property.WRITE_WITHIN_ROW, b.stopped_by)
                if b.spilled or (b.stopped_by and wrote > b.width)
                else Reach(b.width, b.read_pages, data, Property.READ_WITHIN_ROW)
            )
            worse = reach.prop is Property.WRITE_WITHIN_ROW and best.prop is not Property.WRITE_WITHIN_ROW
            if worse or (reach.prop == best.prop and reach.end - reach.width > best.end - best.width):
                best = reach
    return best


def finish(t: GraphTable, target: Any, f: Any) -> Any:
    """A group's finding with its representative case beside it: the same walk toward a deployment people run as
    ``req_to_token``'s groups take (``representative.search``), on this table's cases of the walked scenarios."""
    from fuzz.tables.case import TableCase

    from .representative import search

    start = DecodeScenario.from_dict(f.config, f.case["data"])
    sizing = sizing_of(target, t.backend)
    period = (sizing.block_tokens or 1) if not isinstance(sizing, str) else 1
    table = declared_table(t)
    f.search = search(target, f, False, start, lambda s: TableCase(table, s.config, s.to_dict()), period)
    if not target.is_model:  # every access judged was what SGLang's own builders did
        source = target.spec  # the target as its case file names it (never this machine's path to a wheel)
        for found in (f, f.search.found if f.search is not None else None):
            if found is not None:
                found.confirmed = True
                found.confirmation = (
                    f"confirmed on SGLang's own {t.backend.label} builders, executed from {source} "
                    + (
                        f"(the graph buffer's width, and its check {guard} raising before the replay stored anything)"
                        if (guard := found.signature.outcome.guard)
                        else "(the graph buffer's width, what the replay stored, the length it published); the read is "
                        f"the {t.kernel_kind} kernel's, not run here"
                    )
                )
    return f


def reached(t: GraphTable, cfg: ServingConfig, data: Mapping[str, Any]) -> str:
    """How the scheduler gets the request there (the scenario's own account), then the step's graph replay."""
    how = DecodeScenario.from_dict(cfg, data).reached_by()
    if t.draft_steps_only:  # rows the batch shares: a bucket of one is the eager batch of one request
        return how + f", then its draft decode steps on {t.backend.label} (decode CUDA graph off: one request's rows)"
    return how + f", then its decode step's CUDA-graph replay on {t.backend.label}"


def cover_line(stats: Mapping[str, Any]) -> str | None:
    """What ``run`` prints of the covering sets: the modes they reach, each table's cases."""
    counts = [(t.name, stats.get(f"{t.name}_covering_cases")) for t in GRAPH_TABLES.values()]
    counts = [(name, n) for name, n in counts if n is not None]
    if not counts:
        return None
    order = [m.value for m in Mode]
    reach = sorted({m.value for spec in COVER_SPECS for m, _ in modes(spec)}, key=order.index)
    each = ", ".join(f"{name} {n}" for name, n in counts)
    return f"   covering sets (cases at the limit, reaching {', '.join(reach)}): {each}"


def _sweep(t: GraphTable, target: Any, prover: Any) -> Any:
    from .prove.page_tables import OVER, sweep

    sizing = sizing_of(target, t.backend)
    if isinstance(sizing, str):
        return Sweep(0, OVER, (), refused=sizing)
    return sweep(target, prover, functools.partial(closed_form, t), sizing, t)


def code_of(t: GraphTable, target: Any, refs: tuple[CodeRef, ...]) -> tuple[Code, ...]:
    """``refs`` (where the table is sized, or its builders) on ``target``: the model's twin
    (``allocator_model/page_tables.py``: ``GraphSizing.widths_of``, or ``foreign_pages`` for the builders) on the
    model; SGLang's code in the target's tree (its repository path for a release, the file for a checkout);
    nothing readable for a lone sizing file."""
    from allocator_model import page_tables as model

    if target.is_model:  # named as this project's repository holds it (as the model's sizing functions are)
        path = Path(model.__file__ or "")
        shown = f"{path.parent.name}/{path.name}"
        twin = "GraphSizing.widths_of" if refs == t.width_code else "foreign_pages"
        return (Code(CodeRef(shown, twin), shown, path.read_text(), local=False),)
    return tree_code(target, refs)


def tree_code(target: Any, refs: tuple[CodeRef, ...]) -> tuple[Code, ...]:
    """``refs`` in a real target's tree: each file's text (its repository path for a release, the file for a
    checkout); nothing readable for a lone sizing file."""
    source = getattr(getattr(target.sizing, "module", None), "tree_source", None)
    tree = open_tree(source) if source else None
    out = []
    for ref in refs:
        member = ref.path.removeprefix(SGLANG_REPO_PATH)
        text = tree.read(member) if tree is not None else None
        local = isinstance(tree, DirectoryTree)
        shown = tree.filename(member) if tree is not None and local else ref.path
        out.append(Code(ref, shown, text, local))
    return tuple(out)


def _width(t: GraphTable, target: Any, cfg: ServingConfig) -> int:
    """The target's own width: its builds' (SGLang's executed buffer where it runs them), at the context limit."""
    rt = cfg.launch_runtime
    built, _ = builds(target, t.backend, cfg, rt, max(1, decode_alloc_bound(cfg, target.revision)))
    return built[0].width if built else _model_width(t, cfg, target.revision)


def _model_width(t: GraphTable, cfg: ServingConfig, revision: Revision) -> int:
    sizing = revision.graph_sizing(t.backend)
    return sizing.width_of(cfg, ModelSizing(revision).req_to_token_row_width(cfg))


def _unjudged(t: GraphTable, target: Any) -> str | None:
    return unjudged(target, t.backend)


def _observer(t: GraphTable, target: Any) -> str:
    scope = f" ({t.models})" if t.models else ""
    if target.is_model:
        return f"the model's twin of {t.backend.label}'s builders{scope}"
    return f"SGLang's own {t.backend.label} builders, executed{scope}"


@functools.cache
def declared_table(t: GraphTable) -> Table:
    """``t`` as a table of the core (declared once: the engine's tables in the order of blame)."""
    bind = functools.partial
    return declare_table(
        Table(
            name=t.name,
            engine=NAME,
            layout=Layout.ROWS,
            width=Width(bind(_width, t), bind(_model_width, t), t.width_code),
            writers=t.writers,
            readers=t.readers,
            properties=(
                Property.WRITE_WITHIN_ROW,
                Property.NEIGHBOUR_ROWS_UNTOUCHED,
                Property.READ_WITHIN_ROW,
                Property.COPIED_FROM_OWN_ROW,
            ),
            same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
            rules={
                Property.READ_WITHIN_ROW: "The length a step publishes to the attention kernel, in whole pages, "
                "fits the page-table row it reads: ceil(cache_seqlens / P) <= the row's width.",
                Property.COPIED_FROM_OWN_ROW: "Every page index in the part of a row the kernel reads is a page of "
                "the request's own req_to_token row.",
            },
            blame_of={Property.COPIED_FROM_OWN_ROW: t.writers},
            cases=bind(cases, t),
            observe=bind(observe, t),
            group=group,
            closed_form=bind(closed_form, t),
            sweep=bind(_sweep, t),
            unjudged=bind(_unjudged, t),
            code_of=bind(code_of, t),
            finish=bind(finish, t),
            reached=bind(reached, t),
            cover=bind(cover, t),
            # the backends' tables share a quarter of each round (their cases are the same scenarios): each
            # covering set reaches every mode at the limit first
            share=0.25 / len(GRAPH_TABLES),
            observer=bind(_observer, t),
            pinned_out=bind(pinned_out, t),
            proved=(Property.WRITE_WITHIN_ROW, Property.READ_WITHIN_ROW),
        )
    )


# each checked backend's table, declared in the catalog's order (the order of blame)
DECLARED = {name: declared_table(t) for name, t in GRAPH_TABLES.items()}
FA3_TABLE, TRTLLM_MHA_TABLE, FLASHMLA_TABLE, TRTLLM_MLA_TABLE, TRITON_TABLE, FLASHINFER_TABLE, FLASHINFER_MLA_TABLE = (
    DECLARED.values()
)

# The tables themselves (each checked backend's, ``backends``), read here by the engine's modules as before.
__all__ = [
    "FA3",
    "FA3_PAGE_TABLE",
    "FLASHMLA",
    "GRAPH_TABLES",
    "TRTLLM_MHA",
    "TRTLLM_MLA",
    "TRITON",
    "GraphTable",
    "backend_of",
    "cover_line",
    "declared_table",
    "observe",
    "scenario",
    "tree_code",
]
