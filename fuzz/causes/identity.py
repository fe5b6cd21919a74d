"""A root cause's code identity: a digest of the function it lives in that only behaviour changes change.

A baseline entry for a cause the tool calls new (``fuzz.findings.baseline``)
names the function, the term that differs from the reference and this
digest.  Its invariant: a comment, a docstring, a reformat or a renamed
local (or argument) leaves it as it was; a changed constant, operator,
called name, attribute or control flow changes it, in the function or in
any function, class method or module-level assignment of its file that it
reaches (a plant in a helper the function calls is a change of the
function).  So a new bug in a function that already has a known one is a
new cause, and a harmless edit keeps a known one known.

How: ``ast.parse``; the function (``name`` or ``Class.method``) and what it
reaches in its module, each with its docstring dropped and its arguments and
locals renamed by position of first appearance; a canonical dump of the
trees that omits empty and None fields (``ast.dump``'s own output changes
between Python versions), sha256, 16 hex digits.  What tells two versions
of one source apart besides its text is the caller's to fold in (``extra``:
SGLang's model revisions share one file, so a model target's digest takes
its revision's fields too).
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from fuzz.common.pysource import parsed

DIGEST_CHARS = 16
_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "kind"})  # how a name is used is in its node; kind: u"" prefix
_Def = ast.FunctionDef | ast.AsyncFunctionDef


def digest(source: str, qualname: str, extra: Any = None) -> str | None:
    """The code digest of ``qualname`` in ``source`` (see the module docstring), ``extra`` (JSON data, e.g. a model
    revision's fields) folded in; None when the source does not parse or has no such function (no identity: a
    cause located there is never known)."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    found = _find(tree, qualname)
    if found is None:
        return None
    parts = [canonical(normalized(node)) for node in reached(tree, *found)]
    if extra is not None:
        parts.append(json.dumps(extra, sort_keys=True, default=str))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:DIGEST_CHARS]


def _find(tree: ast.Module, qualname: str) -> tuple[_Def, ast.ClassDef | None] | None:
    """The function ``name`` or method ``Class.method`` at the top of ``tree``, with its class."""
    cls_name, _, name = qualname.rpartition(".")
    scope: list[ast.stmt] = tree.body
    cls = None
    if cls_name:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name), None)
        if cls is None:
            return None
        scope = cls.body
    fn = next((n for n in scope if isinstance(n, _Def) and n.name == name), None)
    return None if fn is None else (fn, cls)


def _top_level(tree: ast.Module) -> dict[str, ast.stmt]:
    """Module-level functions, classes and simple assignments, by the name they bind."""
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, _Def | ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out[n.id] = node
    return out


def _references(node: ast.AST) -> set[str]:
    """The names ``node`` reads, and the attributes it reads off ``self`` or ``cls`` (its class's methods)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
            out.add("." + n.attr)
    return out


def reached(tree: ast.Module, fn: _Def, cls: ast.ClassDef | None) -> list[ast.AST]:
    """``fn`` first, then every module-level definition and class method it reaches (transitively), by name."""
    top = _top_level(tree)
    methods = {n.name: n for n in (cls.body if cls else []) if isinstance(n, _Def)}
    seen: dict[str, ast.AST] = {}
    todo = [fn]
    while todo:
        for ref in sorted(_references(todo.pop())):
            node = methods.get(ref[1:]) if ref.startswith(".") else top.get(ref)
            if node is not None and node is not fn and ref not in seen and node not in seen.values():
                seen[ref] = node
                todo.append(node)  # type: ignore[arg-type]
    return [fn, *(seen[k] for k in sorted(seen))]


def normalized(node: ast.AST) -> ast.AST:
    """A copy of ``node`` without docstrings, a function's (each method's) arguments and locals renamed by
    position: every name bound anywhere inside it, nested functions and lambdas included, is the function's."""
    node = copy.deepcopy(node)
    for n in ast.walk(node):
        if isinstance(n, _Def | ast.ClassDef):
            body = n.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    n.body = body[1:] or [ast.Pass()]
    outermost = [node] if isinstance(node, _Def) else []
    if isinstance(node, ast.ClassDef):
        outermost = [n for n in node.body if isinstance(n, _Def)]
    for fn in outermost:
        _rename_locals(fn)
    return node


def _bound_names(fn: _Def) -> Iterator[str]:
    """The arguments, then the names the body stores, in order of first appearance (globals excepted)."""
    a = fn.args
    for arg in [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs]:
        yield arg.arg
    if a.kwarg:
        yield a.kwarg.arg
    body = fn.body
    declared = {name for n in body for s in ast.walk(n) if isinstance(s, ast.Global | ast.Nonlocal) for name in s.names}
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store | ast.Del) and n.id not in declared:
                yield n.id
            elif isinstance(n, ast.arg):
                yield n.arg
            elif isinstance(n, ast.ExceptHandler) and n.name:
                yield n.name


def _rename_locals(fn: _Def) -> None:
    names: dict[str, str] = {}
    for name in _bound_names(fn):
        names.setdefault(name, f"_{len(names)}")
    for n in [fn.args, *fn.body]:
        for m in ast.walk(n):
            if isinstance(m, ast.Name) and m.id in names:
                m.id = names[m.id]
            elif isinstance(m, ast.arg) and m.arg in names:
                m.arg = names[m.arg]
            elif isinstance(m, ast.ExceptHandler) and m.name in names:
                m.name = names[m.name]


def canonical(node: Any) -> str:
    """A dump of an AST that is the same on every Python version: node types and their non-empty fields."""
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if name in _SKIPPED_FIELDS or value is None or value == []:
                continue
            fields.append(f"{name}={canonical(value)}")
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(canonical(v) for v in node) + "]"
    return repr(node)
