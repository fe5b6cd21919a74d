"""Real SGLang sizing code as a target: release wheels, a local file, the installed package, bad input, fidelity.

The release tests read ``sglang==X.Y.Z`` from the session's test wheel cache
(``tests/conftest.py``): per release a wheel holding a sizing module of its
API shape (``tests/sglang_shapes/``), with the release's arithmetic, so
0.5.18 carries the seed bug #35424 and 0.5.19 fixes it, offline.  The tests
marked ``network`` hold the shapes against the real wheels and ask the real
registry; they run only when asked (``--run-network``).  Local-file tests
run with no package index and no pip configuration, so they prove a file
target needs no network.
"""

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from hermetic import GENERATIONS, offline_pip_env, repro_words, shape_of, shape_source, unbroken
from hypothesis import settings as Settings

from allocator_model.config import ServingConfig
from allocator_model.revisions import RELEASE_REVISIONS, REVISIONS
from allocator_model.scenario import DecodeScenario
from fuzz.common.profiles import get_profile
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.catalog import CATALOG
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.decode.engine import campaign
from fuzz.engines.sglang.decode.properties import WRITE_WITHIN_ROW
from fuzz.engines.sglang.fidelity import differential
from fuzz.engines.sglang.real import wheels
from fuzz.engines.sglang.real.loader import load_sizing_module
from fuzz.engines.sglang.real.real import RealSizing
from fuzz.engines.sglang.real.resolve import requests_of
from fuzz.findings import casefile
from fuzz.findings.report import Status
from fuzz.findings.schemas import validate
from fuzz.targets.base import TargetCallError, TargetError
from fuzz.targets.resolve import resolve_target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUGGY, FIXED = "0.5.18", "0.5.19"

# An allocation_sizing.py-shaped module written for these tests from the reference doc's formulas
# (never SGLang's source). Upstream-like: the headroom covers the reserve only when the alloc page > 1.
SIZING_FILE = """\
from sglang.srt.runtime_context import get_parallel, get_schedule, get_spec, max_speculative_num_draft_tokens


def get_alloc_page_size():
    return get_schedule().page_size * get_parallel().attn_dcp_size


def get_alloc_len_per_decode():
    spec = get_spec()
    if spec.speculative_algorithm is None:
        return 1
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    kind = SpeculativeAlgorithm.from_string(spec.speculative_algorithm)
    dmax = max_speculative_num_draft_tokens()
    if kind.is_uno():
        return dmax + 1
    steps, topk, page = spec.speculative_num_steps or 1, spec.speculative_eagle_topk or 1, get_alloc_page_size()
    if page == 1 or topk == 1 or not kind.has_draft_kv():
        return max(steps * topk, dmax)
    return max(-(-(page - 1 + steps) // page) * page * topk, dmax)


def get_alloc_reserve_per_decode():
    RAISE_HERE
    return 2 * get_alloc_len_per_decode()


def page_aligned_decode_alloc_lens(reqs, *, reserve, page_size):
    cur = [r.kv.kv_allocated_len for r in reqs]
    nxt = [max(a, ROUNDED) for a, r in zip(cur, reqs)]
    return cur, nxt, sum(n - a for n, a in zip(nxt, cur))


def get_req_to_token_extra_context_len():
    extra = 4 + (max_speculative_num_draft_tokens() or 0)
    page = get_alloc_page_size()
    if get_spec().speculative_algorithm is not None and COVERED:
        extra = max(extra, get_alloc_reserve_per_decode() + page - 1)
    return extra


def SpeculativeAlgorithm_is_uno():
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    return SpeculativeAlgorithm.from_string(get_spec().speculative_algorithm).is_uno()
"""
ROUNDED = "(r.kv.kv_committed_len + reserve + page_size - 1) // page_size * page_size"
UPSTREAM = "(page > 1 or SpeculativeAlgorithm_is_uno())"  # #33579: page 1 gets 4 + Dmax only
SAFE = "True"  # the reference's page-1 fix: every spec config gets R + page - 1 (adaptive too: L = Dmax)


