"""Nothing imports in a circle: no cycle among the project's modules, at module level or through a function.

The graph is read from the source (``ast``), never by importing: an edge is
an ``import`` of one project module by another, at module level (a
``TYPE_CHECKING`` block included: the type checker follows it) or inside a
function (what keeps the command line light, and what hides a circle from a
plain import). A cycle through a function-level import is allowed only where
``ALLOWED`` names it with its reason, at most two, each to keep the command
line from importing torch.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fuzz", "strategies", "allocator_model")
MODULE, FUNCTION = "module", "function"

# (importer, imported) of a function-level import that closes a cycle -> why it is kept.  At most two.
ALLOWED: dict[tuple[str, str], str] = {}


def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted name -> file of every module of ``packages`` under ``root`` (a package is its ``__init__``)."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imported(name: str, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The project modules ``node`` (in module ``name``) imports: ``from p import m`` is ``p.m`` when that is a
    module, else ``p``; a name outside the project is no edge."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name.split(".") if known[name].name == "__init__.py" else name.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = []
    for dotted in wanted:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        if dotted and dotted != name:
            out.append(dotted)
        # Importing ``p.m`` first runs ``p``'s ``__init__``: an edge too, but for ``name``'s own packages (already
        # running, or run, when ``name`` is imported).
        parent = dotted.rpartition(".")[0]
        while parent:
            if parent in known and not (name == parent or name.startswith(parent + ".")):
                out.append(parent)
            parent = parent.rpartition(".")[0]
    return out


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, dict[str, str]]:
    """importer -> {imported: ``MODULE`` if any import of it runs at module level, else ``FUNCTION``}."""
    known = modules(root, packages)
    graph: dict[str, dict[str, str]] = {name: {} for name in known}

    def walk(name: str, node: ast.AST, level: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = FUNCTION if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else level
            if isinstance(child, ast.Import | ast.ImportFrom):
                for imported in _imported(name, child, known):
                    if graph[name].get(imported) != MODULE:
                        graph[name][imported] = inner
            walk(name, child, inner)

    for name, path in known.items():
        walk(name, ast.parse(path.read_text(), str(path)), MODULE)
    return graph


def cycles(graph: dict[str, dict[str, str]], module_level_only: bool = False) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, level in graph[v].items():
            if module_level_only and level != MODULE:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return sorted(found)


def function_edges_in(graph: dict[str, dict[str, str]], component: list[str]) -> set[tuple[str, str]]:
    return {(a, b) for a in component for b, level in graph[a].items() if b in component and level == FUNCTION}


def test_no_module_imports_another_in_a_circle_at_module_level() -> None:
    assert cycles(import_graph(), module_level_only=True) == []


def test_a_circle_through_a_function_level_import_is_allowed_only_by_name() -> None:
    graph = import_graph()
    unexplained = [
        (component, sorted(function_edges_in(graph, component) - set(ALLOWED))) for component in cycles(graph)
    ]
    assert [u for u in unexplained if u[1] or not function_edges_in(graph, u[0])] == []
    assert len(ALLOWED) <= 2 and all(why.strip() for why in ALLOWED.values())
    for importer, imported in ALLOWED:  # an entry that closes no cycle any more is stale
        assert any((importer, imported) in function_edges_in(graph, c) for c in cycles(graph)), (importer, imported)


@pytest.mark.parametrize(
    "files, module_level, through_a_function",
    [
        ({"a.py": "from p import b\n", "b.py": "from p import a\n"}, [["p.a", "p.b"]], [["p.a", "p.b"]]),
        ({"a.py": "from . import b\n", "b.py": "def f():\n    from .a import x\n"}, [], [["p.a", "p.b"]]),
        (
            {"a.py": "import typing\nif typing.TYPE_CHECKING:\n    from .b import B\n", "b.py": "import p.a\n"},
            [["p.a", "p.b"]],
            [["p.a", "p.b"]],
        ),
        ({"a.py": "from . import b\n", "b.py": "import os\n"}, [], []),
    ],
    ids=["module-level", "through-a-function", "type-checking", "no-cycle"],
)
def test_the_graph_sees_each_kind_of_circle(tmp_path, files, module_level, through_a_function) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / "p" / name).write_text(text)
    graph = import_graph(tmp_path, ("p",))
    assert cycles(graph, module_level_only=True) == module_level
    assert cycles(graph) == through_a_function


def test_importing_a_module_runs_its_packages_init_and_the_graph_says_so(tmp_path: Path) -> None:
    """A package's ``__init__`` that re-exports from a module importing back into the importer is a circle Python
    meets (a partially initialized module) though no ``import`` line names the package: the graph has the edge."""
    (tmp_path / "pkg" / "a").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a" / "__init__.py").write_text("from .back import x\n")
    (tmp_path / "pkg" / "a" / "leaf.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "a" / "back.py").write_text("from pkg.b import y\nx = y\n")
    (tmp_path / "pkg" / "b.py").write_text("from pkg.a.leaf import x as y\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.b"] == {"pkg.a.leaf": MODULE, "pkg.a": MODULE}
    assert cycles(graph, module_level_only=True) == [["pkg.a", "pkg.a.back", "pkg.b"]]
