"""The kvrow-fuzz pytest plugin: this project's properties, and your own, against any target, from any repository.

Installed with the package (the ``pytest11`` entry point, named after this
module so that this repository's root ``conftest.py`` loading it too is a
no-op). From the root of an SGLang checkout:

    pytest --pyargs fuzz.properties --kvrow-target=python/sglang/srt/mem_cache/allocation_sizing.py

runs every decode property and the lifecycle invariants against that file
(``--kvrow-target`` is repeatable and takes every spec ``kvrow-fuzz run
--target`` takes: ``reference[@REVISION]``, ``sglang==X.Y.Z``, ``sglang``, a
path). Each test is parametrized by target, its id the spec as typed, so
JUnit reports read ``test_every_rounded_write_ends_within_its_row[SPEC]``
and are the same on every xdist worker. A regression test that ``kvrow-fuzz
repro CASE --emit-test`` wrote replays its case on each ``--kvrow-target``
too (``fuzz.findings.regression.replay_targets``).

Your own properties take the ``kvrow_target`` fixture (a resolved
``fuzz.targets.Target``: its ``sizing`` surface and decode ``revision``) and
are parametrized over the same targets.

Profiles: the session runs under a kvrow Hypothesis profile (``ci``:
derandomized, 200 examples, no database; ``dev``; ``nightly``) when it asks
for kvrow: a ``--kvrow-*`` option, the ``kvrow_profile`` ini option, or
``fuzz.properties`` on the command line. Otherwise the plugin touches no
Hypothesis setting (it is loaded by every pytest run of an environment that
has kvrow-fuzz installed). Which profile: ``--kvrow-profile``, else
``HYPOTHESIS_PROFILE`` when it names one of them, else the ini option, else
``ci``; ``--kvrow-max-examples N`` caps it, and ``--hypothesis-profile``
still wins.

Importing this module imports neither torch nor the targets: that happens
only when a session asks for kvrow.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path
from typing import Any

import pytest

PROPERTIES_PACKAGE = "fuzz.properties"
PROPERTIES_DIR = Path(__file__).resolve().parent / "properties"
TARGET_OPTION = "--kvrow-target"
TARGET_DEST = "kvrow_target"  # its dest: emitted regression tests read it too (fuzz/findings/regression.py)
PROFILE_OPTION = "--kvrow-profile"
MAX_EXAMPLES_OPTION = "--kvrow-max-examples"
BASELINE_OPTION = "--kvrow-baseline"
CASES_OPTION = "--kvrow-cases"
PROFILE_INI = "kvrow_profile"
DEFAULT_TARGET = "reference"
DEFAULT_PROFILE = "ci"
FIXTURE = "kvrow_target"

# The known noise of a session that asks for kvrow, filtered by category, message and the module that warns, never
# more: torch 2.13's torch.jit.script_method warns 14 times when torch._dynamo first loads, which an SGLang module's
# @torch.compile does on its first call (fuzz/engines/sglang/real/runtime/modules.py, compile_at_first_call).
QUIET_WARNINGS = (r"ignore:`torch\.jit\.script_method` is deprecated:DeprecationWarning:torch\.jit\._script",)

_TARGETS: dict[str, Any] = {}  # spec as typed -> Target, resolved once per process
_PROFILE_KEY = pytest.StashKey[str]()  # the profile a session that asks for kvrow runs under
_BASELINE_KEY = pytest.StashKey[dict[str, Any]]()  # --kvrow-baseline, read at configure: target spec -> entries


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kvrow-fuzz", "kvrow-fuzz: KV-cache row sizing properties")
    group.addoption(
        TARGET_OPTION,
        action="append",
        dest=TARGET_DEST,
        default=None,
        metavar="SPEC",
        help="target of the kvrow properties, the kvrow_target fixture and emitted regression tests: "
        "reference[@REVISION], sglang==X.Y.Z, sglang or a PATH to an allocation_sizing.py or checkout (repeatable; "
        "default: the reference, for an emitted test $KVROW_FUZZ_TARGET, else its case's target)",
    )
    group.addoption(
        PROFILE_OPTION,
        dest="kvrow_profile",
        default=None,
        metavar="NAME",
        help="kvrow Hypothesis profile: ci, dev or nightly (default: $HYPOTHESIS_PROFILE if it names one, else "
        "the kvrow_profile ini option, else ci)",
    )
    group.addoption(
        MAX_EXAMPLES_OPTION,
        dest="kvrow_max_examples",
        type=int,
        default=None,
        metavar="N",
        help="examples per property (overrides the profile's; the lifecycle test runs at most 100)",
    )
    group.addoption(
        BASELINE_OPTION,
        dest="kvrow_baseline",
        default=None,
        metavar="FILE",
        help="known findings (kvrow-fuzz baseline write): the decode properties and the proof fail only on a root "
        "cause not in it",
    )
    from fuzz.common.options import DEFAULT_CASES_DIR  # light: no torch, no Hypothesis

    group.addoption(
        CASES_OPTION,
        dest="kvrow_cases",
        default=DEFAULT_CASES_DIR,
        metavar="DIR",
        help=f"where a failing property writes its groups' case files, each replayed by the repro line its failure "
        f"prints (default {DEFAULT_CASES_DIR}, as run's --cases)",
    )
    parser.addini(PROFILE_INI, "kvrow Hypothesis profile of this project's sessions (ci, dev or nightly)", default="")


def target_specs(config: pytest.Config) -> list[str]:
    """The targets a session runs the properties on: the ``--kvrow-target`` specs as typed, else the reference."""
    return list(config.getoption("kvrow_target") or []) or [DEFAULT_TARGET]


def names_kvrow_properties(arg: str) -> bool:
    """Whether a command-line argument selects this package's properties (``fuzz.properties[...]`` or its path)."""
    head = str(arg).split("::", 1)[0]
    if head == PROPERTIES_PACKAGE or head.startswith(PROPERTIES_PACKAGE + "."):
        return True
    try:
        path = Path(head).resolve()
    except (OSError, ValueError):
        return False
    return path == PROPERTIES_DIR or PROPERTIES_DIR in path.parents