def sizing_file(
    tmp_path, name="allocation_sizing.py", *, raise_here="pass", rounded=ROUNDED, covered=UPSTREAM, text=None
):
    path = tmp_path / name
    if text is None:
        text = SIZING_FILE.replace("RAISE_HERE", raise_here).replace("ROUNDED", rounded).replace("COVERED", covered)
    path.write_text(text)
    return str(path)


def offline_env(tmp_path):
    """An empty wheel cache, pip allowed to run but with no index, no find-links and no configuration file.

    Anything that needs the network fails fast without leaving the machine.
    """
    cache = tmp_path / "empty-cache"
    cache.mkdir(exist_ok=True)
    env = offline_pip_env({k: v for k, v in os.environ.items() if k != wheels.OFFLINE})
    return {**env, "PYTHONPATH": ROOT, "KVROW_FUZZ_CACHE": str(cache), "PIP_NO_CACHE_DIR": "1"}


def fuzz(*args, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=env or {**os.environ, "PYTHONPATH": ROOT},
        timeout=600,
    )


# -- release wheels (the session's test wheels) ----------------------------------------

SHAPES_OF = {release: shape_of(release) for release in RELEASE_REVISIONS}


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def releases():
    return {v: resolve_target(f"sglang=={v}") for v in (BUGGY, FIXED)}


def test_every_release_is_served_from_the_test_wheel_cache_in_its_api_shape():
    """Each modeled release: its test wheel (no download), the generation the loader detects, its semantics."""
    cache = os.environ["KVROW_FUZZ_CACHE"]
    assert sorted(os.listdir(cache)) == sorted(f"sglang-{r}-cp311-cp311-manylinux_2_34_x86_64.whl" for r in SHAPES_OF)
    for release, shape in SHAPES_OF.items():
        target = resolve_target(f"sglang=={release}")
        assert wheels.release_wheel(release).startswith(cache + os.sep)
        assert wheels.read_from_wheel(wheels.release_wheel(release)) == shape_source(shape)
        assert target.sizing.generation.name == GENERATIONS[shape], (release, target.sizing.generation)
        assert target.revision.name == RELEASE_REVISIONS[release]


def sizing_surface(sizing, cfg, lens):
    """Everything the tool reads from a sizing module for one configuration (what raised, by exception type)."""

    def call(fn, *args):
        try:
            return fn(*args)
        except TargetCallError as e:
            return ("raised", type(e.__cause__).__name__)

    runtimes = cfg.runtimes() if cfg.spec_on else [None]
    page = call(sizing.alloc_page_size, cfg)
    return (
        page,
        call(sizing.req_to_token_extra_context_len, cfg),
        [call(sizing.alloc_len_per_decode, cfg, rt) for rt in runtimes],
        [call(sizing.alloc_reserve_per_decode, cfg, rt) for rt in runtimes],
        call(sizing.page_aligned_decode_alloc_lens, lens, 8, page) if isinstance(page, int) else None,
    )


@pytest.mark.network
@pytest.mark.parametrize("release", sorted(SHAPES_OF))
def test_each_test_shape_agrees_with_its_real_release(release, real_wheel_cache):
    """The test shapes stand in for the releases: the same numbers on every configuration of the tiny space."""
    from fuzz.engines.sglang.prove.grid import launch_grid, target_algorithms
    from fuzz.engines.sglang.prove.space import SPACES

    real = resolve_target(f"sglang=={release}")  # the real wheel: the user's cache, else pip download
    shape = load_sizing_module(shape_source(SHAPES_OF[release]), f"test shape {SHAPES_OF[release]}", "<shape>")
    shape.requests = requests_of(release)  # as resolve sets it: the release's own Req shape (0.5.19+ reads it)
    mine = RealSizing(shape, real.revision)
    assert mine.generation == real.sizing.generation
    lens = [(c, a) for c in (1, 5, 17, 100) for a in (c, c + 3, c + 70)]
    space, checked = SPACES["tiny"], 0
    for algorithm in target_algorithms(real):
        for page_size in space.page_sizes:
            grid = launch_grid(space, algorithm, page_size)
            for i in range(len(grid)):
                cfg = ServingConfig.resolve(context_len=4096, **grid.config_kwargs(i))
                assert sizing_surface(mine, cfg, lens) == sizing_surface(real.sizing, cfg, lens), cfg.short()
                checked += 1
    assert checked > 1000


