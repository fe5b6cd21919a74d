"""The engines a target can belong to, found by name and loaded on first use.

The core reaches an engine only through this registry and the interface of
``fuzz.engines.base``; it never imports an engine's package by name, so an
engine whose code cannot load (missing dependency, or blocked) costs the
core nothing until a target needs it, and then it is one line (exit 2).
First use: a spec routed to the engines (``engine_for``), or a declared name
(a property, a kind of case, a group) first looked up, which imports every
declared engine, since a case file or a signature may carry any engine's names.

Where an engine is declared, later overriding earlier:

* ``BUILTIN``: the engines this project ships (data: no reinstall needed);
* the entry-point group ``kvrow_fuzz.engines`` (an installed package's own engine; a builtin name is not taken over);
* ``$KVROW_FUZZ_ENGINES``: ``NAME=module:attr[,NAME=module:attr...]`` (a test's engine, in a child process).

A spec goes to the first loadable engine that claims it: the environment's,
then the installed packages', then the builtins (SGLang, last, claims any
path: it is the fallback that names the spec unknown).

Light: imports only the standard library and ``fuzz.common``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from collections.abc import Iterator
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from fuzz.common.errors import TargetError

if TYPE_CHECKING:
    from fuzz.targets.base import Target

    from .base import Engine

BUILTIN: dict[str, str] = {"sglang": "fuzz.engines.sglang.engine:ENGINE"}
# The commands a builtin engine adds beside the core's: the module whose ``register(subparsers)`` adds them
# (``fuzz.cli`` calls it as it calls the core's), and each command's one-line summary (data: the top-level
# help and a mistyped command are answered importing no engine; ``tests/test_cli.py`` holds the summaries to
# the parsers). An engine's commands are ones only it can answer (SGLang's: its model against its releases,
# an issue per root cause in SGLang's terms).
BUILTIN_COMMANDS: dict[str, tuple[str, dict[str, str]]] = {
    "sglang": (
        "fuzz.engines.sglang.cli",
        {
            "fidelity": "compare the model with real SGLang sizing code",
            "matrix": "fuzz every SGLang release's own sizing code, one table",
            "advisory": "write an upstream-ready issue (Markdown) per root cause of case files or reports",
            "judge-fix": "judge a proposed fix: replay every case of a root cause on the fixed code",
        },
    ),
}
# What a builtin engine's prover (``Engine.prover``) takes, as data for ``prove``'s parser (its help and a mistyped
# value import no engine; ``tests/test_cli.py`` holds them to the engine's code): the names of its bounded spaces,
# of its heatmap's panels, and what a panel is called.
BUILTIN_PROVE: dict[str, dict[str, tuple[str, ...]]] = {
    "sglang": {
        "spaces": ("full", "small", "tiny"),
        "panels": ("standard", "swa", "hisparse", "unified-mamba", "unified-mamba-swa", "unified-swa"),
        "panel": ("kind of KV pool",),
    },
}
# How a builtin engine's ``run`` searches for each bug group's representative case beside its minimal one, as
# data for ``run --help`` (``tests/test_representative.py`` holds it to the engine's ``search_budget``).
BUILTIN_RUN: dict[str, str] = {
    "sglang": (
        "a walk of at most 40 replays per bug group toward the deployments SGLang runs by default (context 4096 to "
        "262144, its speculative defaults, a backend's page, DCP only where the group needs it), the case found "
        "confirmed like the minimal one"
    ),
}
GROUP = "kvrow_fuzz.engines"
ENV = "KVROW_FUZZ_ENGINES"
# An engine's name: a key in reports and case files (its confirmation), so a plain identifier.
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")

_loaded: dict[tuple[str, str], Engine] = {}  # (name, module:attr) -> the engine imported
_registered: dict[str, Engine] = {}  # engines a test registered in-process (``registered``), asked first
_refs: dict[str, dict[str, str]] = {}  # $KVROW_FUZZ_ENGINES -> ``refs()``


class EngineUnavailable(TargetError):
    """An engine that is declared but whose code cannot be imported: named, with why, never silently skipped."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"engine {name} unavailable: {why}")
        self.name, self.why = name, why


def _env_refs() -> dict[str, str]:
    """``$KVROW_FUZZ_ENGINES`` as name -> ``module:attr``; a malformed item is bad input, said in one line."""
    refs = {}
    for item in filter(None, (part.strip() for part in os.environ.get(ENV, "").split(","))):
        name, sep, ref = item.partition("=")
        if not sep or not NAME.fullmatch(name.strip()) or ":" not in ref:
            raise TargetError(f"${ENV}: {item[:200]!r} is not NAME=module:attr (NAME: {NAME.pattern})")
        refs[name.strip()] = ref.strip()
    return refs


