"""The reusable GitHub Action (action.yml), run locally as written: fails on a 0.5.23-shaped file, passes on reference.

The composite action's ``run:`` steps are executed with bash as GitHub runs
them (``bash --noprofile --norc -eo pipefail``), their ``${{ ... }}``
expressions substituted (inputs, ``github.action_path``), with
GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, in a directory laid out like
SGLang's repository. Left out: the ``uses:`` steps (GitHub's own actions)
and the install step (the package index; kvrow-fuzz is installed here).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hermetic import unbroken

from fuzz.engines.sglang.backends import GRAPH_TABLES

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
DEMO_SHAPE = ROOT / "tests" / "sglang_shapes" / "plugin_demo_0_5_23.py"
CHECKOUT_PATH = "python/sglang/srt/mem_cache/allocation_sizing.py"
NEEDS_THE_INDEX = {"install"}  # step ids left out: they reach the package index
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def substitute(text: str, inputs: dict[str, str]) -> str:
    """The step's ``${{ ... }}`` expressions this test can evaluate; anything else fails the test."""

    def value(m: re.Match[str]) -> str:
        expr = m.group(1)
        if expr.startswith("inputs."):
            return inputs[expr.removeprefix("inputs.")]
        if expr == "github.action_path":
            return str(ROOT)
        raise AssertionError(f"action.yml uses {expr!r}, which this local run cannot evaluate")

    return EXPRESSION.sub(value, text)


def run_action(workspace: Path, only: tuple[str, ...] = (), **given: str) -> tuple[dict[str, int], str]:
    """Every local step of the action (or those ``only`` names), in order, honouring ``if: always()``; (exit status
    per step id, summary)."""
    spec = action()
    inputs = {name: str(d.get("default", "")) for name, d in spec["inputs"].items()}
    inputs.update({k.replace("_", "-"): v for k, v in given.items()})
    summary, output = workspace / "summary.md", workspace / "output.txt"
    base = {
        **os.environ,
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),  # kvrow-fuzz, installed
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_ACTION_PATH": str(ROOT),
    }
    statuses: dict[str, int] = {}
    failed = False
    for step in spec["runs"]["steps"]:
        if "run" not in step or step.get("id") in NEEDS_THE_INDEX or (only and step.get("id") not in only):
            continue
        assert step.get("shell") == "bash", step
        condition = step.get("if", "success()")
        if failed and "always()" not in condition:
            continue
        env = {**base, **{k: substitute(str(v), inputs) for k, v in (step.get("env") or {}).items()}}
        script = substitute(step["run"], inputs)
        r = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
        )
        statuses[step["id"]] = r.returncode
        failed = failed or r.returncode != 0
    return statuses, summary.read_text() if summary.exists() else ""


def checkout(root: Path) -> Path:
    """A workspace laid out like SGLang's repository, its sizing file in 0.5.23's shape."""
    path = root / CHECKOUT_PATH
    path.parent.mkdir(parents=True)
    path.write_text(DEMO_SHAPE.read_text())
    return root


def test_action_installs_pinned_torch_from_the_cpu_index_and_this_project():
    install = next(s for s in action()["runs"]["steps"] if s.get("id") == "install")
    cpu_index = r"--index-url https://download\.pytorch\.org/whl/cpu\s+\\?\s*-c \S+ torch==2\.13\.0"
    assert re.search(cpu_index, install["run"])
    assert re.findall(r"\btorch\S*", install["run"]) == ["torch==2.13.0"]  # never an unpinned torch
    assert install["run"].count('-c "$ACTION_PATH/constraints.txt"') == 2  # both installs pinned
    assert '"$ACTION_PATH"' in install["run"] and install["env"]["ACTION_PATH"] == "${{ github.action_path }}"


@pytest.mark.slow
def test_action_fails_on_a_0_5_23_checkout_with_repro_lines_and_passes_on_the_reference(tmp_path):
    # kept short: EAGLE only (the page-1 gap is there), few examples, the tiny space
    fast = {"max_examples": "20", "space": "tiny", "run_args": "--pin speculative_algorithm=EAGLE"}
    fast["prove_args"] = "--algorithm EAGLE"
    before = checkout(tmp_path / "before")
    statuses, summary = run_action(before, **fast)
    assert statuses == {"run": 0, "prove": 0, "summary": 0, "verdict": 1}, statuses  # the last step fails the job
    out = before / "kvrow-fuzz"
    assert (out / "run.status").read_text().strip() == "1" and (out / "prove.status").read_text().strip() == "1"
    assert "WITNESS write-within-row/alloc-page-1 on " in summary, summary  # prove's lead of #33579
    repro = [line.strip() for line in unbroken(summary).splitlines() if line.lstrip().startswith("repro: ")]
    assert repro and all("--target" in line for line in repro), summary  # a file target is named, never trusted
    cases = sorted(p.name for p in (out / "cases").iterdir())
    assert any("write-within-row-alloc-page-1" in c for c in cases), cases
    for name in ("run", "prove"):
        sarif = json.loads((out / "sarif" / f"{name}.sarif").read_text())
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
        assert uris == {CHECKOUT_PATH}, (name, uris)  # relative to the workspace: code scanning maps it

    reference = tmp_path / "reference"
    reference.mkdir()
    statuses, summary = run_action(reference, target="reference", **fast)
    assert statuses == {"run": 0, "prove": 0, "summary": 0, "verdict": 0}, (statuses, summary)
    assert "no counterexample" in summary and "run: exit 0, prove: exit 0" in summary
    for name in ("run", "prove"):
        sarif = json.loads((reference / "kvrow-fuzz" / "sarif" / f"{name}.sarif").read_text())
        assert sarif["runs"][0]["results"] == []  # a clean log: code scanning closes the alerts