def test_release_targets_load_the_real_module_with_the_semantics_of_their_version(releases):
    assert releases[BUGGY].sizing.generation.name == "accessors" and releases[BUGGY].revision.name == "sglang-0.5.18"
    assert releases[FIXED].sizing.generation.name == "alloc-page" and releases[FIXED].revision.name == "sglang-0.5.19"
    assert not any(m == "sglang" or m.startswith("sglang.") for m in sys.modules), "the stubs leaked into sys.modules"


@pytest.mark.parametrize("bug", [b for b in CATALOG if b.bug in ("#35424", "#33579")], ids=lambda b: b.id)
def test_catalogued_release_bugs_on_the_real_code(releases, bug):
    """The seed bug fails on 0.5.18's own code and passes on 0.5.19's; #33579 (page 1) fails on both."""
    for version, target in releases.items():
        _, found = check_scenario(target, bug.scenario)
        expect = bug.bug == "#33579" or version == BUGGY
        assert any(v.prop == bug.prop for v in found) == expect, (version, [v.describe() for v in found])


def test_campaigns_on_a_buggy_and_a_fixed_release(releases):
    """The harness finds the seed bug's group in 0.5.18's real code, both groups apart, and none in 0.5.19's."""
    ci = Settings(get_profile("ci"), max_examples=100)
    buggy = campaign(releases[BUGGY], ci, props=(WRITE_WITHIN_ROW,), seed=0)
    groups = {str(f.signature) for f in buggy.findings}
    standard_silent = {g for g in groups if "@" not in g and "[" not in g}  # the other kinds and the guards apart
    assert standard_silent == {"write-within-row/dcp>1", "write-within-row/alloc-page-1"}, groups
    fixed = campaign(releases[FIXED], ci, props=(WRITE_WITHIN_ROW,), seed=0)
    fixed_groups = [str(f.signature) for f in fixed.findings]
    assert not any(sig.endswith("/dcp>1") for sig in fixed_groups), fixed_groups
    assert fixed.examples >= 100 and fixed.error is None


