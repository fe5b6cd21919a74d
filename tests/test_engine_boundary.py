"""The core imports no engine: a ratchet that only tightens.

The core is every ``fuzz`` module outside an engine's own package. It must not
import an engine's code (``fuzz.engines.<name>``, SGLang's own code runner
``fuzz/engines/sglang/real/`` among it) nor the SGLang engine's model and strategies
(``allocator_model``, ``strategies``), at module level or inside a function:
a second engine or a second table must land without touching it.

``PENDING`` (empty once the engine package was complete) names each core module that
still imports one, with the migration step that clears it. The list only
shrinks: a module that no longer needs its entry fails here too, so a cleared
entry is deleted in the same change.
"""

from __future__ import annotations

from test_import_cycles import import_graph

ENGINE_ROOTS = ("allocator_model", "strategies")  # the SGLang engine's model and strategies, at the top level
ENGINES = "fuzz.engines"  # its package and ``base`` (the registry and the interface) are core; its subpackages engines

# core module -> the step that clears it: empty since the engine package is complete (issue 34); a module that must
# cross for a while is named here with its step, never left unlisted.
PENDING: dict[str, str] = {}


def is_engine_module(name: str) -> bool:
    """An engine's own code, or the SGLang engine's model and strategies."""
    if any(name == root or name.startswith(root + ".") for root in ENGINE_ROOTS):
        return True
    return name.startswith(ENGINES + ".") and name != ENGINES + ".base"


def crossings() -> dict[str, list[str]]:
    """Core module -> the engine modules it imports (module level or in a function), for every core module that does."""
    out = {}
    for importer, imported in import_graph().items():
        if not importer.startswith("fuzz") or is_engine_module(importer):
            continue
        engine = sorted(name for name in imported if is_engine_module(name))
        if engine:
            out[importer] = engine
    return out


def test_no_core_module_imports_an_engine_beyond_the_pending_list() -> None:
    unlisted = {m: names for m, names in crossings().items() if m not in PENDING}
    assert not unlisted, f"core modules importing an engine (reach it through fuzz.engines instead): {unlisted}"


def test_the_pending_list_only_shrinks() -> None:
    cleared = sorted(set(PENDING) - set(crossings()))
    assert not cleared, f"no longer import an engine: delete their PENDING entries: {cleared}"


def test_the_boundary_check_sees_an_engine_import(tmp_path) -> None:
    """The ratchet reads the graph the cycle test reads: a planted import of the model in a core module shows."""
    import test_import_cycles as cycles

    core = tmp_path / "fuzz" / "common"
    core.mkdir(parents=True)
    (tmp_path / "fuzz" / "__init__.py").write_text("")
    (core / "__init__.py").write_text("")
    (core / "leaf.py").write_text("def f():\n    from allocator_model.config import ServingConfig\n")
    (tmp_path / "allocator_model").mkdir()
    (tmp_path / "allocator_model" / "__init__.py").write_text("")
    (tmp_path / "allocator_model" / "config.py").write_text("")
    graph = cycles.import_graph(tmp_path, ("fuzz", "allocator_model"))
    seen = sorted(n for n in graph["fuzz.common.leaf"] if is_engine_module(n))
    assert seen == ["allocator_model", "allocator_model.config"]


def test_the_command_line_names_an_engines_commands_only_through_the_registry() -> None:
    """``fuzz.cli`` imports its command modules by name (no import statement the graph sees): each is core, or
    an engine's own command module declared in ``fuzz.engines.BUILTIN_COMMANDS`` with its summaries."""
    from fuzz.cli import COMMAND_MODULES, COMMANDS
    from fuzz.engines import BUILTIN_COMMANDS

    declared = {module for module, _ in BUILTIN_COMMANDS.values()}
    assert [m for m in COMMAND_MODULES if is_engine_module(m) and m not in declared] == []
    assert declared <= set(COMMAND_MODULES)
    for module, summaries in BUILTIN_COMMANDS.values():
        assert is_engine_module(module) and summaries.items() <= COMMANDS.items(), module


def test_the_core_imports_with_the_sglang_engine_its_model_and_strategies_blocked() -> None:
    """At run time too: in a process where ``fuzz.engines.sglang``, ``allocator_model`` and ``strategies`` cannot be
    imported (``sys.modules[name] = None``), every core module imports, but the pending ones and those whose
    module-level imports reach one (the AST test above cannot see what a module imports through another), and a
    campaign's loading of every project module (``load_project_modules``) leaves out only what needs the engine."""
    import subprocess
    import sys
    from pathlib import Path

    from test_import_cycles import MODULE

    graph = import_graph()
    blocked = set(PENDING)
    while True:  # the core modules whose module-level imports reach a pending one
        more = {
            m
            for m, imported in graph.items()
            if m not in blocked and any(level == MODULE and i in blocked for i, level in imported.items())
        }
        if not more:
            break
        blocked |= more
    core = sorted(
        m
        for m in graph
        if m.startswith("fuzz") and not is_engine_module(m) and m not in blocked and m != "fuzz.__main__"
    )
    assert len(core) > 80  # the check reaches most of the core, not a handful
    program = (
        "import importlib, sys\n"
        "for name in ('fuzz.engines.sglang', *sys.argv[1].split(',')):\n"
        "    sys.modules[name] = None\n"
        "from fuzz.campaign.driver import load_project_modules\n"  # a campaign's first step: what can load, loads
        "load_project_modules()\n"
        "tests = [m for m in sys.argv[2:] if m.rpartition('.')[2].startswith('test_')]\n"
        "left = [m for m in sys.argv[2:] if m not in sys.modules and m not in tests]\n"
        "failed = [f'{m}: left out by load_project_modules' for m in left]\n"
        "for m in sys.argv[2:]:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except Exception as e:\n"
        "        failed.append(f'{m}: {type(e).__name__}: {e}')\n"
        "print('\\n'.join(failed))\n"
    )
    root = Path(__file__).resolve().parents[1]
    args = [sys.executable, "-c", program, ",".join(ENGINE_ROOTS), *core]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=root, timeout=120)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr[-2000:]