def asks_for_kvrow(config: pytest.Config) -> bool:
    """A session asks for kvrow with a kvrow option, the ini option, or by selecting the properties."""
    return bool(
        config.getoption("kvrow_target")
        or config.getoption("kvrow_profile")
        or config.getoption("kvrow_max_examples") is not None
        or config.getoption("kvrow_baseline") is not None
        or config.getini(PROFILE_INI)
        or any(names_kvrow_properties(a) for a in config.args)
    )


def profile_name(config: pytest.Config) -> str:
    """``--kvrow-profile``, else ``$HYPOTHESIS_PROFILE`` if a kvrow profile, else the ini option, else ci."""
    from fuzz.common.profiles import PROFILES

    env = os.environ.get("HYPOTHESIS_PROFILE", "")
    for name in (config.getoption("kvrow_profile"), env if env in PROFILES else "", config.getini(PROFILE_INI)):
        if name:
            if name not in PROFILES:
                raise pytest.UsageError(f"kvrow profile {name!r} unknown (known: {', '.join(PROFILES)})")
            return str(name)
    return DEFAULT_PROFILE


def resolved(spec: str) -> Any:
    """The ``Target`` of ``spec``, resolved once per process; a bad spec is a usage error (one line, exit 4)."""
    if spec not in _TARGETS:
        from fuzz.targets.base import TargetError
        from fuzz.targets.resolve import resolve_target

        try:
            _TARGETS[spec] = resolve_target(spec)
        except TargetError as e:
            raise pytest.UsageError(f"{TARGET_OPTION}: {e}") from None
    return _TARGETS[spec]


@pytest.hookimpl(tryfirst=True)  # before Hypothesis' own plugin loads --hypothesis-profile, which may name ours
def pytest_configure(config: pytest.Config) -> None:
    if not asks_for_kvrow(config):
        return
    from hypothesis import settings

    from fuzz.common.profiles import register_profiles

    for line in QUIET_WARNINGS:
        config.addinivalue_line("filterwarnings", line)
    name = profile_name(config)
    register_profiles()
    settings.load_profile(name)
    examples = config.getoption("kvrow_max_examples")
    if examples is not None:
        if examples < 1:
            raise pytest.UsageError(f"{MAX_EXAMPLES_OPTION}: expected a positive integer, got {examples}")
        name = f"{name}, {examples} examples"
        settings.register_profile(name, parent=settings.default, max_examples=examples)
        settings.load_profile(name)
    config.stash[_PROFILE_KEY] = name
    _import_properties_afresh()
    # Resolve every target up front, on the controller too (a wheel is fetched once, before xdist's workers start).
    for spec in config.getoption("kvrow_target") or []:
        resolved(spec)
    path = config.getoption("kvrow_baseline")
    if path is not None:  # read once, here: a bad file (or one for other targets) is one usage error, not N errors
        from fuzz.findings import baseline

        try:
            config.stash[_BASELINE_KEY] = baseline.load_for(
                path, [resolved(s) for s in target_specs(config)], BASELINE_OPTION
            )
        except baseline.BaselineError as e:
            raise pytest.UsageError(str(e)) from None


