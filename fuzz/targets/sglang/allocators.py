"""The page of each kind's token-to-KV allocator, read out of SGLang's own code without importing it.

Every decode allocation is rounded to the page of the allocator the
deployment built (``token_to_kv_pool_allocator.page_size``; 0.5.23
``speculative/eagle_utils.py`` 865).  Two places build it:

* ``KVCacheConfigurator._build_token_to_kv_pool_allocator`` (0.5.23
  ``mem_cache/kv_cache_configurator.py`` 2795-2960; 0.5.16 1368-1500) for the
  standard, SWA and HiSparse pools.  The method is sliced to its ``if``
  statements, and each allocator it constructs becomes ``page = <its
  page_size= argument>``: the token allocator takes none and pages at 1
  (0.5.23 ``mem_cache/allocator/token.py`` 39); DeepSeek V4's HiSparse
  wrapper keeps the page of the allocator it wraps.  The slice runs with the
  configurator's attributes of the kind (``is_hybrid_swa`` for SWA), the
  published ``enable_hisparse``, the module's own platform probes
  (``_is_npu = is_npu()``, 163: False on the CUDA machine the model stands
  for) and an in-tree ``current_platform``.
* For the unified pools, three calls away: the configurator's
  ``_init_unified_*_pools`` hands ``page_size=self.page_size`` (the server's
  page_size: ``model_executor/model_runner.py`` 399, 674) to
  ``unified_memory_pool.py``'s ``init_unified_*_pools``, which hands its
  ``page_size`` to the allocator class (0.5.23 1763, 2255, 2479), whose
  ``__init__`` sets ``self.page_size``: ``page_size * dcp_size`` for unified
  Mamba (``allocator/unified_mamba.py`` 62-74, 0.5.20+), ``page_size`` for
  the unified SWA allocators (``allocator/unified_hybrid_swa.py`` 100; 0.5.16-
  0.5.19 in ``multi_ended_allocator.py``).  Each hop is read: the
  ``page_size=`` expression of the one call that builds the next, and of the
  class, its last top-level ``self.page_size =`` (with the assignments it
  reads) or, after it, a ``super().__init__(page_size=...)`` into a base
  class that is read the same way.

Before the configurator (0.5.13-0.5.15) the ModelRunner built both
(``model_executor/model_runner_kv_cache_mixin.py``): ``_init_pools`` (0.5.15
503) assigns ``self.token_to_kv_pool_allocator`` from the ModelRunner's own
``page_size``, ``dcp_size`` and ``enable_hisparse`` (1045-1160), and its
``_init_unified_*_pools`` start the same unified chain (352-499).

What stays modeled: which kind a deployment builds (``KVPool``), and that
no other attribute of the configurator changes the branch taken.  A name a
slice reads with no stand-in stops the run naming it (``StandInMissing``);
a chain that cannot be followed (a hop missing, two candidate calls, a base
class not in the files read) leaves that kind's page modeled, and the run
says so.
"""

from __future__ import annotations

import ast
import copy
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from allocator_model.pools import ROW_BUILDERS, KVPool

from .builders import compiled
from .stubs import Bag, Published, StandInMissing, StandIns

