"""The page of each kind's token-to-KV allocator, read out of SGLang's own code without importing it.

Every decode allocation is rounded to the page of the allocator the
deployment built (``token_to_kv_pool_allocator.page_size``
[cite: decode-rounds-with-allocator-page]).  Two places build it:

* ``KVCacheConfigurator._build_token_to_kv_pool_allocator``
  (``mem_cache/kv_cache_configurator.py``, 0.5.16+) [cite: allocator-builder] for the
  standard, SWA and HiSparse pools.  The method is sliced to its ``if``
  statements, and each allocator it constructs becomes ``page = <its
  page_size= argument>``: the token allocator takes none and pages at 1
  (``mem_cache/allocator/token.py``) [cite: token-allocator-page-1]; DeepSeek V4's HiSparse
  wrapper keeps the page of the allocator it wraps.  The slice runs with the
  configurator's attributes of the kind (``is_hybrid_swa`` for SWA), the
  published ``enable_hisparse``, the module's own platform probes
  (``_is_npu = is_npu()`` [cite: configurator-is-npu-probe]: False on the CUDA machine the model
  stands for) and an in-tree ``current_platform``.
* For the unified pools, three calls away: the configurator's
  ``_init_unified_*_pools`` hands ``page_size=self.page_size`` (the server's
  page_size: ``model_executor/model_runner.py`` [cite: model-runner-page-size]
  [cite: configurator-handed-page-size]) to ``unified_memory_pool.py``'s
  ``init_unified_*_pools``, which hands its ``page_size`` to the allocator class
  ([cite: unified-mamba-allocator-built] [cite: unified-swa-allocator-built]
  [cite: unified-mamba-swa-allocator-built]), whose ``__init__`` sets
  ``self.page_size``: ``page_size * dcp_size`` for unified Mamba
  (``allocator/unified_mamba.py``, 0.5.20+) [cite: unified-mamba-allocator-page-dcp], ``page_size`` for
  the unified SWA allocators (``allocator/unified_hybrid_swa.py`` [cite: unified-swa-allocator-page];
  0.5.15-0.5.19 in ``multi_ended_allocator.py``).  Each hop is read: the
  ``page_size=`` expression of the one call that builds the next, and of the
  class, its last top-level ``self.page_size =`` (with the assignments it
  reads) or, after it, a ``super().__init__(page_size=...)`` into a base
  class that is read the same way.

Before the configurator (0.5.13-0.5.15) the ModelRunner built both
(``model_executor/model_runner_kv_cache_mixin.py``): ``_init_pools``
[cite: mixin-init-pools] assigns ``self.token_to_kv_pool_allocator`` from the ModelRunner's own
``page_size``, ``dcp_size`` and ``enable_hisparse`` [cite: mixin-allocator-built], and its
``_init_unified_*_pools`` start the same unified chain [cite: mixin-unified-pools].

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
from fuzz.common.pysource import parsed
from fuzz.targets.base import UNPARSABLE

from .builders import compiled
from .private_imports import StandIns
from .stubs import Published, StandInBag, StandInMissing

ALLOCATOR = "token_to_kv_pool_allocator"
ALLOCATOR_BUILDER = "_build_token_to_kv_pool_allocator"
# Where the allocator is built: the configurator's method (0.5.16+), or, in 0.5.13-0.5.15, the ModelRunner mixin's
# ``_init_pools`` (``model_executor/model_runner_kv_cache_mixin.py``) [cite: mixin-init-pools], which assigns
# ``self.token_to_kv_pool_allocator`` [cite: mixin-allocator-built].
ALLOCATOR_BUILDERS = (ALLOCATOR_BUILDER, "_init_pools")
PAGE = "page_size"
PAGE_KEYWORDS = ("page_size", "physical_page_size")
SLICED_PAGE = "__kvrow_alloc_page"
# The kinds whose allocator ``_build_token_to_kv_pool_allocator`` builds; the unified kinds' allocators are
# built by ``unified_memory_pool.py``'s ``init_unified_*_pools``.
ALLOCATOR_KINDS = frozenset({KVPool.STANDARD, KVPool.SWA, KVPool.HISPARSE})
# ``TokenToKVPoolAllocator`` takes no page: ``super().__init__(size, 1, ...)`` [cite: token-allocator-page-1].
TOKEN_ALLOCATOR_PAGE = 1
TOKEN_ALLOCATOR = "TokenToKVPoolAllocator"
# The files of mem_cache/ the unified chain runs through, besides kv_cache_configurator.py.
UNIFIED_MODULES = (
    "unified_memory_pool.py",  # init_unified_*_pools (0.5.15+)
    "multi_ended_allocator.py",  # the unified allocator classes, 0.5.15-0.5.19
    "allocator/unified_mamba.py",  # 0.5.20+
    "allocator/unified_hybrid_swa.py",  # 0.5.20+
    "allocator/base.py",  # BaseTokenToKVPoolAllocator: the base the unified SWA allocators call by name
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
        return parsed(source.text, source.where)
    except UNPARSABLE:
        return None


def configurator_of(kind: KVPool, published: Published) -> StandInBag:
    """``self`` of the configurator (or 0.5.13-0.5.15's ModelRunner) for a kind: what the allocator branches read.

    Its page_size is the server's (``model_executor/model_runner.py``
    [cite: model-runner-page-size], handed to the configurator
    [cite: configurator-handed-page-size]), as are 0.5.15's ``dcp_size``
    [cite: model-runner-dcp-size] and ``enable_hisparse`` [cite: model-runner-enable-hisparse]; no
    allocator exists yet, and the full pool is not empty (not pure SWA).
    """
    server_args = published.read("server_args")
    return StandInBag(
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


class _Unfollowable(Exception):
    """A construct the slice does not follow: the page stays modeled (never guessed)."""


def _callee(call: ast.Call) -> str | None:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _mentions_allocator(node: ast.AST) -> bool:
    return any(_is_allocator(n) for n in ast.walk(node) if isinstance(n, (ast.Name, ast.Attribute)))


def _page_of(call: ast.Call) -> ast.expr | None:
    """The page an allocator constructor call is given; None for a wrapper of the allocator built before it.

    ``page_size=`` (or the page-interleave allocator's ``physical_page_size=``)
    when passed; a call handed the allocator itself (DeepSeek V4's HiSparse
    wrapper) keeps its page; ``TokenToKVPoolAllocator``, which takes no page,
    pages at 1.  Anything else (a page passed by position or ``**``, a
    factory of another name) is ``_Unfollowable``.
    """
    for kw in call.keywords:  # an explicit keyword is the page: ``**`` cannot pass it again (a TypeError)
        if kw.arg in PAGE_KEYWORDS:
            return kw.value
    if any(kw.arg is None for kw in call.keywords):
        raise _Unfollowable(f"{_callee(call)}(**...) without page_size=")
    if _mentions_allocator(call):
        return None
    if _callee(call) == TOKEN_ALLOCATOR and len(call.args) <= 1:
        return ast.Constant(TOKEN_ALLOCATOR_PAGE)
    raise _Unfollowable(f"{_callee(call)}() without page_size=")


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


def _check_followable(method: ast.FunctionDef) -> None:
    """``_Unfollowable`` if ``method`` sets the allocator, or its page, in a way the slice does not read.

    The slice reads ``allocator = Call(page_size=...)`` statements under
    ``if``s; it does not read an allocator returned, unpacked, annotated,
    assigned from anything but a call, or a page changed afterwards.
    """
    for node in ast.walk(method):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
            raise _Unfollowable("an allocator returned from a call")
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)) and _touches_allocator(node.target):
            raise _Unfollowable("an allocator assigned by += or with an annotation")
        if isinstance(node, ast.NamedExpr) and _is_allocator(node.target):
            raise _Unfollowable("an allocator assigned by :=")
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and _mentions_allocator(t):
                    raise _Unfollowable("an allocator unpacked")
                if _is_allocator(t) and not isinstance(node.value, ast.Call):
                    raise _Unfollowable("an allocator assigned from something other than a call")
                if isinstance(t, ast.Attribute) and t.attr == PAGE and _mentions_allocator(t.value):
                    raise _Unfollowable("an allocator's page_size changed after it was built")


def _touches_allocator(target: ast.expr) -> bool:
    """The allocator itself, or its ``page_size``."""
    return _is_allocator(target) or (
        isinstance(target, ast.Attribute) and target.attr == PAGE and _mentions_allocator(target.value)
    )


def _module_probes(tree: ast.Module, known: dict[str, Any]) -> dict[str, Any]:
    """Module-level ``_is_npu = is_npu()``-style constants: a name bound to a platform probe's answer.

    ``kv_cache_configurator.py``: ``_is_npu = is_npu()`` [cite: configurator-is-npu-probe]; the
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
    if method is None or sum(m.name == method.name for m in methods) > 1:  # two definitions: which one runs?
        return None
    try:
        _check_followable(method)
        kept = _slice_pages(method.body)
    except _Unfollowable:
        return None
    handed = _handed()
    params, required = _parameters(method.args)
    if not kept or any(p not in handed for p in required):
        return None
    try:
        if _allocator_builds(method.body) != _allocator_builds(kept, sliced=True):
            return None
    except _Unfollowable:
        return None
    body = [
        ast.Assign(targets=[ast.Name(SLICED_PAGE, ast.Store())], value=ast.Constant(None)),
        *kept,
        ast.Return(ast.Name(SLICED_PAGE, ast.Load())),
    ]
    # 0.5.15's ``is_dsv4_model`` is a local of _init_pools (from the model's hf_config) [cite: mixin-is-dsv4-model]:
    # no DeepSeek V4 here, as the configurator is handed (``_handed``).
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
    sizes = StandInBag(
        "sizes", max_total_num_tokens=tokens, full_max_total_num_tokens=tokens, swa_max_total_num_tokens=tokens
    )
    return {
        "sizes": sizes,
        "token_to_kv_pool": _KVPoolStandIn(),
        "is_dsv4_model": False,
        "req_to_token_pool": None,
        ALLOCATOR: None,
    }


# -- the unified pools: configurator -> init_unified_*_pools -> the allocator class -----


def _page_call(fn: ast.FunctionDef, callee: Callable[[str], bool], reads: set[str]) -> tuple[str, ast.expr] | None:
    """(callee, its page_size= expression) of the one call in ``fn`` to a name ``callee`` accepts.

    None (the page stays modeled) when there is no such call, more than one,
    one without ``page_size=`` (by ``**`` or not at all), or a page expression that reads
    a name other than ``reads`` or one ``fn`` assigns: only the expression is
    compiled, so it must mean the same at the call as at the top of ``fn``.
    """
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and callee(n.func.id)]
    if len(calls) != 1:
        return None
    call = calls[0]
    page = next((kw.value for kw in call.keywords if kw.arg == PAGE), None)  # ``**`` cannot pass it again
    if page is None:
        return None
    names = {n.id for n in ast.walk(page) if isinstance(n, ast.Name)}
    if not names <= reads or names & _assigned_names(fn):
        return None
    assert isinstance(call.func, ast.Name)
    return call.func.id, page


