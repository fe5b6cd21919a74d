"""The record's attention sections, read from a wheel: the modules each checked backend's builders run from
(``attention_modules``), and the backends whose draft-extend factory builds none (``no_draft_extend``)."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable

from .errors import RecordError, member_of

MAX_REEXPORTS = 8  # an import chain longer than this is an error, never a guess


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether the module defines ``name`` at its top level (a ``def``, a ``class`` or an assignment)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def _imported(tree: ast.Module, name: str) -> tuple[str, str] | None:
    """(module, its name there) of the module's first ``from sglang... import`` binding ``name``, anywhere in it
    (a function's own import too), or None."""
    return _imports(tree).get(name)


_INDEXED: weakref.WeakKeyDictionary[ast.Module, dict[str, tuple[str, str]]] = weakref.WeakKeyDictionary()


def _imports(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Each name the module's ``from sglang... import``s bind, with (module, its name there) of the first binding
    in ``ast.walk``'s order: one walk of the module for every name asked of it."""
    out = _INDEXED.get(tree)
    if out is None:  # kept as long as the tree lives (a record's generation holds its wheel's trees)
        out = _INDEXED[tree] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("sglang"):
                for alias in node.names:
                    out.setdefault(alias.asname or alias.name, (str(node.module), alias.name))
    return out


def import_chain(parse: Callable[[str], ast.Module | None], start: str, name: str) -> list[str]:
    """The modules ``start`` reaches ``name`` through: the one it imports it from, then each one that re-exports it,
    to the one that defines it; [] where ``start`` does not import it.  RecordError: a module the chain names that
    the wheel lacks, or a chain that never reaches a definition."""
    tree, out, module, wanted = parse(start), [], start, name
    if tree is None:
        return []
    for _ in range(MAX_REEXPORTS):
        found = _imported(tree, wanted)
        if found is None:
            if module == start:
                return []
            raise RecordError(f"{module} neither defines nor imports {wanted} (imported by {start} as {name})")
        module, wanted = found
        out.append(module)
        tree = parse(module)
        if tree is None:
            raise RecordError(f"{out[-2] if len(out) > 1 else start} imports {wanted} from {module}: not in the wheel")
        if _defines(tree, wanted):
            return out
    raise RecordError(f"{start}'s import of {name} passes {MAX_REEXPORTS} modules without a definition: {out}")


def attention_modules_section(parse: Callable[[str], ast.Module | None]) -> dict[str, list[str]]:
    """The modules each checked backend's builders run from (``backends.CheckedBackend.imports``): the backend's own,
    then, for each name in order, the modules along its import chain from the first module listed that imports it;
    then along the model runner's imports of what its stand-in builds (``RUNNER_IMPORTS``, from the runner or a
    module listed)."""
    from fuzz.engines.sglang.backends.catalog import CHECKED  # the engine's names (a heavy package)
    from fuzz.engines.sglang.backends.checked import RUNNER, RUNNER_IMPORTS

    def extend(out: list[str], starts: list[str], name: str) -> None:
        for start in starts:
            chain = import_chain(parse, start, name)
            if chain:
                out.extend(m for m in chain if m not in out)
                return

    section: dict[str, list[str]] = {}
    for backend in CHECKED.values():
        own = backend.builders.module
        if parse(own) is None:
            raise RecordError(f"no {member_of(own)} (the {backend.backend.label} backend) in the wheel")
        out = [own]
        for name in backend.imports:
            extend(out, list(out), name)
        for name in RUNNER_IMPORTS:
            extend(out, [RUNNER, *out[1:]], name)
        section[backend.backend.value] = out
    return section


DRAFT_FACTORIES = "sglang.srt.speculative.draft_utils"


def no_draft_extend_section(parse: Callable[[str], ast.Module | None]) -> list[str]:
    """The checked backends whose draft-extend factory returns no backend (a draft extend on them runs on another's
    builders): the method the factory's table maps the backend's name to (``"fa3": self._create_..._prefill_backend``)
    returns nothing but ``None``."""
    from fuzz.engines.sglang.backends.catalog import CHECKED  # the engine's names (a heavy package)

    tree = parse(DRAFT_FACTORIES)
    if tree is None:
        raise RecordError(f"no {member_of(DRAFT_FACTORIES)} in the wheel")
    methods = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    out = []
    for backend in CHECKED.values():
        names = {
            v.attr
            for d in ast.walk(tree)
            if isinstance(d, ast.Dict)
            for k, v in zip(d.keys, d.values, strict=True)
            if isinstance(k, ast.Constant) and k.value == backend.backend.flag
            and isinstance(v, ast.Attribute) and v.attr.endswith("_prefill_backend")
        }  # fmt: skip
        if len(names) != 1 or next(iter(names)) not in methods:
            raise RecordError(f"{member_of(DRAFT_FACTORIES)}: no one draft-extend factory of {backend.backend.flag}")
        returns = [n for n in ast.walk(methods[next(iter(names))]) if isinstance(n, ast.Return)]
        if returns and all(isinstance(r.value, ast.Constant) and r.value.value is None for r in returns):
            out.append(backend.backend.value)
    return out