ALLOCATOR = "token_to_kv_pool_allocator"
ALLOCATOR_BUILDER = "_build_token_to_kv_pool_allocator"
# Where the allocator is built: the configurator's method (0.5.16+), or, in 0.5.13-0.5.15, the ModelRunner mixin's
# ``_init_pools`` (0.5.15 ``model_executor/model_runner_kv_cache_mixin.py`` 503, the allocator at 1045-1160),
# which assigns ``self.token_to_kv_pool_allocator``.
ALLOCATOR_BUILDERS = (ALLOCATOR_BUILDER, "_init_pools")
PAGE = "page_size"
PAGE_KEYWORDS = ("page_size", "physical_page_size")
SLICED_PAGE = "__kvrow_alloc_page"
# The kinds whose allocator ``_build_token_to_kv_pool_allocator`` builds; the unified kinds' allocators are
# built by ``unified_memory_pool.py``'s ``init_unified_*_pools``.
ALLOCATOR_KINDS = frozenset({KVPool.STANDARD, KVPool.SWA, KVPool.HISPARSE})
# ``TokenToKVPoolAllocator`` takes no page: ``super().__init__(size, 1, ...)`` (0.5.23 allocator/token.py 39).
TOKEN_ALLOCATOR_PAGE = 1
# The files of mem_cache/ the unified chain runs through, besides kv_cache_configurator.py.
UNIFIED_MODULES = (
    "unified_memory_pool.py",  # init_unified_*_pools (0.5.16+)
    "multi_ended_allocator.py",  # the unified allocator classes, 0.5.16-0.5.19
    "allocator/unified_mamba.py",  # 0.5.20+
    "allocator/unified_hybrid_swa.py",  # 0.5.20+
)
MAX_BASES = 8  # base classes followed from one allocator class (a cycle in hostile input ends here)
# What the allocator builder is handed, by parameter name: the pool sizes (every side non-empty: a
# pure-SWA model, whose full side is empty, is not a modeled deployment), a KV pool stand-in that is no
# DeepSeek V4 pool, no draft worker's allocator to share.
SIZES_TOKENS = 1 << 20

AllocPage = Callable[[], int]  # the page of one kind's allocator, read inside ``Published.bound``


@dataclass(frozen=True)
class Source:
    """One file of the target's mem_cache/: its text and where it was read."""

    text: str
    where: str


@dataclass(frozen=True)
class AllocPages:
    """Per kind: its allocator page (a function of the published configuration) and the code it was read from."""

    pages: dict[KVPool, AllocPage]
    origins: dict[KVPool, str]


def extract_alloc_pages(
    configurator: Source, others: Sequence[Source], published: Published, stand_ins: StandIns
) -> AllocPages:
    """The allocator page of every kind whose building code ``configurator`` and ``others`` hold."""
    tree = _parse(configurator)
    if tree is None:
        return AllocPages({}, {})
    pages: dict[KVPool, AllocPage] = {}
    origins: dict[KVPool, str] = {}
    builder = _allocator_builder(tree, configurator.where, published, stand_ins)
    if builder is not None:
        for kind in ALLOCATOR_KINDS:
            pages[kind] = functools.partial(builder, kind)
            origins[kind] = f"{builder.__name__}() of {configurator.where}"
    trees = [(t, s.where) for s in others if (t := _parse(s)) is not None]
    for kind, method in ROW_BUILDERS.items():
        if kind.unified:
            chain = _unified_chain(kind, method, tree, configurator.where, trees, published, stand_ins)
            if chain is not None:
                pages[kind], origins[kind] = chain
    return AllocPages(pages, origins)


def _parse(source: Source) -> ast.Module | None:
    try:
        return ast.parse(source.text, source.where)
    except (SyntaxError, ValueError):
        return None


def configurator_of(kind: KVPool, published: Published) -> Bag:
    """``self`` of the configurator (or 0.5.13-0.5.15's ModelRunner) for a kind: what the allocator branches read.

    Its page_size is the server's (0.5.23 ``model_executor/model_runner.py``
    399, handed to the configurator at 674; 0.5.15 ModelRunner 407), as are
    0.5.15's ``dcp_size`` (382) and ``enable_hisparse`` (426); no allocator
    exists yet, and the full pool is not empty (not pure SWA).
    """
    server_args = published.read("server_args")
    return Bag(
        "configurator",
        server_args=server_args,
        page_size=server_args.page_size,
        dcp_size=server_args.dcp_size,
        enable_hisparse=server_args.enable_hisparse,
        is_hybrid_swa=kind is KVPool.SWA,
        hybrid_gdn_config=None,
        kv_shard_size=1,
        is_draft_worker=False,
        full_max_total_num_tokens=SIZES_TOKENS,
        token_to_kv_pool_allocator=None,
    )


# -- _build_token_to_kv_pool_allocator ----------------------------------------