@pytest.mark.long
@pytest.mark.slow
def test_action_on_the_0_5_23_tree_passes_with_its_baseline_and_fails_without(pinned_wheels, tmp_path):
    from checkout_trees import build_tree

    from fuzz.cli import main

    tree = build_tree(tmp_path / "ws", "0.5.23")
    base = tree / "kvrow-baseline.json"
    write = ["baseline", "write", str(base), "--target", str(tree), "--max-examples", "20", "--write-path", "model"]
    assert main([*write, "--quiet"]) == 0
    fast = {"target": "python/sglang", "max_examples": "20", "space": "tiny", "run_args": "--write-path model"}
    statuses, summary = run_action(tree, baseline="kvrow-baseline.json", **fast)
    assert statuses == {"run": 0, "prove": 0, "summary": 0, "verdict": 0}, (statuses, summary)
    assert f"baseline: 0 new root cause(s), {2 + len(GRAPH_TABLES)} known" in summary  # each backend table's cause too
    statuses, summary = run_action(tree, **fast)
    assert statuses["verdict"] == 1 and "ROOT CAUSES on " in summary, (statuses, summary)


FINISHED = {"targets": [{"target": "t", "status": "clean", "examples": 20, "findings": []}]}
SAVED_BEFORE_THE_WORK = {"targets": [{"target": "t", "status": "interrupted", "examples": 0, "findings": []}]}


@pytest.mark.parametrize(
    "statuses, reports, verdict",
    [
        ({"run": "0", "prove": "0"}, {"run": FINISHED, "prove": FINISHED}, 0),
        ({"run": "0", "prove": "0"}, {}, 1),  # exit 0, no report: a process ended by the target's code (before 3)
        ({"run": "0", "prove": "0"}, {"run": SAVED_BEFORE_THE_WORK, "prove": FINISHED}, 1),
        ({"run": "0", "prove": "0"}, {"run": FINISHED, "prove": {"targets": []}}, 1),
        ({"run": "0", "prove": "0"}, {"run": FINISHED, "prove": "{"}, 1),
        ({"run": "3", "prove": "0"}, {"run": FINISHED, "prove": FINISHED}, 1),  # no verdict
        ({"prove": "0"}, {"run": FINISHED, "prove": FINISHED}, 1),  # the run step never wrote its status
    ],
    ids=["clean", "no-reports", "interrupted-report", "no-targets", "broken-report", "no-verdict", "no-status"],
)
def test_the_verdict_step_reads_clean_only_with_both_reports_finished(tmp_path, statuses, reports, verdict):
    out = tmp_path / "kvrow-fuzz"
    out.mkdir()
    for name, status in statuses.items():
        (out / f"{name}.status").write_text(status + "\n")
    for name, doc in reports.items():
        (out / f"{name}.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    assert run_action(tmp_path, only=("verdict",))[0] == {"verdict": verdict}


@pytest.mark.slow
def test_action_fails_on_a_target_that_ends_the_process_with_exit_0(tmp_path):
    """The target's code calling os._exit(0) used to end both steps with exit 0 and no report: a clean job."""
    path = tmp_path / CHECKOUT_PATH
    path.parent.mkdir(parents=True)
    ends = "\n\ndef get_alloc_reserve_per_decode():\n    import os\n\n    os._exit(0)\n"
    path.write_text(DEMO_SHAPE.read_text() + ends)
    statuses, summary = run_action(tmp_path, max_examples="5", space="tiny")
    assert statuses == {"run": 0, "prove": 0, "summary": 0, "verdict": 1}, (statuses, summary)
    out = tmp_path / "kvrow-fuzz"
    assert (out / "run.status").read_text().strip() == "3" and (out / "prove.status").read_text().strip() == "3"
    assert "run: exit 3, prove: exit 3 (0 clean, 1 counterexample, 2 bad input, 3 no verdict)" in summary
