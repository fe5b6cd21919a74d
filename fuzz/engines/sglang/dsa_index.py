"""The DSA indexer's key cache as a checked table: one flat buffer per layer, indexed by the allocator's location.

A DeepSeek sparse-attention model (DeepSeek-V3.2, GLM-5) stores, for every KV location the allocator hands out, an
index key at ``loc // page``, ``loc % page`` of its pool's index key cache, with no bounds check.  Under decode
context parallelism the allocator spans ``size * D`` locations in pages of ``page * D`` and the indexer stores at
that global location (every rank keeps every index key), so a cache sized from the pool's ``size`` alone stores the
allocator's upper pages past its end.  Every store's bound is the cache's extent (which location a request owns is
the allocator's business, judged on ``req_to_token``'s own checks).  A case is a configuration (the pool's size, the
DCP size) and one allocator page whose tokens are stored; on a target with SGLang's files the extent is SGLang's own
``DSATokenToKVPool.__init__`` and the page range its own paged allocator's (``real.runtime.dsa_index``), on the
model their twin (``allocator_model.dsa_index``).  The store itself is the indexer's kernel (CUDA, or triton): not
run here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.dsa_index import DSA_PAGE, dcp_largest_location, index_buf_size, index_locations
from allocator_model.pools import KVPool, pool_alloc_page
from allocator_model.regimes import regime
from fuzz.common.errors import TargetError
from fuzz.findings.kinds import Property
from fuzz.tables import GUARD, Access, AccessKind, CodeRef, Layout, Span, Table, Width, declare_table
from fuzz.tables.declared import Code, Explained, Reach, Sweep, Swept
from fuzz.verdict import Unjudgeable

from . import page_tables as _page_tables  # noqa: F401  (declared first: the engine's tables in the order of blame)
from .backends import DSA_BACKEND as BACKEND
from .backends import DSA_INDEX as TABLE
from .locations import SGLANG_REPO_PATH
from .page_table_builds import without_tree
from .real.runtime.bounds import SGLangTimeout
from .real.stubs import StandInMissing
from .specs import NAME

_POOL_FILE = SGLANG_REPO_PATH + "sglang/srt/mem_cache/memory_pool.py"
WIDTH_CODE = (
    CodeRef(_POOL_FILE, "DSATokenToKVPool.__init__"),
    CodeRef(SGLANG_REPO_PATH + "sglang/srt/mem_cache/index_key_cache.py", "IndexKeyCache.__init__"),
)
_INDEXER = SGLANG_REPO_PATH + "sglang/srt/layers/attention/dsa/dsa_indexer.py"
WRITERS = (CodeRef(_INDEXER, "Indexer._store_index_k_cache"),)
# DeepSeek-V3.2's context length (its config.json's max_position_embeddings): the line's, which the cache ignores
CONTEXT_LEN = 163840
# Pool sizes drawn (tokens): from a toy pool to a large GPU's, shrinking toward the smallest
POOL_SIZES = (4096, 1 << 22)
# The proof's pools: every size in one allocator page's range from each of these, at each DCP size (the drawn pool
# sizes' ends and a deployment's)
PROVED_FROM = (POOL_SIZES[0], 1 << 20, POOL_SIZES[1] - DSA_PAGE * 16)
# A deployment's pool (tokens per rank): the order of what a GPU keeps of an MLA model's KV beside its weights
REPRESENTATIVE_POOL = 1 << 20


def _runtime(target: Any) -> Any:
    return target.sizing.write_path.runtime


@functools.lru_cache(maxsize=1024)
def _executed(runtime: Any, cfg: ServingConfig) -> tuple[int | None, int, int]:
    """(the pool's index_buf_size where it keeps it, the cache's locations, the allocator's largest location),
    SGLang's own code run for ``cfg``."""
    from .real.runtime.dsa_index import build_index_cache, dcp_allocator, largest_location

    size = int(cfg.max_total_num_tokens or 0)
    with runtime.bound(cfg, cfg.launch_runtime, f"DSATokenToKVPool(size={size}, ...) of {runtime.origin}"):
        built = build_index_cache(runtime.tree, size, cfg.page_size, cfg.attn_dcp_size)
    return built.index_buf_size, built.locations, largest_location(dcp_allocator(runtime, cfg, size))


def built(target: Any, cfg: ServingConfig) -> tuple[int | None, int, int]:
    """(index_buf_size where the pool keeps it, the locations the index key cache holds, the largest location the
    allocator hands out) at ``cfg``: the target's own code where it has it (``Unjudgeable`` where it cannot run),
    the model's twin on the model."""
    size, page, dcp = int(cfg.max_total_num_tokens or 0), cfg.page_size, cfg.attn_dcp_size
    if target.is_model:
        widened = target.revision.dsa_index_dcp_widened
        buf = index_buf_size(size, page, dcp, widened)
        return buf, index_locations(size, page, dcp, widened), dcp_largest_location(size, page, dcp)
    why = unjudged(target)
    if why is not None:
        raise Unjudgeable(why)
    return _executed(_runtime(target), cfg)


def extent(target: Any, cfg: ServingConfig) -> tuple[int, int]:
    """(the locations the index key cache holds, the largest location the allocator hands out) at ``cfg``."""
    return built(target, cfg)[1:]


def _refusal(runtime: Any) -> str | None:
    """Why the pool does not build on ``runtime`` (None: it built the probe); a timeout is not kept (a later
    command sharing the runtime asks again)."""
    try:
        return _kept_refusal(runtime)
    except SGLangTimeout as e:
        return _refused(runtime, e)


@functools.lru_cache(maxsize=64)
def _kept_refusal(runtime: Any) -> str | None:
    try:
        _executed(runtime, config(4096, 1))
    except (TargetError, StandInMissing) as e:
        return _refused(runtime, e)
    return None


def _refused(runtime: Any, e: BaseException) -> str:
    return f"SGLang's DSATokenToKVPool does not build from {runtime.tree.origin}: {str(e).splitlines()[0]}"


def unjudged(target: Any) -> str | None:
    """Why the cache is not judged on ``target``: a real target without SGLang's tree, or whose pool does not build."""
    if target.is_model:
        return None
    missing = without_tree(target, "the DSA pool is")
    return missing if missing is not None else _refusal(_runtime(target))


def config(size: int, dcp: int, **pins: Any) -> ServingConfig:
    """A DSA launch: page 64, a pool of ``size`` tokens, DCP ``dcp`` (``pins`` as given; ConfigError as SGLang's)."""
    args = {"context_len": CONTEXT_LEN, **pins, "page_size": DSA_PAGE, "attn_dcp_size": dcp}
    return ServingConfig.resolve(**args, max_total_num_tokens=size)


def allocator_pages(cfg: ServingConfig, largest: int) -> tuple[int, int]:
    """(the allocator's page, its last page's number)."""
    page = pool_alloc_page(KVPool.STANDARD, cfg.page_size, cfg.attn_dcp_size)
    return page, (largest + 1) // page - 1


def _page_of(data: Mapping[str, Any]) -> int:
    if set(data) != {"page"} or type(data["page"]) is not int:
        raise ValueError('this table\'s case is {"page": int}: the allocator page whose keys are stored')
    return int(data["page"])


def observe(target: Any, cfg: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
    """The indexer storing the keys of allocator page ``data["page"]``: its locations, bound by the cache."""
    k = _page_of(data)
    out = pinned_out({"kv_pool": cfg.kv_pool.value, "page_size": cfg.page_size})
    if out is not None or (cfg.max_total_num_tokens or 0) < DSA_PAGE:
        raise ValueError(f"a DSA launch: the standard pool's kind at page {DSA_PAGE}, a pool (--max-total-tokens) of "
                         f"a page or more")  # fmt: skip
    locations, largest = extent(target, cfg)
    page, last = allocator_pages(cfg, largest)
    if not 1 <= k <= last:
        raise ValueError(f"page {k} is not one the allocator hands out (1 to {last})")
    start, end = k * page, (k + 1) * page
    spill = (Span(None, max(start, locations), end, GUARD),) if end > locations else ()
    owner = f"the request holding allocator page {k} of {last} (locations {start}-{end - 1})"
    step = (
        f"the indexer stores the index keys of locations {start}-{end - 1} (allocator page {k}, {page} tokens) "
        f"at loc // {cfg.page_size} of the index key cache, which holds {locations} locations"
    )
    return [Access(TABLE, owner, AccessKind.WRITE, (Span(None, start, end),), (Span(None, 0, locations),), spill,
                   step=step)]  # fmt: skip


def group(cfg: ServingConfig) -> str:
    """The bug group: the configuration's regime, as ``req_to_token``'s findings are grouped."""
    return regime(cfg, pool_alloc_page(cfg.kv_pool, cfg.page_size, cfg.attn_dcp_size)).value


def pinned_out(pins: Mapping[str, Any]) -> str | None:
    """Why the pins leave no DSA launch (the standard pool's kind, page 64), None where some may."""
    pool, page = pins.get("kv_pool"), pins.get("page_size")
    if pool is not None and str(pool) != KVPool.STANDARD.value:
        return f"the pins leave no launch it is judged on: a DSA model's pool (the standard kind), page {DSA_PAGE}"
    if page is not None and int(page) != DSA_PAGE:
        return f"the pins leave no launch it is judged on: DSA runs page {DSA_PAGE}"
    return None


def _dcp_sizes(target: Any, pins: Mapping[str, Any]) -> list[int]:
    """The DCP sizes the space draws (``strategies.space.DCP_SIZES``, or the pinned one) that the target runs."""
    from strategies.space import DCP_SIZES

    pinned = pins.get("attn_dcp_size")
    sizes = [int(pinned)] if pinned is not None else sorted(DCP_SIZES)
    return [d for d in sizes if target.revision.refuses(config(POOL_SIZES[0], d)) is None]


def _free(pins: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pins.items() if k not in ("kv_pool", "page_size", "attn_dcp_size", "max_total_num_tokens")}


@st.composite
def _case(draw: st.DrawFn, target: Any, pins: Mapping[str, Any]) -> tuple[ServingConfig, dict[str, Any]]:
    """A DSA launch drawn as every configuration is (``strategies.space``), at page 64 and the model's context, a
    pool size drawn; speculation only where a pin asks for it (the cache does not depend on it)."""
    from strategies import space
    from strategies.configs import DrawChooser

    rev = target.revision
    speculative = any(k.startswith("speculative_") for k in pins)
    size = pins["max_total_num_tokens"] if "max_total_num_tokens" in pins else draw(st.integers(*POOL_SIZES))
    fixed = {"context_len": CONTEXT_LEN, **_free(pins), "kv_pool": KVPool.STANDARD, "page_size": DSA_PAGE,
             "max_total_num_tokens": size}  # fmt: skip
    if "attn_dcp_size" in pins:
        fixed["attn_dcp_size"] = pins["attn_dcp_size"]
    cfg = space.serving_config(DrawChooser(draw), rev.algorithms if speculative else (), fixed, dcp=rev.dcp)
    if cfg is None or rev.refuses(cfg) is not None:
        reject()
    last = (cfg.max_total_num_tokens or 0) // cfg.page_size  # the allocator's pages: size * D / (page * D)
    if last < 1:
        reject()
    return cfg, {"page": draw(st.just(last) | st.integers(1, last))}


def cases(target: Any, pins: Mapping[str, Any]) -> st.SearchStrategy[tuple[ServingConfig, dict[str, Any]]]:
    """DSA launches (page 64) at each DCP size the target runs, a pool size and one allocator page (its last first)."""
    return _case(target, dict(pins))


def cover(target: Any, pins: Mapping[str, Any]) -> list[tuple[ServingConfig, dict[str, Any]]]:
    """At each DCP size the target runs: a pool of ``POOL_SIZES[0]`` tokens (or the pinned one), its allocator's last
    page."""
    size = int(pins.get("max_total_num_tokens") or POOL_SIZES[0])
    out = []
    for dcp in _dcp_sizes(target, pins):
        try:
            cfg = config(size, dcp, **_free(pins))
        except ConfigError:
            continue
        if size >= DSA_PAGE:
            out.append((cfg, {"page": size // DSA_PAGE}))
    return out


def closed_form(target: Any, cfg: ServingConfig) -> Reach | None:
    """The furthest location the indexer stores (the allocator's last page's end) against the cache's extent."""
    if cfg.page_size != DSA_PAGE or not cfg.max_total_num_tokens:
        return None
    locations, largest = extent(target, cfg)
    return Reach(locations, largest + 1, {"page": allocator_pages(cfg, largest)[1]})


def sweep(target: Any, prover: Any) -> Sweep:
    """The closed form at each DCP size the target runs (the space's), over every pool size in one allocator page
    from each of ``PROVED_FROM``'s sizes (the pool sizes drawn begin and end there too): every residue of the size
    mod the allocator page, where the extent steps.  On SGLang's own code (a build a sweep point), mod the page: its
    allocator's pages are ``size * D // (page * D)``, the pool's ``size // page`` [cite: dcp-allocator-size]."""
    groups: dict[str, Swept] = {}
    count = 0
    dcps = _dcp_sizes(target, {})
    for dcp in dcps:
        page = DSA_PAGE * (dcp if target.is_model else 1)
        for size in (s for start in PROVED_FROM for s in range(start, start + page)):
            cfg = config(size, dcp)
            reach = closed_form(target, cfg)
            assert reach is not None
            count += 1
            if reach.end <= reach.width:
                continue
            key, worst = group(cfg), reach.end - reach.width
            old = groups.get(key)
            n = (old.configurations if old else 0) + 1
            keep = old is not None and old.worst >= worst
            groups[key] = Swept(Property.WRITE_WITHIN_ROW, key, n, *((old.worst, old.config, old.reach) if keep and old
                                else (worst, cfg, reach)))  # fmt: skip
    starts = ", ".join(f"{s:,}" for s in PROVED_FROM)
    which = "allocator page" if target.is_model else f"page ({DSA_PAGE} tokens: the allocator's pages are size // page)"
    over = f"every pool size in one {which} from {starts} tokens, at DCP {', '.join(map(str, dcps))}"
    return Sweep(count, over, tuple(groups.values()))


def code_of(target: Any, refs: tuple[CodeRef, ...]) -> tuple[Code, ...]:
    """``refs`` on ``target``: the model's twin (``allocator_model/dsa_index.py``), or SGLang's files in its tree."""
    from allocator_model import dsa_index as model

    if target.is_model:
        path = Path(model.__file__ or "")
        shown = f"{path.parent.name}/{path.name}"
        return (Code(CodeRef(shown, "index_locations"), shown, path.read_text(), local=False),)
    from .page_tables import tree_code

    return tree_code(target, refs)


def _representative(target: Any, f: Any) -> Any:
    """The group at a deployment's pool (``REPRESENTATIVE_POOL`` tokens per rank, the finding's DCP size): the first
    allocator page stored past the cache, judged as any case is."""
    from fuzz.findings.model import Search
    from fuzz.tables.case import TableCase
    from fuzz.verdict import PIPELINE

    cfg = f.config.replace(max_total_num_tokens=REPRESENTATIVE_POOL)
    locations, largest = extent(target, cfg)
    page, last = allocator_pages(cfg, largest)
    k = max(1, locations // page)  # its locations [k * page, (k + 1) * page) reach past the cache's end
    judged = PIPELINE.case(target, TableCase(DSA_INDEX_TABLE, cfg, {"page": k}), (f.signature.prop,), confirm=False)
    found = next((g for g in judged.findings if g.signature == f.signature), None)
    if k > last or found is None:
        return Search(1, 1, missed=f"a pool of {REPRESENTATIVE_POOL:,} tokens per rank holds every location")
    deployment = (
        f"context {cfg.context_len} (DeepSeek-V3.2's), a pool of {REPRESENTATIVE_POOL:,} tokens per rank "
        f"(--max-total-tokens), DCP {cfg.attn_dcp_size} (the group needs it), page {DSA_PAGE} (DSA's), allocator page "
        f"{k} of {last}: the first stored past the cache"
    )
    return Search(1, 1, found, deployment)


def finish(target: Any, f: Any) -> Any:
    """A group's finding with its representative case beside it; on a real target both confirmed: the extent and
    the pages are SGLang's own code's."""
    f.search = _representative(target, f)
    if not target.is_model:
        for found in (f, f.search.found):
            if found is not None:
                found.confirmed = True
                found.confirmation = (
                    f"confirmed on SGLang's own DSATokenToKVPool.__init__ and paged allocator, executed from "
                    f"{target.spec} (the cache's extent, the allocator's pages); the store is the indexer's kernel, "
                    "not run here"
                )
    return f


def reached(cfg: ServingConfig, data: Mapping[str, Any]) -> str:
    """How a deployment gets there: the allocator hands its free pages out lowest first."""
    k = _page_of(data)
    return (
        f"a DSA model under --dcp-size {cfg.attn_dcp_size} with the KV pool at {cfg.max_total_num_tokens} tokens per "
        f"rank, once the allocator hands out page {k} (its free pages go lowest first: about "
        f"{100 * k // max(1, (cfg.max_total_num_tokens or 1) // cfg.page_size)}% of the pool in use)"
    )


def explain(target: Any, f: Any) -> Explained:
    """The advisory's account of a finding on it: the example case built on the target, worded by
    ``causes.dsa_index``."""
    from .causes.dsa_index import Built, account

    cfg = f.config
    buf, locations, largest = built(target, cfg)
    page, last = allocator_pages(cfg, largest)
    size = int(cfg.max_total_num_tokens or 0)
    return account(Built(size, cfg.page_size, cfg.attn_dcp_size, buf, locations, largest, page, last,
                         observer_of(target), target.is_model, f.target))  # fmt: skip


def _width(target: Any, cfg: ServingConfig) -> int:
    return extent(target, cfg)[0]


def _model_width(cfg: ServingConfig, revision: Any) -> int:
    size = int(cfg.max_total_num_tokens or 0)
    return index_locations(size, cfg.page_size, cfg.attn_dcp_size, revision.dsa_index_dcp_widened)


def observer_of(target: Any) -> str:
    if target.is_model:
        return "the model's twin of SGLang's DSA pool"
    return "SGLang's own DSA pool and allocator, executed"


DSA_INDEX_TABLE = declare_table(
    Table(
        name=TABLE,
        engine=NAME,
        layout=Layout.BY_LOCATION,
        width=Width(_width, _model_width, WIDTH_CODE),
        writers=WRITERS,
        readers=(),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        cases=cases,
        observe=observe,
        group=group,
        closed_form=closed_form,
        sweep=sweep,
        unjudged=unjudged,
        code_of=code_of,
        finish=finish,
        reached=reached,
        cover=cover,
        share=0.05,
        observer=observer_of,
        pinned_out=pinned_out,
        proved=(Property.WRITE_WITHIN_ROW,),
        explain=explain,
    )
)

__all__ = ["BACKEND", "DSA_INDEX_TABLE", "TABLE", "extent"]