def _page_of(call: ast.Call) -> ast.expr | None:
    """The page an allocator constructor call is given; None for a wrapper of the allocator built before it.

    ``page_size=`` (or the page-interleave allocator's ``physical_page_size=``)
    when passed; a call on the allocator itself (DeepSeek V4's HiSparse
    wrapper) keeps its page; anything else is the token allocator, page 1.
    """
    for kw in call.keywords:
        if kw.arg in PAGE_KEYWORDS:
            return kw.value
    if any(_is_allocator(a) for a in call.args):
        return None
    return ast.Constant(TOKEN_ALLOCATOR_PAGE)


def _is_allocator(node: ast.expr) -> bool:
    """``token_to_kv_pool_allocator`` (the configurator's local) or ``self.token_to_kv_pool_allocator`` (0.5.15)."""
    if isinstance(node, ast.Name):
        return node.id == ALLOCATOR
    return isinstance(node, ast.Attribute) and node.attr == ALLOCATOR and isinstance(node.value, ast.Name)


def _slice_pages(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that build the allocator, as ``page = <its page>``, inside their ``if``s."""
    kept: list[ast.stmt] = []
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and any(_is_allocator(t) for t in stmt.targets)
            and isinstance(stmt.value, ast.Call)
        ):
            page = _page_of(stmt.value)
            if page is not None:
                target = ast.Name(SLICED_PAGE, ast.Store())
                kept.append(ast.copy_location(ast.Assign(targets=[target], value=page), stmt))
        elif isinstance(stmt, ast.If):
            inner, orelse = _slice_pages(stmt.body), _slice_pages(stmt.orelse)
            if inner or orelse:
                kept.append(ast.copy_location(ast.If(test=stmt.test, body=inner or [ast.Pass()], orelse=orelse), stmt))
    return kept


def _allocator_builds(body: list[ast.stmt], sliced: bool = False) -> int:
    """How many statements of ``body`` (at any depth) build an allocator, or, ``sliced``, set the sliced page."""
    count = 0
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and not sliced:
                count += any(_is_allocator(t) for t in node.targets) and _page_of(node.value) is not None
            elif isinstance(node, ast.Assign) and sliced:
                count += any(isinstance(t, ast.Name) and t.id == SLICED_PAGE for t in node.targets)
    return count


def _module_probes(tree: ast.Module, known: dict[str, Any]) -> dict[str, Any]:
    """Module-level ``_is_npu = is_npu()``-style constants: a name bound to a platform probe's answer.

    0.5.23 ``kv_cache_configurator.py`` 163: ``_is_npu = is_npu()``; the
    probes answer as on the CUDA machine the model stands for (``stubs.HELPERS``).
    """
    out: dict[str, Any] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name)
            and stmt.value.func.id.startswith("is_")
            and stmt.value.func.id in known
            and not stmt.value.args
            and not stmt.value.keywords
        ):
            out[stmt.targets[0].id] = known[stmt.value.func.id]()
    return out


def _allocator_builder(
    tree: ast.Module, filename: str, published: Published, stand_ins: StandIns
) -> Callable[[KVPool], int] | None:
    """The page ``_build_token_to_kv_pool_allocator`` builds for a kind of ``ALLOCATOR_KINDS``.

    None when the source has no such method, it takes a parameter this does
    not supply, or it builds an allocator where the slice does not follow
    (inside a loop, ``with``, ``try`` or ``match``): the page then stays
    modeled rather than read from the branches it can see.
    """
    methods = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in ALLOCATOR_BUILDERS]
    method = min(methods, key=lambda n: ALLOCATOR_BUILDERS.index(n.name), default=None)
    if method is None:
        return None
    kept = _slice_pages(method.body)
    handed = _handed()
    params, required = _parameters(method.args)
    if not kept or any(p not in handed for p in required):
        return None
    if _allocator_builds(method.body) != _allocator_builds(kept, sliced=True):
        return None
    body = [
        ast.Assign(targets=[ast.Name(SLICED_PAGE, ast.Store())], value=ast.Constant(None)),
        *kept,
        ast.Return(ast.Name(SLICED_PAGE, ast.Load())),
    ]
    # 0.5.15's ``is_dsv4_model`` is a local of _init_pools (627, from the model's hf_config): no DeepSeek V4 here,
    # as the configurator is handed (``_handed``).
    names = {"is_dsv4_model": False, **_module_probes(tree, stand_ins.known)}
    builder = compiled(
        method, f"{method.name}__page", _without_annotations(method.args), body, filename, stand_ins, names
    )
    kwargs = {p: v for p, v in handed.items() if p in params}

    def alloc_page(kind: KVPool) -> int:
        page = builder(configurator_of(kind, published), **kwargs)
        if page is None:  # no branch of the slice built an allocator for this deployment
            raise StandInMissing(
                f"{method.name}() builds no allocator on the branch this deployment takes (kind {kind.value}): "
                "kvrow-fuzz cannot read its page"
            )
        return page  # type: ignore[no-any-return]

    alloc_page.__name__ = method.name
    return alloc_page


def _without_annotations(args: ast.arguments) -> ast.arguments:
    """The parameters with their annotations dropped (they name SGLang types, evaluated at ``def``)."""
    out = copy.deepcopy(args)
    for a in out.posonlyargs + out.args + out.kwonlyargs + [out.vararg, out.kwarg]:
        if a is not None:
            a.annotation = None
    return out


def _parameters(args: ast.arguments) -> tuple[list[str], list[str]]:
    """A method's parameters after ``self``, and those of them without a default."""
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    required = [a.arg for i, a in enumerate(positional) if i < first_default]
    required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    params = [a.arg for a in positional + args.kwonlyargs]
    return params[1:], [r for r in required if r != params[0]]


class _KVPoolStandIn:
    """The KV pool the allocator builder is handed: no SGLang class (so no DeepSeek V4 pool)."""


def _handed() -> dict[str, Any]:
    tokens = SIZES_TOKENS
    sizes = Bag("sizes", max_total_num_tokens=tokens, full_max_total_num_tokens=tokens, swa_max_total_num_tokens=tokens)
    return {
        "sizes": sizes,
        "token_to_kv_pool": _KVPoolStandIn(),
        "is_dsv4_model": False,
        "req_to_token_pool": None,
        ALLOCATOR: None,
    }


# -- the unified pools: configurator -> init_unified_*_pools -> the allocator class -----


def _page_call(fn: ast.FunctionDef, callee: Callable[[str], bool]) -> tuple[str, ast.expr] | None:
    """(callee, its page_size= expression) of the one kind of call in ``fn`` to a name ``callee`` accepts.

    None when there is none, or more than one distinct (callee, page): the
    chain is ambiguous and the page stays modeled.
    """
    found: dict[tuple[str, str], tuple[str, ast.expr]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and callee(node.func.id):
            page = next((kw.value for kw in node.keywords if kw.arg == PAGE), None)
            if page is not None:
                found[(node.func.id, ast.unparse(page))] = (node.func.id, page)
    return next(iter(found.values())) if len(found) == 1 else None


def _hop(
    fn: ast.FunctionDef, param: str, body: list[ast.stmt], filename: str, stand_ins: StandIns, name: str
) -> Callable[[Any], Any]:
    """``body`` (ending in a return) compiled as a function of one parameter ``param``."""
    args = ast.arguments(posonlyargs=[], args=[ast.arg(param)], kwonlyargs=[], kw_defaults=[], defaults=[])
    return compiled(fn, name, args, body, filename, stand_ins, {})


def _returning(expr: ast.expr, at: ast.AST) -> ast.Return:
    return ast.copy_location(ast.Return(copy.deepcopy(expr)), at)


def _unified_chain(
    kind: KVPool,
    method_name: str,
    configurator: ast.Module,
    configurator_where: str,
    trees: list[tuple[ast.Module, str]],
    published: Published,
    stand_ins: StandIns,
) -> tuple[AllocPage, str] | None:
    """The page of a unified kind's allocator, hop by hop (the module docstring); None if a hop is missing."""
    method = next((n for n in ast.walk(configurator) if isinstance(n, ast.FunctionDef) and n.name == method_name), None)
    if method is None:
        return None
    first = _page_call(method, lambda n: n.startswith("init_unified"))
    if first is None:
        return None
    pool_fn_name, page1 = first
    pool_fn = _top_level(trees, ast.FunctionDef, pool_fn_name)
    if pool_fn is None:
        return None
    second = _page_call(pool_fn[0], lambda n: n.endswith("TokenToKVPoolAllocator"))
    if second is None:
        return None
    class_name, page2 = second
    init = _class_page(class_name, trees, stand_ins, MAX_BASES)
    if init is None:
        return None
    hop1 = _hop(method, "self", [_returning(page1, method)], configurator_where, stand_ins, f"{method_name}__page")
    hop2 = _hop(pool_fn[0], PAGE, [_returning(page2, pool_fn[0])], pool_fn[1], stand_ins, f"{pool_fn_name}__page")

    def alloc_page() -> int:
        return init(hop2(hop1(configurator_of(kind, published))))  # type: ignore[no-any-return]

    origin = f"{method_name}() of {configurator_where} -> {pool_fn_name}() of {pool_fn[1]} -> {class_name}.__init__"
    return alloc_page, origin


def _top_level(trees: list[tuple[ast.Module, str]], kind: type, name: str) -> tuple[Any, str] | None:
    """The first module-level function or class ``name`` in the files read, with its file."""
    for tree, where in trees:
        for node in tree.body:
            if isinstance(node, kind) and getattr(node, "name", None) == name:
                return node, where
    return None


def _needed(stmts: list[ast.stmt], expr: ast.expr) -> list[ast.stmt]:
    """The top-level ``name = ...`` statements before ``expr`` that it reads, transitively (a def-use slice)."""
    wanted = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    kept: list[ast.stmt] = []
    for stmt in reversed(stmts):
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id in wanted
        ):
            kept.insert(0, stmt)
            wanted.discard(stmt.targets[0].id)
            wanted |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
    return kept


def _is_self_page(stmt: ast.stmt) -> ast.expr | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0]
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and t.attr == PAGE:
            return stmt.value
    return None