def refs() -> dict[str, str]:
    """Every declared engine, name -> ``module:attr``, in the order specs are offered to them (first asked first).

    Read once per process and value of ``$KVROW_FUZZ_ENGINES`` (scanning the
    installed packages' entry points costs milliseconds, and every name
    lookup and verdict asks): what is installed does not change under a run.
    """
    key = os.environ.get(ENV, "")
    if key not in _refs:
        installed = {ep.name: ep.value for ep in entry_points(group=GROUP) if ep.name not in BUILTIN}
        env = _env_refs()
        ordered = {**env, **{n: r for n, r in installed.items() if n not in env}}
        _refs[key] = {**ordered, **{n: r for n, r in BUILTIN.items() if n not in ordered}}
    return dict(_refs[key])


def load(name: str) -> Engine:
    """The engine called ``name``, imported on first use; ``EngineUnavailable`` if its code cannot be imported
    (a missing dependency, or ``sys.modules[module] = None``), ``TargetError`` for a name nobody declared."""
    if name in _registered:
        return _registered[name]
    declared = refs()
    if name not in declared:
        raise TargetError(f"no engine named {name!r} (declared: {', '.join(declared)})")
    ref = declared[name]
    if (name, ref) not in _loaded:
        _loaded[name, ref] = _imported(name, ref)
    return _loaded[name, ref]


def _imported(name: str, ref: str) -> Engine:
    module, _, attr = ref.partition(":")
    try:
        engine = getattr(importlib.import_module(module), attr)
    except ImportError as e:
        raise EngineUnavailable(name, f"{module} cannot be imported ({e})") from None
    except AttributeError:
        raise EngineUnavailable(name, f"{module} has no {attr}") from None
    except Exception as e:  # noqa: BLE001 - an engine whose code fails to load is unavailable, said in one line
        raise EngineUnavailable(name, f"{module} failed to import ({type(e).__name__}: {e})") from None
    if not NAME.fullmatch(name) or getattr(engine, "name", None) != name:
        raise EngineUnavailable(name, f"{ref} is named {getattr(engine, 'name', None)!r}, not {name!r}")
    return engine


def engines() -> tuple[list[Engine], dict[str, str]]:
    """The loadable engines in the order specs are offered to them, and the unavailable ones: name -> why."""
    ready, unavailable = list(_registered.values()), {}
    for name in refs():
        if name in _registered:
            continue
        try:
            ready.append(load(name))
        except EngineUnavailable as e:
            unavailable[name] = e.why
    return ready, unavailable


def unavailable_behind(error: ImportError) -> EngineUnavailable | None:
    """The unavailable engine an ImportError met, if it met one: a module inside the package of a declared engine
    that cannot be loaded (a command that needs that engine's code, run where the engine is blocked or broken)."""
    name = error.name or ""
    for engine, ref in refs().items():
        package = ref.partition(":")[0].rpartition(".")[0] or ref.partition(":")[0]
        if name == package or name.startswith(package + "."):
            try:
                load(engine)
            except EngineUnavailable as e:
                return e
    return None


def engine_for(spec: str) -> Engine:
    """The engine whose target ``spec`` is: the first loadable engine that claims it.

    A spec no loadable engine claims is unknown; where an engine could not be
    loaded the message names it, since it may be the one that would have.
    """
    ready, unavailable = engines()
    for engine in ready:
        if engine.claims(spec):
            return engine
    missing = "; ".join(f"engine {n} unavailable: {why}" for n, why in unavailable.items())
    raise TargetError(f"no engine takes target {spec!r}" + (f" ({missing})" if missing else ""))


def engine_of(target: Target) -> Engine:
    """The engine a resolved target belongs to (``Target.engine``)."""
    return load(target.engine)


def runs_named_code(spec: str) -> bool:
    """Whether resolving ``spec`` would execute code that the spec names (a file, a checkout, an installed package).

    A case file is data: a spec it carries is only resolved when this says no.
    Where no loadable engine claims the spec the answer is yes: what cannot be
    judged is treated as code.
    """
    try:
        return engine_for(spec).runs_named_code(spec)
    except TargetError:
        return True


@contextlib.contextmanager
def registered(engine: Engine) -> Iterator[Engine]:
    """``engine`` offered every spec first, in this process, for the ``with`` block (a test's engine)."""
    previous = _registered.get(engine.name)
    _registered[engine.name] = engine
    try:
        yield engine
    finally:
        if previous is None:
            _registered.pop(engine.name, None)
        else:
            _registered[engine.name] = previous