def _import_properties_afresh() -> None:
    """Hypothesis binds a ``@given`` test's settings when its module is imported, so this package's property
    modules, imported before this session loaded its profile (by an earlier session in this process, or by a
    conftest), would run under that moment's example count, deadline and database: dropped here, collection imports
    them again under this session's."""
    for module in [m for m in sys.modules if m.startswith(PROPERTIES_PACKAGE + ".")]:
        del sys.modules[module]


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    """The session's targets and profile; for each target, what it is, what the model still supplies (a real
    target) and which tables its tests judge.

    The same lines ``kvrow-fuzz run`` prints (a lone sizing file, say, leaves
    out the pools its version's own builders size).
    """
    name = config.stash.get(_PROFILE_KEY, None)
    if name is None:
        return None
    from fuzz.engines import engine_of  # lazily, as every import of this plugin
    from fuzz.findings.report import Command
    from fuzz.tables.judged import judged_lines, judgements

    lines = [f"kvrow-fuzz: targets {', '.join(target_specs(config))}; profile {name}"]
    for spec in target_specs(config):
        target = resolved(spec)
        lines.append(f"  {spec}: {target.label}")
        modeled = engine_of(target).modeled_line(target)
        if modeled:  # a real target
            lines.append(" " + modeled)
        lines += [" " + line for line in judged_lines(judgements(target, Command.RUN, {}))]  # the tables it judges
    return lines


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE in metafunc.fixturenames:
        specs = target_specs(metafunc.config)
        metafunc.parametrize(FIXTURE, specs, indirect=True, ids=specs, scope="session")


@pytest.fixture(scope="session")
def kvrow_baseline(request: pytest.FixtureRequest, kvrow_target: Any) -> Any:
    """The ``--kvrow-baseline`` entries on this target (a frozenset of ``baseline.Entry``: what it suppresses
    there, ``baseline.load_for``), or None: every cause fails. Read and checked at configure time."""
    if request.config.getoption("kvrow_baseline", None) is None:
        return None
    return request.config.stash[_BASELINE_KEY][kvrow_target.spec]


@pytest.fixture(scope="session")
def kvrow_target(request: pytest.FixtureRequest) -> Any:
    """The target under test (``fuzz.targets.Target``): one per ``--kvrow-target``, the reference by default."""
    return resolved(getattr(request, "param", DEFAULT_TARGET))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing property test's text is its findings as ``run`` prints them, each with its repro line
    (``fuzz.pytest_failures``): not a traceback of this tool, its reprs or Hypothesis' own report."""
    outcome = yield
    report = outcome.get_result()
    target = getattr(item, "funcargs", {}).get(FIXTURE)
    if call.excinfo is None or not report.failed or target is None or _PROFILE_KEY not in item.config.stash:
        return
    from fuzz.pytest_failures import failure_text

    try:
        text = failure_text(target, call.excinfo.value, item.config.getoption("kvrow_cases"))
    except Exception as e:  # pytest's own text stays, and says why it was not replaced
        report.sections.append(("kvrow-fuzz", f"the findings could not be rendered: {type(e).__name__}: {e}"))
        return
    if text is not None:
        report.longrepr = text


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect the properties' test modules even where the project's ``python_files`` would not match them."""
    if file_path.parent != PROPERTIES_DIR or not fnmatch.fnmatch(file_path.name, "test_*.py"):
        return None
    patterns = parent.config.getini("python_files")
    if parent.session.isinitpath(file_path) or any(fnmatch.fnmatch(file_path.name, p) for p in patterns):
        return None  # pytest's python plugin collects it
    return pytest.Module.from_parent(parent, path=file_path)
