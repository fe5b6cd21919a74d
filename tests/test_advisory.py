"""``advisory``: one upstream-ready Markdown issue per root cause, rebuilt from values; the shipped one checked.

The shipped advisory (``docs/advisories/unified-rows.md``, the unified Mamba builders' 4 + D rows of 0.5.23)
is regenerated from its committed cases and must be the same text; its regression tests, both forms (the
kvrow-fuzz replay and the standalone test in SGLang's own layout), fail on 0.5.23's tree and pass on the tree
whose two builders use ``get_req_to_token_extra_context_len()``. The standalone one runs with SGLang's files on
the path and nothing of kvrow-fuzz importable, where SGLang's import chain resolves (``$KVROW_FUZZ_SGLANG_PYTHON``
names an interpreter that has SGLang's runtime packages; the suite's own has not, and installs none).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from checkout_trees import build_tree
from hermetic import pinned_wheel

from allocator_model.config import ServingConfig
from allocator_model.known_bugs import KNOWN_FIX
from fuzz.causes.standalone import standalone_test
from fuzz.cli import main
from fuzz.findings.casefile import load_document, replay_document
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.regression import emit_test

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "docs" / "advisories"
HAS_TRITON = importlib.util.find_spec("triton") is not None


PROJECT_PACKAGES = {"fuzz", "allocator_model", "strategies"}
STANDALONE_PATH = "test/registered/unit/mem_cache/test_unified_mamba_row_width.py"
CONFIGURATOR = "python/sglang/srt/mem_cache/kv_cache_configurator.py"
BUILDERS = ("_init_unified_mamba_pools", "_init_unified_mamba_swa_pools")
SGLANG_PYTHON = "KVROW_FUZZ_SGLANG_PYTHON"  # an interpreter with SGLang's runtime packages (default: this one)


def python_block(markdown: str) -> str:
    return re.search(r"```python\n(.*?)```", markdown, re.S).group(1)


def standalone_block(markdown: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", markdown, re.S)
    assert len(blocks) == 2, "the kvrow-fuzz regression test, then the standalone one"
    return blocks[1]


def shown_case() -> dict:
    text = (SHIPPED / "unified-rows.md").read_text()
    docs = [load_document(str(p)) for p in sorted((SHIPPED / "cases").glob("*.json"))]
    shown = [d for d in docs if emit_test(d).strip() == python_block(text).strip()]
    assert len(shown) == 1, "the advisory's test is the emitted test of one of its cases"
    return shown[0]


def unified_rows(code: list[tuple[str, str]]) -> Cause:
    known = KNOWN_FIX["unified-rows"]
    return Cause(known.key, CauseKind.KNOWN, known.bug, known.title, known.fix, code=code)


@pytest.mark.skipif(
    not HAS_TRITON,
    reason="triton (the writepath extra) is not installed: the advisory's SGLang write-path line cannot be regenerated",
)
def test_the_shipped_advisory_is_what_the_command_writes_from_its_cases(pinned_wheels, tmp_path, capsys):
    assert main(["advisory", str(SHIPPED / "cases"), "--out", str(tmp_path)]) == 0
    assert "new: unified-rows" in capsys.readouterr().out
    assert (tmp_path / "unified-rows.md").read_text() == (SHIPPED / "unified-rows.md").read_text()


def test_the_shipped_advisory_states_the_case_at_page_above_1_on_the_builders():
    text = (SHIPPED / "unified-rows.md").read_text()
    assert "--page-size 64" in text and "--enable-unified-memory" in text
    assert "_init_unified_mamba_pools" in text and "_init_unified_mamba_swa_pools" in text
    assert "Upstream:** new" in text and "get_req_to_token_extra_context_len()" in text


def test_its_regression_test_fails_on_0_5_23_and_passes_on_the_fixed_builders(pinned_wheels, tmp_path):
    doc = shown_case()
    buggy = build_tree(tmp_path / "buggy", "0.5.23", fixed=("page-1-headroom",))
    fixed = build_tree(tmp_path / "fixed", "0.5.23", fixed=("page-1-headroom", "unified-mamba-rows"))
    assert replay_document(doc, target=str(buggy)).reproduced
    assert not replay_document(doc, target=str(fixed)).reproduced


def test_a_case_that_no_longer_fails_is_left_out_and_nothing_to_write_is_exit_1(tmp_path, capsys):
    case = next((SHIPPED / "cases").glob("*.json"))
    doc = json.loads(case.read_text())
    doc["target"] = "reference"  # the reference sizes every row with the headroom: the case passes there
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "left out" in out and "no longer fails" in out and not list((tmp_path / "out").glob("*.md"))


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(signature="write-within-row/made-up-group"),
        lambda d: d.update(property="import os"),
        lambda d: d.update(config={"context_len": -1}),
    ],
)
def test_a_forged_case_is_one_line_and_exit_2(edit, tmp_path, capsys):
    doc = json.loads(next((SHIPPED / "cases").glob("*.json")).read_text())
    edit(doc)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1


def test_its_standalone_test_is_sglangs_layout_and_imports_nothing_of_kvrow_fuzz():
    text = (SHIPPED / "unified-rows.md").read_text()
    standalone = standalone_block(text)
    assert f"`{STANDALONE_PATH}`" in text
    tree = ast.parse(standalone)  # valid Python
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not imported & PROJECT_PACKAGES
    assert imported - {"sglang"} <= set(sys.stdlib_module_names) - {"importlib", "runpy"}, "SGLang's and Python's"
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & {"__import__", "exec", "eval"}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert set(BUILDERS) <= strings and "register_cpu_ci" in standalone and "CustomTestCase" in standalone


def test_the_standalone_test_is_rendered_from_the_causes_values_never_from_case_text():
    doc = shown_case()
    cfg = ServingConfig.from_dict(doc["config"])
    cause = unified_rows([(CONFIGURATOR, f"KVCacheConfigurator.{b}") for b in BUILDERS])
    rendered = standalone_test(cause, [doc["target"]], cfg)
    assert rendered is not None and rendered.path == STANDALONE_PATH
    assert rendered.text.rstrip() == standalone_block((SHIPPED / "unified-rows.md").read_text()).rstrip()
    # Other values, other text: the deployment, the release and the builders are what it is made of.
    one = unified_rows([(CONFIGURATOR, f"KVCacheConfigurator.{BUILDERS[1]}")])
    other = standalone_test(one, ["sglang==0.5.99"], cfg.replace(context_len=4096, page_size=16))
    assert other is not None and other.path.endswith("test_unified_mamba_swa_row_width.py")
    assert "CONTEXT_LEN = 4096" in other.text and "    page_size=16," in other.text and "sglang==0.5.99" in other.text
    assert other.text.count("def test_") == 1 and BUILDERS[0] not in other.text
    ast.parse(other.text)


@pytest.mark.parametrize(
    "code",
    [
        [("python/sglang/srt/mem_cache/allocation_sizing.py", "get_req_to_token_extra_context_len")],
        [(CONFIGURATOR, "KVCacheConfigurator._build_req_to_token_pool")],  # the standard row: the headroom's
        [],
    ],
)
def test_a_cause_no_unified_builder_carries_has_no_standalone_test(code):
    cfg = ServingConfig.from_dict(shown_case()["config"])
    assert standalone_test(unified_rows(code), ["sglang==0.5.23"], cfg) is None


def sglang_checkout(dest: Path, fixed: tuple[str, ...]) -> Path:
    """0.5.23's whole package laid out as a checkout: ``build_tree``'s files (its fixes applied) and the rest of
    the wheel (``sglang.test``, what the import chain reaches)."""
    tree = build_tree(dest, "0.5.23", fixed=fixed)
    wheel = pinned_wheel("0.5.23")
    assert wheel is not None
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith("sglang/") and not (tree / "python" / name).exists():
                z.extract(name, tree / "python")
    return tree


def sglang_only(tree: Path, code: str, python: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by ``python`` with the tree's SGLang first on the path and kvrow-fuzz made unimportable."""
    block = f"import sys; sys.modules.update(dict.fromkeys({sorted(PROJECT_PACKAGES)!r})); "
    path = os.pathsep.join(p for p in (str(tree / "python"), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [python, "-c", block + code], cwd=tree, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow
def test_its_standalone_test_fails_on_0_5_23_and_passes_on_the_fixed_builders_with_sglang_only(pinned_wheels, tmp_path):
    standalone = standalone_block((SHIPPED / "unified-rows.md").read_text())
    python = os.environ.get(SGLANG_PYTHON) or sys.executable
    buggy = sglang_checkout(tmp_path / "buggy", ())
    probe = sglang_only(buggy, "import sglang.srt.mem_cache.kv_cache_configurator, sglang.test.test_utils", python)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["(no output)"])[-1]
        reason = f"SGLang 0.5.23's import chain does not resolve under {python} ({last}); set {SGLANG_PYTHON}"
        print(reason)
        pytest.skip(reason)
    fixed = sglang_checkout(tmp_path / "fixed", ("unified-mamba-rows",))
    runs = {}
    for name, tree in (("buggy", buggy), ("fixed", fixed)):
        test = tree / STANDALONE_PATH
        test.parent.mkdir(parents=True)
        test.write_text(standalone)
        runs[name] = sglang_only(tree, f"import runpy; runpy.run_path({str(test)!r}, run_name='__main__')", python)
    assert runs["buggy"].returncode != 0, runs["buggy"].stderr[-2000:]
    assert "row 325 < context_len 317 + get_req_to_token_extra_context_len() 71" in runs["buggy"].stderr
    assert runs["fixed"].returncode == 0, runs["fixed"].stderr[-2000:]
    assert "Ran 2 tests" in runs["fixed"].stderr and "OK" in runs["fixed"].stderr