def test_matrix_writes_markdown_json_and_cases_that_replay(tmp_path):
    out = tmp_path / "m"
    r = fuzz(
        "matrix",
        "--releases",
        f"{BUGGY}..{BUGGY}",
        "--max-examples",
        "20",
        "--fidelity-configs",
        "200",
        "--jobs",
        "1",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    report = json.loads((out / "matrix.json").read_text())
    validate("report", report)
    assert report["command"] == "matrix" and report["complete"] and report["requested"] == [BUGGY]
    (row,) = report["targets"]
    assert row["release"] == BUGGY and row["api"] == "accessors" and row["semantics"] == "sglang-0.5.18"
    assert row["status"] == "counterexample" and row["examples"] >= 20 and row["seconds"] > 0
    fid = row["fidelity"]
    assert fid["status"] == "clean" and fid["per_kind"] == 200 and fid["configs"] == 200 * len(fid["kinds"])
    assert fid["kinds"] == {k: {"configs": 200, "agree": 200} for k in KINDS_0_5_18}  # every kind 0.5.18 builds
    table = fid["page_tables"]["fa3_page_table"]  # compared, or why not: this fixture's wheel has no tree to run
    assert table["steps"] == 0 and "not run here" in table["skipped"]
    assert row["findings"] and all(f["kind"] == "decode-scenario" for f in row["findings"])
    assert all(f["on_reference"] == "passes" for f in row["findings"])
    assert "#35424" in next(f["catalog"] for f in row["findings"] if f["signature"] == "write-within-row/dcp>1")
    md = (out / "matrix.md").read_text()
    assert md == r.stdout.split("\nwritten: ")[0] and "| 0.5.18 | accessors | counterexample |" in md
    assert f"[{BUGGY}] counterexample: " in r.stderr and "(1 of 1 releases done" in r.stderr  # the progress line
    for f in row["findings"]:
        assert f"`{f['signature']}`" in md
        replay = casefile.replay(f["repro"].split()[-1])
        assert replay.reproduced and f"FAILS {f['signature']}" in replay.text


KINDS_0_5_18 = ("standard", "swa", "hisparse", "unified-mamba", "unified-swa")


def test_fidelity_of_a_release_and_a_mismatch_found_and_shrunk(releases):
    agree = differential.fidelity(releases[BUGGY], configs=1000)
    assert agree.status == Status.CLEAN and agree.configs == 1000 and not agree.findings
    assert agree.functions == [
        "alloc_len_per_decode",
        "alloc_reserve_per_decode",
        "req_to_token_extra_context_len",
        "req_to_token_row_width",
    ]
    # The planted gap: 0.5.18's code against the model of 0.5.19 (alloc page with dcp).
    gap = differential.fidelity(releases[BUGGY], revision=REVISIONS["sglang-0.5.19"], configs=1000)
    assert gap.status == Status.COUNTEREXAMPLE
    sigs = {str(f.signature) for f in gap.findings}
    assert "model-mismatch/req_to_token_extra_context_len" in sigs, sigs
    for f in gap.findings:
        assert (
            f.kind is SGLangCase.FIDELITY
            and f.revision == REVISIONS["sglang-0.5.19"]
            and f.target == releases[BUGGY].spec
        )
        assert f.config.attn_dcp_size > 1  # the cause, kept by shrinking


# -- a local file, no network -------------------------------------------------


def is_timing(key: str) -> bool:
    """A report's timing field: ``seconds`` or ``*_seconds`` (``proof_seconds``, ``sglang_seconds``): every
    duration a report records is named so (``fuzz/findings/report.schema.json``, the campaign's stats)."""
    return key == "seconds" or key.endswith("_seconds")


def without_timings(value: Any) -> Any:
    """``value`` (a parsed JSON report) without its timing fields at any depth: what two runs of one seed may differ
    in, so comparing the rest compares everything else (a new timing field cannot make the runs differ)."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if not is_timing(k)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def test_without_timings_drops_every_duration_and_nothing_else():
    report = {
        "seconds": 1.5,
        "targets": [
            {"seconds": 2, "proof_seconds": 0.1, "examples": 3, "stats": {"sglang_seconds": 4, "seconds_per": 1}}
        ],
    }
    assert without_timings(report) == {"targets": [{"examples": 3, "stats": {"seconds_per": 1}}]}


@pytest.mark.slow
def test_local_file_runs_offline_and_twice_gives_the_same_result(tmp_path):
    path = sizing_file(tmp_path)
    env = offline_env(tmp_path)
    runs = []
    for i in range(2):
        d = tmp_path / f"run{i}"
        r = fuzz(
            "run",
            "--target",
            path,
            "--profile",
            "ci",
            "--max-examples",
            "30",
            "--seed",
            "0",
            "--quiet",
            "--cases",
            str(d / "cases"),
            "--json",
            str(d / "r.json"),
            cwd=tmp_path,
            env=env,
        )
        assert r.returncode == 1, r.stdout + r.stderr
        report = without_timings(json.loads((d / "r.json").read_text()))  # differs by design: the time taken,
        for t in report["targets"]:  # and where the cases went
            for f in t["findings"]:
                f.pop("repro")
                f.get("representative", {}).get("finding", {}).pop("repro", None)  # its case file's path too
        cases = {n: (d / "cases" / n).read_text() for n in sorted(os.listdir(d / "cases"))}
        runs.append((report, cases))
    assert runs[0] == runs[1]
    (t,) = runs[0][0]["targets"]
    assert t["target"] == path and t["status"] == "counterexample" and t["examples"] >= 30
    # The file is upstream-like: its headroom covers the reserve only for alloc page > 1 (#33579), nothing else:
    # that one group, on the standard pool and on whichever other pool kinds show it (``group@kind``).
    signatures = [f["signature"] for f in t["findings"]]
    assert "write-within-row/alloc-page-1" in signatures, signatures
    assert all(re.fullmatch(r"write-within-row/alloc-page-1(@[a-z-]+)?", s) for s in signatures), signatures
    assert all(f["config"]["page_size"] * f["config"]["attn_dcp_size"] == 1 for f in t["findings"])


def test_a_checkout_directory_and_an_explicit_version(tmp_path):
    checkout = tmp_path / "sglang-checkout"
    (checkout / "python/sglang/srt/mem_cache").mkdir(parents=True)
    sizing_file(checkout / "python/sglang/srt/mem_cache")
    newest = resolve_target(str(checkout))
    assert newest.kind == "file" and newest.revision.name == "sglang-0.5.23" and "version unknown" in newest.label
    old = resolve_target(f"{checkout}@0.5.18")
    assert old.revision.name == "sglang-0.5.18" and old.spec.endswith("allocation_sizing.py@0.5.18")
    from fuzz.engines.sglang.real import with_sglang_version

    assert with_sglang_version(str(checkout), "0.5.18") == f"{checkout}@0.5.18"
    with pytest.raises(TargetError, match="contradicts"):
        with_sglang_version("sglang==0.5.19", "0.5.18")


@pytest.mark.parametrize(
    "text",
    [
        "__version__ = version = '0.5.18'\n__version_tuple__ = version_tuple = (0, 5, 18)\n",  # every release's
        '__version__ = "0.5.18"\n',
        'version: str = "0.5.18"\n',
    ],
)
def test_a_checkout_tree_reads_its_release_from_its_version_file(tmp_path, text):
    """A tree's ``_version.py`` names its release (every release generates the chained assignment): the runtime
    runs that release's modules, not the newest release's (an older checkout's tree lacks some of those)."""
    from fuzz.engines.sglang.real.runtime.releases import release_for
    from fuzz.engines.sglang.real.runtime.tree import directory_tree

    (tmp_path / "python/sglang/srt").mkdir(parents=True)
    (tmp_path / "python/sglang/_version.py").write_text(text)
    tree = directory_tree(str(tmp_path))
    assert tree.version == "0.5.18" and release_for(tree.version).version == "0.5.18"


def test_sglang_version_picks_the_decode_semantics_of_a_replay(tmp_path, capsys):
    """0.5.18 wrote DFLASH's reserve unrounded (#35265): the same case fails only under its semantics."""
    from fuzz.cli import build_parser

    bug = next(b for b in CATALOG if b.bug == "#35265" and b.revision == "sglang-0.5.18")
    doc = {
        "schema": casefile.SCHEMA,
        "schema_version": casefile.SCHEMA_VERSION,
        "kind": "decode-scenario",
        "target": sizing_file(tmp_path, covered=SAFE),
        "property": bug.prop,
        "config": bug.scenario.config.to_dict(),
        "case": bug.scenario.to_dict(),
    }
    case = tmp_path / "case.json"
    case.write_text(json.dumps(doc))
    for extra, expect in (([], 0), (["--sglang-version", "0.5.18"], 1)):
        args = build_parser().parse_args(["repro", str(case), "--target", doc["target"], *extra])
        assert args.func(args) == expect, capsys.readouterr().out
    assert "FAILS page-aligned-growth/dflash" in capsys.readouterr().out


def test_server_args_generation_is_detected_and_called_with_server_args(tmp_path):
    text = (
        "from sglang.srt.server_args import ServerArgs\n"
        "def get_alloc_len_per_decode(server_args=None):\n"
        "    return 1 if server_args.speculative_algorithm is None else max(\n"
        "        (server_args.speculative_num_steps or 1) * (server_args.speculative_eagle_topk or 1),\n"
        "        server_args.max_speculative_num_draft_tokens)\n"
        "def get_alloc_reserve_per_decode(server_args=None):\n"
        "    return 2 * get_alloc_len_per_decode(server_args)\n"
        "def get_req_to_token_extra_context_len(server_args: ServerArgs):\n"
        "    return 4 + (server_args.max_speculative_num_draft_tokens or 0)\n"
    )
    t = resolve_target(sizing_file(tmp_path, text=text) + "@0.5.16")
    assert (
        t.sizing.generation.name == "server-args" and t.revision.name == "sglang-0.5.16"
    )  # 0.5.16-0.5.17: unified memory without spec
    cfg = ServingConfig.resolve(context_len=64, speculative_algorithm="EAGLE", speculative_adaptive=True)
    assert t.sizing.req_to_token_extra_context_len(cfg) == 4 + 8  # Dmax of the default candidates
    assert [t.sizing.alloc_len_per_decode(cfg, rt) for rt in cfg.runtimes()] == [8, 8, 8, 8, 8]


def test_installed_sglang_is_read_without_importing_it(tmp_path):
    site = tmp_path / "site"
    (site / "sglang/srt/mem_cache").mkdir(parents=True)
    (site / "sglang/__init__.py").write_text("raise ImportError('kvrow-fuzz must not import sglang')\n")
    sizing_file(site / "sglang/srt/mem_cache", covered=SAFE)
    (site / "sglang-0.5.20.dist-info").mkdir()
    (site / "sglang-0.5.20.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.20\n")
    env = {**offline_env(tmp_path), "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    r = fuzz(
        "run",
        "--target",
        "sglang",
        "--profile",
        "ci",
        "--max-examples",
        "50",
        "--quiet",
        "--cases",
        str(tmp_path / "c"),
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "== sglang: installed sglang 0.5.20" in r.stdout and "decode semantics sglang-0.5.20" in r.stdout


# -- a fidelity gap, and a sizing function that raises --------------------------


def test_fidelity_finds_a_planted_gap_and_the_case_replays(tmp_path):
    unrounded = resolve_target(sizing_file(tmp_path, "unrounded.py", rounded="r.kv.kv_committed_len + reserve"))
    result = differential.fidelity(unrounded, configs=300)
    assert [str(f.signature) for f in result.findings] == ["model-mismatch/page_aligned_decode_alloc_lens"]
    good = differential.fidelity(resolve_target(sizing_file(tmp_path, "good.py")), configs=300)
    assert good.status == Status.CLEAN and len(good.functions) == 6
    env = offline_env(tmp_path)
    r = fuzz(
        "fidelity",
        "--target",
        unrounded.spec,
        "--configs",
        "300",
        "--cases",
        str(tmp_path / "c"),
        "--json",
        str(tmp_path / "f.json"),
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert (
        f"COUNTEREXAMPLE model-mismatch/page_aligned_decode_alloc_lens on {unrounded.spec} (model sglang-0.5.23)"
        in r.stdout
    ), r.stdout
    report = json.loads((tmp_path / "f.json").read_text())
    validate("report", report)
    (entry,) = report["targets"]
    assert report["command"] == "fidelity" and entry["status"] == "counterexample" and entry["configs"] == 300
    (finding,) = entry["findings"]
    assert finding["kind"] == "fidelity-case" and finding["revision"] == "sglang-0.5.23"
    line = next(line for line in unbroken(r.stdout).splitlines() if line.startswith("repro:")).removeprefix("repro: ")
    assert finding["repro"] == line and f"--target {unrounded.spec}" in line  # a file target is named, not trusted
    replay = fuzz(*repro_words(line), cwd=tmp_path, env=env)
    assert replay.returncode == 1 and "FAILS model-mismatch/page_aligned_decode_alloc_lens" in replay.stdout


def test_a_raising_sizing_function_is_a_finding_naming_function_and_config(tmp_path):
    path = sizing_file(
        tmp_path, covered=SAFE, raise_here="if get_parallel().attn_dcp_size == 3:\n        raise ValueError('no dcp 3')"
    )
    t = resolve_target(path)
    cfg = ServingConfig.resolve(context_len=64, attn_dcp_size=3, speculative_algorithm="EAGLE", enable_overlap=False)
    with pytest.raises(
        TargetCallError,
        match=r"get_req_to_token_extra_context_len\(\) of .* raised in "
        r"get_alloc_reserve_per_decode\(\) line 26 ValueError: no dcp 3 "
        r"\(config: context_len=64 page_size=1 attn_dcp_size=3 ",
    ):
        t.sizing.req_to_token_extra_context_len(cfg)
    _, found = check_scenario(t, DecodeScenario(cfg, 60))
    assert [v.prop for v in found] == ["sizing-raised"]
    env = offline_env(tmp_path)
    r = fuzz(
        "run",
        "--target",
        path,
        "--profile",
        "ci",
        "--max-examples",
        "100",
        "--seed",
        "0",
        "--pin",
        "attn_dcp_size=3",
        "--cases",
        str(tmp_path / "c"),
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 1 and r.stdout.count("COUNTEREXAMPLE sizing-raised/") == 1, r.stdout + r.stderr
    assert (
        r.stdout.count("COUNTEREXAMPLE") == 1
    )  # otherwise the file is safe: the raise is the finding (its cause's lead)
    assert "raised in get_alloc_reserve_per_decode() line 26 ValueError: no dcp 3" in " ".join(r.stdout.split())
    line = next(
        line.strip()
        for line in unbroken(r.stdout).splitlines()
        if line.lstrip().startswith("repro:") and "sizing-raised" in line
    ).removeprefix("repro: ")
    replay = fuzz(*repro_words(line), cwd=tmp_path, env=env)
    assert replay.returncode == 1 and "FAILS sizing-raised/" in replay.stdout


# -- bad input: one line, exit 2 --------------------------------------------------


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda tmp: sizing_file(tmp, text="def get_alloc_len_per_decode(:\n"), "syntax error at line 1"),
        (
            lambda tmp: sizing_file(tmp, text="def something_else():\n    return 1\n"),
            "has no get_alloc_len_per_decode()",
        ),
        (
            lambda tmp: sizing_file(tmp, text="from sglang.srt.mem_cache.memory_pool import X\nX()\n"),
            "uses sglang.srt.mem_cache.memory_pool.X, which kvrow-fuzz has no stand-in for",
        ),
        (
            lambda tmp: sizing_file(
                tmp, text="from sglang.srt.runtime_context import get_spec\nget_spec().page_size\n"
            ),
            "read before the runtime context was published",
        ),
        (lambda tmp: str(tmp / "missing.py"), "does not exist"),
        (lambda tmp: "sglang==0.5.12", "predates the sizing functions (the oldest supported release is 0.5.13"),
        (lambda tmp: "sglang==zero", "is not a version"),
    ],
)
def test_bad_targets_are_one_line_errors(tmp_path, make, needle):
    with pytest.raises(TargetError, match=re.escape(needle)) as e:
        resolve_target(make(tmp_path))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "target, offline, needle",
    [
        ("sglang==0.5.18", False, "pip has no package index (PIP_NO_INDEX is set) and no wheel is cached in "),
        ("sglang==0.5.18", True, "KVROW_FUZZ_OFFLINE is set and no wheel is cached in "),
        ("SYNTAX", False, "syntax error at line 1"),
    ],
)
def test_bad_input_through_the_command_line(tmp_path, monkeypatch, capsys, target, offline, needle):
    """In-process: an empty cache and pip with no index (or no pip at all, offline) is one line, exit 2."""
    from fuzz.cli import main

    target = sizing_file(tmp_path, text="def f(:\n") if target == "SYNTAX" else target
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVROW_FUZZ_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv(wheels.OFFLINE, "1" if offline else "0")
    assert main(["run", "--target", target, "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and needle in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "empty-cache").exists() or not os.listdir(tmp_path / "empty-cache")


# pip's own words (pip 25, `pip download --no-deps sglang==X`), for the failures the registry decides.
PIP_UNREACHABLE = (
    "Looking in indexes: http://127.0.0.1:9/simple\n"
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection "
    "broken by 'NewConnectionError('<pip._vendor.urllib3.connection.HTTPConnection object at 0x7f2c0e7b1b10>: "
    "Failed to establish a new connection: [Errno 111] Connection refused')': /simple/sglang/\n"
    "ERROR: Could not find a version that satisfies the requirement sglang==0.5.18 (from versions: none)\n"
    "ERROR: No matching distribution found for sglang==0.5.18\n"
)
PIP_NO_SUCH_VERSION = (
    "ERROR: Could not find a version that satisfies the requirement sglang==0.5.999 "
    "(from versions: 0.5.16, 0.5.17, 0.5.18)\nERROR: No matching distribution found for sglang==0.5.999\n"
)


@pytest.mark.parametrize(
    "version, output, no_index, says",
    [
        ("0.5.18", PIP_UNREACHABLE, "0", "cannot fetch sglang==0.5.18: the package index is unreachable (no network?)"),
        (
            "0.5.18",
            PIP_NO_SUCH_VERSION.replace("0.5.16, 0.5.17, 0.5.18", "none"),
            "1",
            "cannot fetch sglang==0.5.18: pip has no package index (PIP_NO_INDEX is set)",
        ),
        ("0.5.999", PIP_NO_SUCH_VERSION, "0", "sglang 0.5.999 does not exist on the package index (latest: 0.5.18)"),
        ("0.5.999", PIP_NO_SUCH_VERSION, "1", "sglang 0.5.999 does not exist on the package index (latest: 0.5.18)"),
    ],
)
def test_pip_failures_are_explained_in_one_line(monkeypatch, version, output, no_index, says):
    monkeypatch.setenv("PIP_NO_INDEX", no_index)
    text = wheels._explain_pip_failure(version, output, "/cache")
    assert text.startswith(says) and "\n" not in text, text


@pytest.mark.network
def test_a_version_the_registry_does_not_have(tmp_path, monkeypatch, capsys, real_wheel_cache):
    """The live package index, asked for sglang==0.5.999: one line naming the latest release, exit 2."""
    from fuzz.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVROW_FUZZ_CACHE", str(tmp_path / "cache"))
    assert main(["run", "--target", "sglang==0.5.999", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "sglang 0.5.999 does not exist on the package index (latest: " in err, err
    assert len(err.strip().splitlines()) == 1


def test_bad_sglang_version_and_matrix_range(tmp_path):
    from fuzz.engines.sglang.fidelity.matrix import parse_releases
    from fuzz.engines.sglang.real import with_sglang_version
    from fuzz.engines.sglang.real.versions import VersionError

    with pytest.raises(TargetError, match="--sglang-version: sglang 0.4.0 predates"):
        with_sglang_version(sizing_file(tmp_path), "0.4.0")
    with pytest.raises(VersionError, match=re.escape("no modeled release in 0.6.0..0.7.0")):
        parse_releases("0.6.0..0.7.0")
    assert parse_releases("0.5.16..0.5.18,0.5.23") == ["0.5.16", "0.5.17", "0.5.18", "0.5.23"]
    assert parse_releases(None)[0] == "0.5.13" and len(parse_releases(None)) == 11
    from fuzz.targets.resolve import known_targets

    specs = {spec for spec, _ in known_targets()}
    assert {"sglang==X.Y.Z", "sglang[@X.Y.Z]", "PATH[@X.Y.Z]", "sglang==0.5.23"} <= specs


def test_real_sizing_keeps_the_surface_of_the_model(releases):
    cfg = ServingConfig.resolve(context_len=100, page_size=64, attn_dcp_size=8, speculative_algorithm="EAGLE")
    fixed = releases[FIXED].sizing
    assert isinstance(fixed, RealSizing) and fixed.alloc_page_size(cfg) == 512
    assert releases[BUGGY].sizing.alloc_page_size(cfg) == 64  # 0.5.18 sizes with page_size alone
    assert fixed.page_aligned_decode_alloc_lens([(90, 90), (10, 600)], 8, 512) == ([90, 600], [512, 600], 422)
