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
import time
import zipfile
from pathlib import Path

import pytest
from checkout_trees import build_tree
from hermetic import pinned_wheel

from allocator_model.config import ServingConfig
from allocator_model.known_bugs import KNOWN_FIX
from fuzz.cli import main
from fuzz.engines.sglang.standalone import standalone_test
from fuzz.findings.casefile import load_document, replay_document
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.regression import emit_test, regression_files

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
    return Cause(known.key, CauseKind.KNOWN, known.bug, known.title, known.fix, code=code, table="req_to_token")


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


def test_a_case_that_no_longer_fails_is_left_out_and_nothing_to_write_is_exit_1(pinned_wheels, tmp_path, capsys):
    doc = shown_case()
    fixed = build_tree(tmp_path / "fixed", "0.5.23", fixed=("page-1-headroom", "unified-mamba-rows"))
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    # The tree whose builders size the row with the headroom: the case passes there.
    assert main(["advisory", str(path), "--target", str(fixed), "--out", str(tmp_path / "out")]) == 1
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
    assert "row 32776 < context_len 32768 + get_req_to_token_extra_context_len() 71" in runs["buggy"].stderr
    assert runs["fixed"].returncode == 0, runs["fixed"].stderr[-2000:]
    assert "Ran 2 tests" in runs["fixed"].stderr and "OK" in runs["fixed"].stderr


# -- every case validated as repro validates it; advisories for real targets only; the replay budget -----------

DECODE_CASE = {"committed_len": 1503, "device_lag": 0, "num_steps": None, "prior": None}


def case_doc(target: str, prop: str, **config: object) -> dict:
    base = {"context_len": 1507, "max_running_requests": 4, "page_size": 64, "speculative_eagle_topk": 1}
    return {
        "schema": "kvrow-fuzz/case",
        "schema_version": 1,
        "kind": "decode-scenario",
        "target": target,
        "property": prop,
        "config": {**base, **config},
        "case": DECODE_CASE,
    }


# Deployments 0.5.13 refuses at launch on which the model's write still fails (so a replay that skipped the
# launch rules would write an advisory, and embed a regression test that errors with repro's refusal).
REFUSED_ON_0_5_13 = {
    "dflash-dcp-8": dict(
        prop="write-within-row",
        kv_pool="swa",
        attn_dcp_size=8,
        speculative_algorithm="DFLASH",
        speculative_num_draft_tokens=16,
        speculative_num_steps=1,
    ),
    "ngram": dict(
        prop="page-aligned-growth",
        kv_pool="standard",
        attn_dcp_size=1,
        speculative_algorithm="NGRAM",
        speculative_num_draft_tokens=8,
        speculative_num_steps=1,
    ),
    "eagle-dcp-8": dict(
        prop="page-aligned-growth",
        kv_pool="standard",
        attn_dcp_size=8,
        speculative_algorithm="EAGLE",
        speculative_num_draft_tokens=4,
        speculative_num_steps=3,
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED_ON_0_5_13))
def test_a_deployment_the_release_refuses_is_refused_as_repro_refuses_it(name, pinned_wheels, tmp_path, capsys):
    config = dict(REFUSED_ON_0_5_13[name])
    prop = str(config.pop("prop"))
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(case_doc("sglang==0.5.13", prop, **config)))
    assert main(["repro", str(path)]) == 2
    refused = capsys.readouterr().err
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert err == refused and len(err.strip().splitlines()) == 1 and "does not launch this configuration" in err
    assert "left out" not in out and not list(tmp_path.glob("out/*.md"))


@pytest.mark.parametrize(
    ("target", "line"),
    [
        ("reference@sglang-0.5.18", "replay it on a release: --target sglang==0.5.18"),
        ("reference@pre-31616", "replay it on a release: e.g. --target sglang=="),
        ("reference", "replay it on a release: e.g. --target sglang=="),
    ],
)
def test_a_case_of_the_model_gets_one_line_naming_a_release_and_no_advisory(target, line, tmp_path, capsys):
    doc = load_document(next(p for p in regression_files() if "--write-within-row-dcp-1" in p))
    doc["target"] = target
    path = tmp_path / "case.json"
    path.write_text(json.dumps(doc))
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "a case of this tool's model" in err and line in err and not list(tmp_path.glob("out/*.md"))


