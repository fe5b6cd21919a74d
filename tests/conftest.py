"""The suite is hermetic: a wheel cache of test-written sizing modules, no package index, no user cache.

``sglang==X.Y.Z`` targets read ``sglang/srt/mem_cache/allocation_sizing.py``
(``mem_cache/common.py`` before 0.5.16) out of a cached wheel
(``fuzz.engines.sglang.real.wheels``).  For every modeled
release this session builds a wheel laid out and named like the real one,
holding the sizing module of its API shape from ``tests/sglang_shapes/``
(written for the tests, with the release's arithmetic), and points
``KVROW_FUZZ_CACHE`` at it for the whole session, subprocesses included.
``KVROW_FUZZ_OFFLINE=1`` makes any wheel the cache lacks an error instead of
a ``pip download``, and every pip index and configuration is cleared.

Tests that need the real registry (or the real wheels) carry the ``network``
marker and are skipped unless ``--run-network`` or ``KVROW_FUZZ_NETWORK=1``
asks for them; they get the user's own cache back (``real_wheel_cache``).

The end-to-end tier carries the ``slow`` marker: a whole campaign shrunk to
its minimal case, the issue's full proof space, a command's whole run in a
fresh interpreter, the action's steps as written.  Each checks something a
faster test of the default suite checks in part; they run with
``--run-slow`` (or ``KVROW_FUZZ_SLOW=1``).  ``./kvrow test`` (``.ci/run``, the
pull-request workflow) runs the default tier, then this one
(``--run-slow -m slow``); the network tier runs nightly.

A fixture built once for a module's tests (a tree, a campaign's result) is
session-scoped, built at most once per worker: xdist's ``worksteal`` hands a
worker tests of one module between tests of others, and pytest tears a
module-scoped fixture down at every change of module and builds it again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermetic import (
    NETWORK_ENV,
    PINNED_RELEASES,
    PIP_SETTINGS,
    build_wheel_cache,
    offline_pip_env,
    require_wheel,
)

from fuzz.common.collector import collect_less_often
from fuzz.common.threads import one_torch_thread_per_process
from fuzz.engines.sglang.real.wheels import OFFLINE

SLOW_ENV = "KVROW_FUZZ_SLOW"

collect_less_often()  # each worker runs campaigns in its own process, as the command line's process does
one_torch_thread_per_process()  # the workers are the parallelism, as a command's are


def network_allowed(config: pytest.Config) -> bool:
    return bool(config.getoption("--run-network")) or os.environ.get(NETWORK_ENV, "") not in ("", "0")


def slow_allowed(config: pytest.Config) -> bool:
    return bool(config.getoption("--run-slow")) or os.environ.get(SLOW_ENV, "") not in ("", "0")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("kvrow-fuzz").addoption(
        "--run-network",
        action="store_true",
        default=False,
        help=f"also run the tests marked network (the package index, the real wheels); or {NETWORK_ENV}=1",
    )
    parser.getgroup("kvrow-fuzz").addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help=f"also run the end-to-end tier marked slow (whole campaigns, the full proof space); or {SLOW_ENV}=1",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    offline = pytest.mark.skip(reason=f"needs the package index or the real wheels (--run-network or {NETWORK_ENV}=1)")
    slow = pytest.mark.skip(
        reason=f"the slow tier (--run-slow or {SLOW_ENV}=1; ./kvrow test runs it after the default tier)"
    )
    # The tier's longest tests first (``long``): a worker never starts one when the others are nearly done.
    items.sort(key=lambda item: "long" not in item.keywords)
    for item in items:
        if "network" in item.keywords and not network_allowed(config):
            item.add_marker(offline)
        elif "slow" in item.keywords and not slow_allowed(config):
            item.add_marker(slow)


_USER_ENV = dict(os.environ)  # as the session found it: what network tests get back


@pytest.fixture(scope="session", autouse=True)
def hermetic_wheel_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's wheel cache of test shapes; offline; pip without an index (inherited by subprocesses)."""
    cache = build_wheel_cache(tmp_path_factory.mktemp("sglang-wheels"))
    with pytest.MonkeyPatch.context() as mp:
        for name in PIP_SETTINGS:
            mp.delenv(name, raising=False)
        for name, value in offline_pip_env({}).items():
            mp.setenv(name, value)
        mp.setenv("KVROW_FUZZ_CACHE", str(cache))
        mp.setenv(OFFLINE, "1")
        yield cache


@pytest.fixture
def real_wheel_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a network test: the user's environment back (their wheel cache, their pip index), downloads allowed."""
    for name in (*PIP_SETTINGS, "PIP_CONFIG_FILE", "PIP_NO_INDEX", "KVROW_FUZZ_CACHE", OFFLINE):
        if name in _USER_ENV:
            monkeypatch.setenv(name, _USER_ENV[name])
        else:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def pinned_wheels(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A wheel cache of the pinned real wheels only, read offline (hermetic: the cache ``./kvrow test`` filled).

    Skips, saying why, where a wheel is missing: they are fetched at set-up, never here.
    """
    cache = tmp_path / "pinned-wheels"
    cache.mkdir()
    for release in PINNED_RELEASES:
        wheel = require_wheel(release)
        (cache / wheel.name).symlink_to(wheel)
    monkeypatch.setenv("KVROW_FUZZ_CACHE", str(cache))
    monkeypatch.setenv(OFFLINE, "1")
    return cache


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Why tests were skipped, counted by reason (the opt-in tiers, a missing wheel or extra): a skip says so."""
    import collections
    import re

    reasons: collections.Counter[str] = collections.Counter()
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[re.sub(r"^Skipped: ", "", str(text)).strip()[:300]] += 1  # whole: a reason ends with its remedy
    if reasons:
        terminalreporter.write_sep("-", f"{sum(reasons.values())} skipped, by reason")
        for reason, n in reasons.most_common():
            terminalreporter.write_line(f"{n:>5}  {reason}")
