"""The row widths of SGLang's pool builders, read out of its ``kv_cache_configurator.py`` without importing it.

Each kind of KV pool gets its ``req_to_token`` row width in a builder
method of ``KVCacheConfigurator`` (``allocator_model.pools``): the standard
pool in ``_build_req_to_token_pool`` (``extra_max_context_len =
get_req_to_token_extra_context_len()`` [cite: standard-row-extra]), the
unified pools in ``_init_unified_mamba_pools`` [cite: unified-mamba-row-extra],
``_init_unified_mamba_swa_pools`` [cite: unified-mamba-swa-row-extra] and, up to 0.5.20,
``_init_unified_swa_pools`` [cite: unified-swa-row-extra]: ``extra_max_context_len = 4``
then ``+= D``.  The row is ``model_context_len + extra_max_context_len``
wide (``unified_memory_pool.py`` [cite: unified-row-width]; ``memory_pool.py``
[cite: req-to-token-row-width]).

The module itself imports half of SGLang, so it is never run.  Its syntax
tree is sliced instead: of each builder, only the statements that assign
``extra_max_context_len`` (with the ``if`` statements around them) are
kept, compiled with the file's own line numbers, and run with the sizing
file's functions and the stand-ins of ``stubs`` (``self`` is a stand-in
whose ``server_args`` is the published bag).  A builder with no such
statement delegates to ``_build_req_to_token_pool`` (0.5.21+'s unified SWA).
The allocator page of each kind is read the same way (``allocators``).

What stays modeled: the ``C + extra_max_context_len`` step, and which
builder a deployment reaches (``KVPool``).

Why a slice, not an execution (the write path's loader, ``runtime``, runs
whole modules): a builder computes some thirty quantities of the model and
the memory budget before the call that receives ``extra_max_context_len``
(``_init_unified_mamba_pools`` [cite: unified-mamba-builder-inputs]: ``model_config.get_num_kv_heads``,
``mamba2_cache_params``, ``layer_info``, ``get_exec().features...``,
``get_schedule().max_mamba_cache_size``), none of which a deployment of this
tool has; executing it would need a stand-in for each, and a placeholder for
any would be a guess.  The slice runs exactly the statements that assign the
row's extra, with SGLang's own sizing functions, and refuses any other name.
"""

from __future__ import annotations

import ast
import os
import types
from collections.abc import Callable
from typing import Any

from allocator_model.pools import KVPool
from fuzz.targets.base import UNPARSABLE

from .private_imports import StandIns, private_builtins
from .stubs import Published, Unsupplied

EXTRA = "extra_max_context_len"
# The builder method of each kind that sizes its own rows; the others use the standard one.
BUILDERS: dict[str, KVPool] = {
    "_build_req_to_token_pool": KVPool.STANDARD,
    "_init_unified_mamba_pools": KVPool.UNIFIED_MAMBA,
    "_init_unified_mamba_swa_pools": KVPool.UNIFIED_MAMBA_SWA,
    "_init_unified_swa_pools": KVPool.UNIFIED_SWA,
}

RowExtra = Callable[[], int]  # a builder's extra_max_context_len, read inside ``Published.bound``


def _assigns_extra(node: ast.AST) -> bool:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    return any(isinstance(t, ast.Name) and t.id == EXTRA for t in targets)


def _slice(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``body`` that assign ``extra_max_context_len``, inside their ``if``s (else dropped)."""
    kept: list[ast.stmt] = []
    for stmt in body:
        if _assigns_extra(stmt):
            kept.append(stmt)
        elif isinstance(stmt, ast.If):
            inner, orelse = _slice(stmt.body), _slice(stmt.orelse)
            if inner or orelse:
                kept.append(ast.If(test=stmt.test, body=inner or [ast.Pass()], orelse=orelse))
    return kept


def _methods(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in BUILDERS and node.name not in found:
            found[node.name] = node
    return found


def builder_lines(source: str) -> dict[KVPool, tuple[str, int]]:
    """Per kind with a builder of its own in ``source``: (Class.method, its ``def`` line); SARIF points there."""
    try:
        tree = ast.parse(source)
    except UNPARSABLE:
        return {}
    owner = {id(m): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for m in c.body}
    return {
        BUILDERS[name]: (f"{owner[id(method)]}.{name}" if id(method) in owner else name, method.lineno)
        for name, method in _methods(tree).items()
        if BUILDERS[name] is not KVPool.STANDARD and _slice(method.body)
    }


def extract_row_extras(
    source: str, filename: str, functions: dict[str, Callable[..., Any]], published: Published, stand_ins: StandIns
) -> dict[KVPool, RowExtra]:
    """Per kind with a builder of its own in ``source``: a function computing its ``extra_max_context_len``.

    ``functions`` are the sizing file's (the standard builder calls
    ``get_req_to_token_extra_context_len``).  Kinds whose builder has no
    assignment are left out (they take the standard row).  A source that
    does not parse gives nothing (the kinds then stay modeled).
    """
    try:
        tree = ast.parse(source, filename)
    except UNPARSABLE:
        return {}
    out: dict[KVPool, RowExtra] = {}
    for name, method in _methods(tree).items():
        kept = _slice(method.body)
        if not kept:
            continue
        args = ast.arguments(posonlyargs=[], args=[ast.arg("self")], kwonlyargs=[], kw_defaults=[], defaults=[])
        body = [*kept, ast.Return(ast.Name(EXTRA, ast.Load()))]
        builder = compiled(method, f"{name}__{EXTRA}", args, body, filename, stand_ins, functions)
        out[BUILDERS[name]] = _bound(builder, published)
    return out


def compiled(
    method: ast.FunctionDef,
    name: str,
    args: ast.arguments,
    body: list[ast.stmt],
    filename: str,
    stand_ins: StandIns,
    names: dict[str, Any],
) -> Callable[..., Any]:
    """A slice of ``method`` compiled as function ``name``, with the file's line numbers and the stand-ins.

    Its globals: the private builtins (every ``sglang`` import a stand-in),
    the known stand-ins, then ``names``; nothing else of the file is run.
    """
    fn = ast.FunctionDef(  # type: ignore[call-arg]  # type_params: Python 3.12+'s field, [] is the default
        name=name, args=args, body=body, decorator_list=[], returns=None
    )
    ast.copy_location(fn, method)
    module = ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[]))
    namespace: dict[str, Any] = {"__builtins__": private_builtins(stand_ins)}
    namespace.update(stand_ins.known)
    namespace.update(names)
    builtin_names = set(namespace["__builtins__"])
    local = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    local |= {n.id for n in ast.walk(module) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(module):  # any other name the slice reads: an SGLang name with no stand-in
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local:
            if node.id not in namespace and node.id not in builtin_names:
                namespace[node.id] = Unsupplied(f"{os.path.basename(filename)}:{method.name}.{node.id}")
    exec(compile(module, filename, "exec", dont_inherit=True), namespace)  # noqa: S102 - a slice of the target
    return namespace[name]  # type: ignore[no-any-return]


def _bound(builder: Callable[[Any], int], published: Published) -> RowExtra:
    def row_extra() -> int:
        server_args = published.read("server_args")
        return builder(types.SimpleNamespace(server_args=server_args, page_size=server_args.page_size))

    return row_extra