def _assigned_names(fn: ast.FunctionDef) -> set[str]:
    """Every name ``fn`` binds in its body (assignments of any form, loop and ``with`` targets, ``:=``)."""
    return {
        n.id for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


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
    if sum(isinstance(n, ast.FunctionDef) and n.name == method_name for n in ast.walk(configurator)) > 1:
        return None
    first = _page_call(method, lambda n: n.startswith("init_unified"), {"self"})
    if first is None:
        return None
    pool_fn_name, page1 = first
    pool_fn = _top_level(trees, ast.FunctionDef, pool_fn_name)
    if pool_fn is None:
        return None
    second = _page_call(pool_fn[0], lambda n: n.endswith("TokenToKVPoolAllocator"), {PAGE})
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
    """The module-level function or class ``name`` of the files read, with its file; None unless exactly one.

    Two definitions (in one file, or a stale copy in another) leave the
    page modeled: which one the deployment imports is not read here.
    """
    found = [
        (node, where)
        for tree, where in trees
        for node in tree.body
        if isinstance(node, kind) and getattr(node, "name", None) == name
    ]
    return found[0] if len(found) == 1 else None


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
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _is_self_attr(stmt.targets[0]):
        return stmt.value
    return None


def _is_self_attr(t: ast.AST) -> bool:
    return isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and t.attr == PAGE


def _base_init(node: ast.AST, own_base: str | None) -> tuple[str | None, ast.Call] | None:
    """(the base class, the call) of ``super().__init__(...)`` or ``Base.__init__(self, ...)``; else None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"):
        return None
    owner = node.func.value
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
        return own_base, node
    if isinstance(owner, ast.Name) and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
        return owner.id, node
    return None


def _init_of(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


def _page_argument(call: ast.Call, base: ast.ClassDef, explicit: bool) -> ast.expr | None:
    """The page a base ``__init__`` call hands over: ``page_size=``, or by position (the base's signature)."""
    page = next((kw.value for kw in call.keywords if kw.arg == PAGE), None)
    if page is not None:
        return page
    init = _init_of(base)
    if init is None:
        return None
    params = [a.arg for a in init.args.posonlyargs + init.args.args][1:]
    args = call.args[1:] if explicit else call.args
    if PAGE in params and params.index(PAGE) < len(args) and not any(isinstance(a, ast.Starred) for a in args):
        return args[params.index(PAGE)]
    return None


def _class_page(
    name: str, trees: list[tuple[ast.Module, str]], stand_ins: StandIns, bases_left: int
) -> Callable[[Any], Any] | None:
    """``self.page_size`` after ``name.__init__(page_size=p)``, as a function of p; None if it cannot be read.

    The last top-level statement of ``__init__`` that sets it wins: an own
    ``self.page_size = ...`` (with the top-level assignments it reads), or a
    base class's ``__init__`` (``super()`` or named, the page by keyword or
    by position), read the same way.  A class without ``__init__`` is its
    first base's.  Anything else that could change the page leaves it
    modeled: a set under a condition or a loop, ``+=`` or an annotation on
    it, a base call with ``**``, a name it reads bound anywhere but a
    top-level assignment.
    """
    found = _top_level(trees, ast.ClassDef, name)
    if found is None or bases_left <= 0:
        return None
    cls, where = found
    first_base = cls.bases[0].id if cls.bases and isinstance(cls.bases[0], ast.Name) else None
    init = _init_of(cls)
    if init is None:
        return None if first_base is None else _class_page(first_base, trees, stand_ins, bases_left - 1)
    top = {id(stmt) for stmt in init.body}
    last: tuple[int, ast.expr, str | None] | None = None  # (statement, page expression, base class or None: own)
    unreadable = False  # the last setter so far is a base __init__ whose page this cannot read
    for node in ast.walk(init):
        own = isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
            _is_self_attr(t) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        into = _base_init(node, first_base)
        if into is not None and not any(kw.arg == PAGE for kw in into[1].keywords):
            if any(kw.arg is None for kw in into[1].keywords):  # the page may be in the ``**``
                return None
        if own and (id(node) not in top or not isinstance(node, ast.Assign)):
            return None
        if into is not None and not any(isinstance(s, ast.Expr) and s.value is node for s in init.body):
            return None
    for i, stmt in enumerate(init.body):
        own_page = _is_self_page(stmt)
        into = _base_init(stmt.value, first_base) if isinstance(stmt, ast.Expr) else None
        if own_page is not None:
            last, unreadable = (i, own_page, None), False
        elif into is not None:
            base_name, call = into
            base = None if base_name is None else _top_level(trees, ast.ClassDef, base_name)
            explicit = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            page = None if base is None else _page_argument(call, base[0], explicit)
            last = None if page is None else (i, page, base_name)  # unreadable: only a later own set can save it
            unreadable = page is None
    if last is None or unreadable:
        return None
    i, expr, base_name = last
    needed = _needed(init.body[:i], expr)
    reads = {
        n.id
        for e in [expr, *(s.value for s in needed if isinstance(s, ast.Assign))]
        for n in ast.walk(e)
        if isinstance(n, ast.Name)
    }
    bound_elsewhere = _assigned_names(init) - {
        t.id for s in needed if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)
    }
    if reads & bound_elsewhere or _rebinds(init, needed):
        return None
    body = [*needed, _returning(expr, init.body[i])]
    page_fn = _hop(init, PAGE, body, where, stand_ins, f"{name}__init__page")
    if base_name is None:
        return page_fn
    base_page = _class_page(base_name, trees, stand_ins, bases_left - 1)
    if base_page is None:
        return None
    return lambda p: base_page(page_fn(p))


def _rebinds(init: ast.FunctionDef, needed: list[ast.stmt]) -> bool:
    """Whether a name the slice assigns is also bound elsewhere in ``init`` (so its value there is not read)."""
    names = [t.id for s in needed if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)]
    kept = {id(s) for s in needed}
    for stmt in init.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in names:
                if not (id(stmt) in kept and isinstance(stmt, ast.Assign)):
                    return True
    return False