def _super_page(stmt: ast.stmt) -> ast.expr | None:
    """The ``page_size=`` of a top-level ``super().__init__(...)`` call."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "__init__"
            and isinstance(f.value, ast.Call)
            and isinstance(f.value.func, ast.Name)
            and f.value.func.id == "super"
        ):
            return next((kw.value for kw in stmt.value.keywords if kw.arg == PAGE), None)
    return None


def _class_page(
    name: str, trees: list[tuple[ast.Module, str]], stand_ins: StandIns, bases_left: int
) -> Callable[[Any], Any] | None:
    """``self.page_size`` after ``name.__init__(page_size=p)``, as a function of p; None if it cannot be read.

    The last top-level statement of ``__init__`` that sets it wins: an own
    ``self.page_size = ...`` (with the assignments it reads), or a
    ``super().__init__(page_size=...)`` into the first base class, read the
    same way.  A class without ``__init__`` is its first base's.
    """
    found = _top_level(trees, ast.ClassDef, name)
    if found is None or bases_left <= 0:
        return None
    cls, where = found
    base = cls.bases[0].id if cls.bases and isinstance(cls.bases[0], ast.Name) else None
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return None if base is None else _class_page(base, trees, stand_ins, bases_left - 1)
    top = {id(stmt) for stmt in init.body}
    for node in ast.walk(init):  # set under an if, a loop, a with: which one runs is not read here
        if isinstance(node, ast.stmt) and id(node) not in top and (_is_self_page(node) or _super_page(node)):
            return None
    last: tuple[str, int, ast.expr] | None = None
    for i, stmt in enumerate(init.body):
        own, into_base = _is_self_page(stmt), _super_page(stmt)
        if own is not None:
            last = ("own", i, own)
        elif into_base is not None:
            last = ("super", i, into_base)
    if last is None:
        return None
    how, i, expr = last
    body = [*_needed(init.body[:i], expr), _returning(expr, init.body[i])]
    page = _hop(init, PAGE, body, where, stand_ins, f"{name}__init__page")
    if how == "own":
        return page
    if base is None:
        return None
    base_page = _class_page(base, trees, stand_ins, bases_left - 1)
    if base_page is None:
        return None
    return lambda p: base_page(page(p))
