"""Every site of the executed write path that writes ``req_to_token`` or hands out slots, found by an AST scan.

``scan(tree, release)`` parses each module the release's write path executes
(``releases.Release.modules``, less the invariant checker, which only reads)
from the tree's own text (a wheel read at run time, a checkout) and lists its
sites as ``Site(member, function, kind, anchor)``:

=================== ===============================================================================
``row-store``       ``X[...] = ...`` or an in-place tensor method (``copy_``, ``index_put_``...) on
                    ``req_to_token`` or a local alias of a slice of it
``row-pool-write``  ``<...>req_to_token_pool.write(...)`` (``ReqToTokenPool.write``: plain indexing)
``row-kernel-store`` ``tl.store`` in a ``@triton.jit`` kernel through a pointer computed from a
                    ``req_to_token`` parameter (a value *loaded* from it does not count)
``row-kernel-launch`` ``kernel[grid](...)`` of a kernel of these modules with a row-kernel-store
``row-writer-call`` a call of a function of these modules with a row site, handed ``req_to_token``
                    or its pool (``assign_req_to_token_pool_func(...)``, ``alloc_for_spec_decode(...)``)
``slot-hand-out``   ``<allocator>.alloc / alloc_extend / alloc_decode / alloc_logical_only(...)``
                    (``req_to_token_pool.alloc`` hands out rows, not slots: not one)
``slot-source``     the allocator classes' own ``alloc*`` / ``free`` methods (``def``)
``slot-kernel-store`` ``tl.store`` in a kernel of an allocator module (it writes the slots handed out)
``slot-free``       ``<allocator>.free*(...)`` (or ``self.free*`` inside an allocator class), and the
                    tree cache's ``free_kv_row`` / ``free_kv_row_segments`` of a request's row slices
=================== ===============================================================================

A site is named by its file, its qualified function (``Class.method``,
``outer.inner``) and an anchor: the unparsed target, callee or stored pointer
(with ``#2``, ``#3`` where one function has the same anchor twice), never a
line number: the list stays the same across a reformat and names what a
reviewer greps for.  ``write_sites.json`` beside this package holds the list
per pinned release (``expected``); a site the scan finds that the list lacks
is a write this tool has not been told about (tests/test_write_sites.py).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fuzz.common.compat import StrEnum
from fuzz.common.pysource import parsed
from fuzz.engines.sglang.names import REQ_TO_TOKEN as ROW

from ...records.errors import member_of
from .releases import CHECKER_MODULE, Release
from .tree import SourceTree

SITES_FILE = Path(__file__).resolve().parent.parent / "write_sites.json"
ROW_POOL = "req_to_token_pool"
HAND_OUTS = frozenset({"alloc", "alloc_extend", "alloc_decode", "alloc_logical_only"})
SOURCES = HAND_OUTS | {"free"}
ROW_FREES = frozenset({"free_kv_row", "free_kv_row_segments"})  # a request's row slices handed back
IN_PLACE = frozenset(
    {"copy_", "index_put_", "index_copy_", "scatter_", "fill_", "masked_fill_", "masked_scatter_", "zero_"}
)


class SiteKind(StrEnum):
    ROW_STORE = "row-store"
    ROW_POOL_WRITE = "row-pool-write"
    ROW_KERNEL_STORE = "row-kernel-store"
    ROW_KERNEL_LAUNCH = "row-kernel-launch"
    ROW_WRITER_CALL = "row-writer-call"
    SLOT_HAND_OUT = "slot-hand-out"
    SLOT_SOURCE = "slot-source"
    SLOT_KERNEL_STORE = "slot-kernel-store"
    SLOT_FREE = "slot-free"


ROW_KINDS = frozenset(
    {
        SiteKind.ROW_STORE,
        SiteKind.ROW_POOL_WRITE,
        SiteKind.ROW_KERNEL_STORE,
        SiteKind.ROW_KERNEL_LAUNCH,
        SiteKind.ROW_WRITER_CALL,
    }
)


@dataclass(frozen=True, order=True)
class Site:
    member: str  # "sglang/srt/mem_cache/allocation.py"
    function: str  # "alloc_for_spec_decode", "PagedTokenToKVPoolAllocator.alloc_extend"
    kind: SiteKind
    anchor: str  # "assign_req_to_token_pool_func", "token_pool + save_offset", "def"

    def __str__(self) -> str:
        return f"{self.member} {self.function} [{self.kind.value}] {self.anchor}"

    def to_dict(self) -> dict[str, str]:
        return {"member": self.member, "function": self.function, "kind": self.kind.value, "anchor": self.anchor}

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> Site:
        return cls(d["member"], d["function"], SiteKind(d["kind"]), d["anchor"])


# -- what an expression names ---------------------------------------------------------------------------


def _leaf(node: ast.AST) -> str | None:
    """The last name of a name/attribute chain (``batch.req_to_token_pool.req_to_token`` -> ``req_to_token``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _base(node: ast.AST) -> ast.AST:
    """The tensor a subscript chain indexes (``x[a][b:c]`` -> ``x``)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node


def _names(node: ast.AST, skip_loads: bool = False) -> set[str]:
    """Every name and attribute leaf in ``node`` (``skip_loads``: not inside a ``tl.load(...)``)."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if skip_loads and isinstance(n, ast.Call) and _leaf(n.func) == "load":
            continue
        leaf = _leaf(n)
        if leaf is not None:
            out.add(leaf)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _is_row(node: ast.AST, aliases: set[str]) -> bool:
    leaf = _leaf(_base(node))
    return leaf == ROW or (isinstance(_base(node), ast.Name) and leaf in aliases)


def _is_jit(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("jit" in _names(d) for d in fn.decorator_list)


def _hands_to_row(call: ast.Call) -> bool:
    return any({ROW, ROW_POOL} & _names(a) for a in [*call.args, *(k.value for k in call.keywords)])


# -- the scan -------------------------------------------------------------------------------------------


@dataclass
class _Function:
    qualname: str
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: str | None


def _functions(tree: ast.Module) -> Iterator[_Function]:
    def walk(body: list[ast.stmt], prefix: str, cls: str | None) -> Iterator[_Function]:
        for node in body:
            if isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}{node.name}.", node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield _Function(f"{prefix}{node.name}", node, cls)
                yield from walk(node.body, f"{prefix}{node.name}.", None)

    yield from walk(tree.body, "", None)


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not of the functions and classes nested in it."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        n = stack.pop(0)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield n
        stack.extend(ast.iter_child_nodes(n))


def _tainted(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """A kernel's names that hold a pointer into ``req_to_token``: its parameters so named, and every local
    computed from one by pointer arithmetic (a value loaded through it is data, not a pointer into the row)."""
    tainted = {a.arg for a in fn.args.args if ROW in a.arg}
    changed = True
    while changed:
        changed = False
        for n in _own_nodes(fn):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if _names(n.value, skip_loads=True) & tainted:
                    for t in targets:
                        for name in _names(t) - tainted:
                            tainted.add(name)
                            changed = True
    return tainted


def _aliases(fn: ast.AST) -> set[str]:
    """Locals bound to ``req_to_token`` or a slice of it (``row = pool.req_to_token[idx]``)."""
    out: set[str] = set()
    for n in _own_nodes(fn):
        if isinstance(n, ast.Assign) and _leaf(_base(n.value)) == ROW and not isinstance(n.value, ast.Call):
            out |= {t.id for t in n.targets if isinstance(t, ast.Name)}
    return out


def _is_allocator_module(member: str) -> bool:
    return "/allocator/" in member or member.endswith("/allocator.py")


def _direct_sites(member: str, fn: _Function, row_kernels: set[str]) -> Iterator[tuple[SiteKind, str]]:
    allocator_module = _is_allocator_module(member)
    if allocator_module and fn.cls is not None and fn.node.name in SOURCES:
        yield SiteKind.SLOT_SOURCE, "def"
    if _is_jit(fn.node):
        tainted = _tainted(fn.node)
        for n in _own_nodes(fn.node):
            if isinstance(n, ast.Call) and _leaf(n.func) == "store" and n.args:
                pointer = n.args[0]
                if _names(pointer, skip_loads=True) & tainted:
                    yield SiteKind.ROW_KERNEL_STORE, ast.unparse(pointer)
                elif allocator_module:
                    yield SiteKind.SLOT_KERNEL_STORE, ast.unparse(pointer)
        return
    aliases = _aliases(fn.node)
    for n in _own_nodes(fn.node):
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
                if isinstance(t, ast.Subscript) and _is_row(t, aliases):
                    yield SiteKind.ROW_STORE, ast.unparse(t)
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        if isinstance(func, ast.Attribute):
            receiver = ast.unparse(func.value)
            if func.attr in IN_PLACE and _is_row(func.value, aliases):
                yield SiteKind.ROW_STORE, ast.unparse(func)
            elif func.attr == "write" and _leaf(func.value) == ROW_POOL:
                yield SiteKind.ROW_POOL_WRITE, ast.unparse(func)
            elif func.attr in HAND_OUTS and ROW_POOL not in receiver:
                yield SiteKind.SLOT_HAND_OUT, ast.unparse(func)
            elif func.attr in ROW_FREES or (
                func.attr.startswith("free") and ("allocator" in receiver or (allocator_module and receiver == "self"))
            ):
                yield SiteKind.SLOT_FREE, ast.unparse(func)
        elif isinstance(func, ast.Name) and func.id in ROW_FREES:
            yield SiteKind.SLOT_FREE, func.id
        elif isinstance(func, ast.Subscript) and _leaf(func.value) in row_kernels:
            yield SiteKind.ROW_KERNEL_LAUNCH, ast.unparse(func.value)


def _parsed(tree: SourceTree, release: Release) -> dict[str, ast.Module]:
    out: dict[str, ast.Module] = {}
    for dotted in release.modules:
        if dotted == CHECKER_MODULE:  # it reads the rows and the free list, and writes neither
            continue
        for member in (member_of(dotted), member_of(dotted, True)):
            text = tree.read(member)
            if text is not None:
                out[member] = parsed(text, member)
                break
    return out


def scan(tree: SourceTree, release: Release) -> list[Site]:
    """Every site of the release's executed modules in ``tree`` (see the module docstring), sorted."""
    modules = _parsed(tree, release)
    functions = {member: list(_functions(module)) for member, module in modules.items()}
    row_kernels = {
        f.node.name
        for member, fns in functions.items()
        for f in fns
        if _is_jit(f.node) and any(k is SiteKind.ROW_KERNEL_STORE for k, _ in _direct_sites(member, f, set()))
    }
    found: dict[tuple[str, str], list[tuple[SiteKind, str]]] = {}
    for member, fns in functions.items():
        for f in fns:
            found[member, f.qualname] = list(_direct_sites(member, f, row_kernels))
    # A call handing req_to_token (or its pool) to a function that writes rows is a site too, transitively.
    writers = {q.rpartition(".")[2] for (_, q), sites in found.items() if any(k in ROW_KINDS for k, _ in sites)}
    while True:
        added = False
        for member, fns in functions.items():
            for f in fns:
                for n in _own_nodes(f.node):
                    if isinstance(n, ast.Call) and _leaf(n.func) in writers and _hands_to_row(n):
                        site = (SiteKind.ROW_WRITER_CALL, ast.unparse(n.func))
                        if site not in found[member, f.qualname]:
                            found[member, f.qualname].append(site)
                            added = added or f.node.name not in writers
                            writers.add(f.node.name)
        if not added:
            break
    out: list[Site] = []
    for (member, qualname), sites in found.items():
        seen: dict[tuple[SiteKind, str], int] = {}
        for kind, anchor in sites:
            seen[kind, anchor] = seen.get((kind, anchor), 0) + 1
            count = seen[kind, anchor]
            out.append(Site(member, qualname, kind, anchor if count == 1 else f"{anchor} #{count}"))
    return sorted(set(out))


# -- the committed list -----------------------------------------------------------------------------------


def listed_releases(path: Path = SITES_FILE) -> list[str]:
    """The releases the committed list has sites for."""
    return list(json.loads(path.read_text())["releases"])


def expected(release: str, path: Path = SITES_FILE) -> list[Site] | None:
    """The committed sites of ``release`` (None: the list has no entry for it)."""
    doc = json.loads(path.read_text())
    entries = doc["releases"].get(release)
    return None if entries is None else sorted(Site.from_dict(e) for e in entries)


def unlisted(found: list[Site], listed: list[Site]) -> tuple[list[Site], list[Site]]:
    """(sites the scan found that the list lacks, listed sites the scan no longer finds)."""
    have, want = set(found), set(listed)
    return sorted(have - want), sorted(want - have)


def listing(found: dict[str, list[Site]]) -> str:
    """The committed file's text for ``found`` (release -> its sites), stable (sorted, one site a line)."""
    lines = ['{"releases": {']
    for i, (release, sites) in enumerate(sorted(found.items())):
        lines.append(f'  "{release}": [')
        lines += [f"    {json.dumps(s.to_dict())}" + ("," if j < len(sites) - 1 else "") for j, s in enumerate(sites)]
        lines.append("  ]" + ("," if i < len(found) - 1 else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m fuzz.engines.sglang.real.runtime.sites WHEEL...``: print the list of the wheels' releases."""
    import sys

    from fuzz.targets.base import TargetError

    from .releases import release_for
    from .tree import open_tree

    found: dict[str, list[Site]] = {}
    for spec in argv if argv is not None else sys.argv[1:]:
        try:
            tree = open_tree(spec)
        except TargetError as e:
            print(f"sites: {e}", file=sys.stderr)
            return 2
        found[tree.version or spec] = scan(tree, release_for(tree.version))
    sys.stdout.write(listing(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
