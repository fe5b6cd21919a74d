"""A derandomized campaign draws the same inputs whatever the process ran before it (``fuzz.campaign.constants``).

Hypothesis mixes the literals of every *local* module loaded in the process into its draws: a test module, or SGLang's
modules executed from a temporary tree, loaded before a campaign would change what it explores (a test session's
order, then, what a run prints).  The campaign pins that pool to the project's own literals: a module of other
literals loaded first is in Hypothesis' pool, not in the pinned one, and leaves the run's examples and groups as
they were.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from fuzz.campaign import constants, driver
from fuzz.cli import main

MARK = "qzx41d7"  # a literal of the loaded module alone
RUN = ["run", "--target", "reference@sglang-0.5.18", "--profile", "ci", "--max-examples", "60", "--quiet"]


def outcome(tmp_path: Path, name: str) -> tuple[int, list[str]]:
    report = tmp_path / f"{name}.json"
    main([*RUN, "--cases", str(tmp_path / name), "--json", str(report)])
    (target,) = json.loads(report.read_text())["targets"]
    return target["examples"], sorted(f["signature"] for f in target["findings"])


def load_literals(tmp_path: Path, monkeypatch, name: str = "many_literals") -> None:
    """A local module of many integers the campaign's draws can take (a test module's, an SGLang module's)."""
    path = tmp_path / f"{name}.py"
    path.write_text("VALUES = (" + ", ".join(str(i) for i in range(2, 300)) + f", {MARK!r})\n")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, name, module)


def test_a_module_loaded_first_leaves_the_campaign_as_it_was(tmp_path, monkeypatch) -> None:
    """Its literals never reach the campaign's draws (without the pin, Hypothesis takes them at the first draw that
    asks its pool), and the run's examples and groups are as they were."""
    from hypothesis.internal.conjecture import providers

    before = outcome(tmp_path, "before")
    load_literals(tmp_path, monkeypatch)
    load_literals(tmp_path, monkeypatch, "padding")  # Hypothesis rescans when sys.modules' length changes: it does
    assert outcome(tmp_path, "after") == before
    assert MARK not in providers._get_local_constants().strings  # the pool the campaign drew from, as it left it


def test_the_pool_is_the_projects_literals_alone(tmp_path, monkeypatch) -> None:
    from hypothesis.internal.conjecture import providers

    load_literals(tmp_path, monkeypatch, "marked_literals")
    driver.load_project_modules()
    monkeypatch.setattr(providers, "_sys_modules_len", None)  # a rescan (it keys on sys.modules' length alone)
    assert MARK in providers._get_local_constants().strings  # Hypothesis' own pool takes the module's literals
    size = constants.pin_local_constants(driver.project_packages())
    assert size == len(providers._local_constants) > 0 and MARK not in providers._local_constants.strings
    assert providers._get_local_constants() is providers._local_constants  # nothing loaded since: the pool kept