@pytest.mark.parametrize("target", ["reference", "reference@sglang-0.5.18", " reference@pre-31616"])
def test_a_model_target_on_the_command_line_is_one_line(target, tmp_path, capsys):
    case = next((SHIPPED / "cases").glob("*.json"))
    assert main(["advisory", str(case), "--target", target, "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and "an advisory is written for a real target" in err


def lifecycle_case_of_bytes(size: int) -> dict:
    """A lifecycle case of about ``size`` bytes: four requests decoding step after step (a legal script)."""
    doc = load_document(next(p for p in regression_files() if "--lifecycle--" in p))
    doc["target"] = "sglang==0.5.23"  # never resolved: the budget is judged from the document first
    doc["config"].update(max_running_requests=4, context_len=64)
    steps: list[dict] = [{"op": "admit", "input_len": 1, "max_new_tokens": 1 << 30} for _ in range(4)]
    steps += [{"op": "prefill", "rid": r, "chunk": None} for r in range(4)]
    decode = {"op": "decode", "accepted": [[r, 1] for r in range(4)]}
    steps += [decode] * (size // (len(json.dumps(decode)) + 2))  # ", " between steps
    doc["case"] = {"steps": steps}
    return doc


@pytest.mark.parametrize("size", [(1 << 20) - 4096, (1 << 20) + 4096], ids=["just-under-1MiB", "just-over-1MiB"])
def test_a_1_mib_lifecycle_case_is_refused_by_the_replay_budget_in_a_blink(size, tmp_path, capsys):
    doc = lifecycle_case_of_bytes(size)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert abs(path.stat().st_size - size) < 8192
    start = time.monotonic()
    assert main(["advisory", str(path), "--out", str(tmp_path / "out")]) == 2
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert ("replay budget" in err) if size < 1 << 20 else ("bytes" in err or "large" in err), err
    assert took < 2.0, f"refused after {took:.1f} s"
    assert main(["repro", str(path)]) == 2  # the same bound
    assert capsys.readouterr().err.strip().split(": ", 2)[-1] in err


def test_every_case_is_validated_before_any_is_replayed(tmp_path, capsys, monkeypatch):
    import fuzz.engines.sglang.causes.advisory as advisory

    good = tmp_path / "a.json"
    good.write_text(json.dumps(load_document(next(p for p in regression_files() if "--write-within-row-dcp-1" in p))))
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps(lifecycle_case_of_bytes(200_000)))
    replays: list[object] = []
    monkeypatch.setattr(advisory, "replayed_case", lambda *a: replays.append(a))
    assert main(["advisory", str(tmp_path), "--target", "sglang==0.5.23", "--out", str(tmp_path / "out")]) == 2
    assert "replay budget" in capsys.readouterr().err and replays == []


# -- every travelling text made printable; code blocks and spans nothing inside can close ----------------------

HOSTILE_TEXT = "a``b\x1b[2J\u202e\nFAILS ```\n# injected"


def test_every_value_an_advisory_shows_is_printable_and_stays_inside_its_block(tmp_path):
    from fuzz.engines.sglang.cases import SGLangCase
    from fuzz.engines.sglang.causes.advisory import advisories, render
    from fuzz.engines.sglang.decode.replay import replayable_case

    path = next(p for p in regression_files() if "--write-within-row-dcp-1" in p)
    # A model case: the command refuses it, render does not care.
    case = replayable_case(SGLangCase.DECODE, load_document(path), path)
    (adv,) = advisories([(path, case)], lambda line: None)
    spec = next(iter(adv.findings))
    adv.where[spec] = [HOSTILE_TEXT]
    adv.cause.fix = HOSTILE_TEXT
    adv.cause.title = HOSTILE_TEXT
    text = render(adv)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    assert "\\x1b[2J" in text and "\\u202e" in text and "\n# injected" not in text
    assert f"- {spec}: ````a``b\\x1b[2J\\u202e\\x0aFAILS ```\\x0a# injected````" in text
    # Every fenced block closes where it was opened: the Python blocks parse, whole.
    for block in re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M):
        ast.parse(block)


def run_embedded(source: str, targets: list[str]) -> None:
    """The advisory's regression test executed as pytest would run it, on ``targets`` (``--kvrow-target``; [] for
    the case's own): returns where it passes, raises what it raises."""
    from types import SimpleNamespace

    namespace: dict = {}
    exec(compile(source, "test_kv_row_regression.py", "exec"), namespace)
    (test,) = [v for k, v in namespace.items() if k.startswith("test_")]
    test(SimpleNamespace(config=SimpleNamespace(getoption=lambda dest, default=None: targets)))


@pytest.mark.slow
def test_the_advisory_s_regression_test_runs_fails_on_the_release_and_passes_on_the_fix(pinned_wheels, tmp_path):
    """The shipped advisory's embedded test (what the command writes: the first test above) executed as pytest
    runs it: on 0.5.23 it fails with the replay's story (an assertion, never an error), on the tree whose
    builders carry the fix it passes."""
    source = python_block((SHIPPED / "unified-rows.md").read_text())
    with pytest.raises(AssertionError, match="FAILS write-within-row/paged@unified-mamba"):
        run_embedded(source, [])
    fixed = build_tree(tmp_path / "fixed", "0.5.23", fixed=("page-1-headroom", "unified-mamba-rows"))
    run_embedded(source, [str(fixed)])


def test_the_standalone_test_keeps_travelling_text_out_of_its_code():
    """A title, a fix or a release that holds quotes, backslashes or controls stays prose in the docstring; a
    builder whose module is no dotted name is no builder (it would be pasted into an import)."""
    cfg = ServingConfig.from_dict(shown_case()["config"])
    cause = unified_rows([(CONFIGURATOR, f"KVCacheConfigurator.{b}") for b in BUILDERS])
    cause.title = cause.fix = 'x"""\nimport os; os.system("touch PWNED")\n"""\\'
    rendered = standalone_test(cause, ['sglang==0.5.23"""\x1b[2J'], cfg)
    assert rendered is not None
    tree = ast.parse(rendered.text)
    assert "PWNED" in ast.get_docstring(tree) and "\x1b" not in rendered.text
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "system"]
    odd = unified_rows([("python/sglang/srt/mem_cache/x;import os.py", f"KVCacheConfigurator.{BUILDERS[0]}")])
    assert standalone_test(odd, ["sglang==0.5.23"], cfg) is None


def test_a_fidelity_case_is_left_out_and_said_so(tmp_path, capsys):
    fidelity = next(p for p in regression_files() if "--fidelity-case--" in p)
    assert main(["advisory", fidelity, "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "left out" in out and "a fidelity case" in out and not list(tmp_path.glob("out/*.md"))
