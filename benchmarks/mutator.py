"""A small AST mutator for sizing files: every single-point mutant of a module's top-level functions.

One point of one function changes at a time: an operator (``+``/``-``,
``*`` to ``//`` or ``+``, ``//`` to ``*``), an integer constant +-1, a
comparison (``<`` to ``<=``, ``==`` to ``!=`` and back), a dropped term or
factor of ``+``/``-``/``*``, a ceiling division ``(x + p - 1) // p`` turned
floor, a dropped ``max``/``min`` (either argument kept). The imports and
module-level statements are left alone. The order is the walk order of
``ast.walk`` on each function, the same on every parse, so a mutant's
place is stable and ``--seed`` samples the same ones.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

SWAP_OPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.FloorDiv, ast.Add),
    ast.FloorDiv: (ast.Mult,),
}
SWAP_CMP: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE,),
    ast.LtE: (ast.Lt,),
    ast.Gt: (ast.GtE,),
    ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
}


@dataclass(frozen=True)
class Mutant:
    """One point of one function changed: ``name`` says where and how (``function:line what``); ``function``
    is the top-level function changed."""

    name: str
    function: str
    source: str


def _is_ceiling(node: ast.AST) -> bool:
    """``(x + p - 1) // p``: a ceiling division written as SGLang writes it."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.FloorDiv)
        and isinstance(node.left, ast.BinOp)
        and isinstance(node.left.op, ast.Sub)
    )


def _edits(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Every single-point replacement of ``node`` (what, the new node)."""
    if isinstance(node, ast.BinOp):
        for op in SWAP_OPS.get(type(node.op), ()):
            yield f"{type(node.op).__name__} -> {op.__name__}", ast.BinOp(node.left, op(), node.right)
        if isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
            yield "drop the right term", node.left
            yield "drop the left term", node.right
        if _is_ceiling(node):
            inner = node.left
            assert isinstance(inner, ast.BinOp)
            yield "ceiling -> floor", ast.BinOp(inner.left, ast.FloorDiv(), node.right)
    elif isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool):
        for delta in (-1, 1):
            yield f"{node.value} -> {node.value + delta}", ast.Constant(node.value + delta)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        for op in SWAP_CMP.get(type(node.ops[0]), ()):
            yield f"{type(node.ops[0]).__name__} -> {op.__name__}", ast.Compare(node.left, [op()], node.comparators)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("max", "min")
        and len(node.args) == 2
        and not node.keywords
    ):
        yield f"drop {node.func.id}, keep the first", node.args[0]
        yield f"drop {node.func.id}, keep the second", node.args[1]


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, new: ast.AST):
        self.target, self.new = target, new

    def visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.new
        return super().visit(node)


def _points(tree: ast.Module) -> list[tuple[ast.FunctionDef, ast.AST]]:
    """The nodes of the module's top-level functions, in walk order (the same order on every parse)."""
    return [(fn, node) for fn in tree.body if isinstance(fn, ast.FunctionDef) for node in ast.walk(fn)]


def mutants(source: str) -> list[Mutant]:
    """Every single-point mutant of the module's top-level functions (not its imports), each built on a fresh
    parse of ``source`` (a node is found again there by its place in the walk); each program once, none the
    base itself."""
    seen = {ast.unparse(ast.parse(source))}
    out: list[Mutant] = []
    for k, (fn, node) in enumerate(_points(ast.parse(source))):
        for j, (what, _) in enumerate(list(_edits(node))):
            fresh = ast.parse(source)
            twin = _points(fresh)[k][1]
            new = list(_edits(twin))[j][1]
            tree = ast.fix_missing_locations(_Replace(twin, ast.copy_location(new, twin)).visit(fresh))
            text = ast.unparse(tree)
            if text not in seen:  # two edits that write the same program are one mutant (the first named)
                seen.add(text)
                out.append(Mutant(f"{fn.name}:{getattr(node, 'lineno', fn.lineno)} {what}", fn.name, text))
    return out
