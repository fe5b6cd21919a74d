"""Real SGLang sizing code as a target: release wheels, a local file, the installed package, bad input, fidelity.

The release tests use the real wheels of 0.5.18 (carries the seed bug #35424)
and 0.5.19 (fixes it); they live in the wheel cache outside the clone
(``$KVROW_FUZZ_CACHE`` or ~/.cache/kvrow-fuzz/wheels), downloaded with pip
on a cold cache.  Local-file tests run with the package index made
unreachable, so they prove a file target needs no network.
"""

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from hypothesis import settings as Settings

from allocator_model.config import ServingConfig
from allocator_model.revisions import REVISIONS
from allocator_model.scenario import DecodeScenario
from fuzz.catalog import CATALOG
from fuzz.common.profiles import get_profile
from fuzz.fidelity import differential
from fuzz.findings import casefile
from fuzz.findings.kinds import CaseKind
from fuzz.findings.report import Status
from fuzz.findings.schemas import validate
from fuzz.run.engine import campaign, check_scenario
from fuzz.run.properties import WRITE_WITHIN_ROW
from fuzz.targets import TargetCallError, TargetError, resolve_target
from fuzz.targets.sglang.loader import RealSizing

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
    """No package index, an empty wheel cache: anything that needs the network fails fast."""
    cache = tmp_path / "empty-cache"
    cache.mkdir(exist_ok=True)
    return {
        **os.environ,
        "PYTHONPATH": ROOT,
        "KVROW_FUZZ_CACHE": str(cache),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_FIND_LINKS": "",
        "PIP_NO_CACHE_DIR": "1",
    }


def fuzz(*args, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=env or {**os.environ, "PYTHONPATH": ROOT},
        timeout=600,
    )


def one_line_exit_2(r, needle):
    assert r.returncode == 2, r.stdout + r.stderr
    assert needle in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


# -- real release wheels ------------------------------------------------------


@pytest.fixture(scope="module")
def releases():
    return {v: resolve_target(f"sglang=={v}") for v in (BUGGY, FIXED)}


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
    assert {str(f.signature) for f in buggy.findings} == {"write-within-row/dcp>1", "write-within-row/alloc-page-1"}
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
    assert row["fidelity"]["status"] == "clean" and row["fidelity"]["configs"] == 200
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


def test_fidelity_of_a_release_and_a_mismatch_found_and_shrunk(releases):
    agree = differential.fidelity(releases[BUGGY], configs=1000)
    assert agree.status == Status.CLEAN and agree.configs == 1000 and not agree.findings
    assert agree.functions == ["alloc_len_per_decode", "alloc_reserve_per_decode", "req_to_token_extra_context_len"]
    # The planted gap: 0.5.18's code against the model of 0.5.19 (alloc page with dcp).
    gap = differential.fidelity(releases[BUGGY], revision=REVISIONS["sglang-0.5.19"], configs=1000)
    assert gap.status == Status.COUNTEREXAMPLE
    sigs = {str(f.signature) for f in gap.findings}
    assert "model-mismatch/req_to_token_extra_context_len" in sigs, sigs
    for f in gap.findings:
        assert f.kind is CaseKind.FIDELITY and f.revision == "sglang-0.5.19" and f.target == releases[BUGGY].spec
        assert f.config.attn_dcp_size > 1  # the cause, kept by shrinking


# -- a local file, no network -------------------------------------------------


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
        report = json.loads((d / "r.json").read_text())
        for t in report["targets"]:  # what differs by design: the time taken, and where the cases went
            t.pop("seconds")
            for f in t["findings"]:
                f.pop("repro")
        cases = {n: (d / "cases" / n).read_text() for n in sorted(os.listdir(d / "cases"))}
        runs.append((report, cases))
    assert runs[0] == runs[1]
    (t,) = runs[0][0]["targets"]
    assert t["target"] == path and t["findings"]


def test_a_checkout_directory_and_an_explicit_version(tmp_path):
    checkout = tmp_path / "sglang-checkout"
    (checkout / "python/sglang/srt/mem_cache").mkdir(parents=True)
    sizing_file(checkout / "python/sglang/srt/mem_cache")
    newest = resolve_target(str(checkout))
    assert newest.kind == "file" and newest.revision.name == "sglang-0.5.23" and "version unknown" in newest.label
    old = resolve_target(f"{checkout}@0.5.18")
    assert old.revision.name == "sglang-0.5.18" and old.spec.endswith("allocation_sizing.py@0.5.18")
    from fuzz.targets.sglang import with_sglang_version

    assert with_sglang_version(str(checkout), "0.5.18") == f"{checkout}@0.5.18"
    with pytest.raises(TargetError, match="contradicts"):
        with_sglang_version("sglang==0.5.19", "0.5.18")


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
    assert t.sizing.generation.name == "server-args" and t.revision.name == "sglang-0.5.18"
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
    assert "== sglang: installed sglang 0.5.20" in r.stdout and "decode semantics sglang-0.5.23" in r.stdout


# -- a fidelity gap, and a sizing function that raises --------------------------


def test_fidelity_finds_a_planted_gap_and_the_case_replays(tmp_path):
    unrounded = resolve_target(sizing_file(tmp_path, "unrounded.py", rounded="r.kv.kv_committed_len + reserve"))
    result = differential.fidelity(unrounded, configs=300)
    assert [str(f.signature) for f in result.findings] == ["model-mismatch/page_aligned_decode_alloc_lens"]
    good = differential.fidelity(resolve_target(sizing_file(tmp_path, "good.py")), configs=300)
    assert good.status == Status.CLEAN and len(good.functions) == 5
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
    line = next(line for line in r.stdout.splitlines() if line.startswith("repro:")).removeprefix("repro: ")
    assert finding["repro"] == line and f"--target {unrounded.spec}" in line  # a file target is named, not trusted
    replay = fuzz(*shlex.split(line)[3:], cwd=tmp_path, env=env)
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
        "--quiet",
        "--pin",
        "attn_dcp_size=3",
        "--cases",
        str(tmp_path / "c"),
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 1 and r.stdout.count("COUNTEREXAMPLE sizing-raised/") == 1, r.stdout + r.stderr
    assert r.stdout.count("COUNTEREXAMPLE") == 1  # otherwise the file is safe: the raise is the finding
    assert "raised in get_alloc_reserve_per_decode() line 26 ValueError: no dcp 3" in r.stdout
    line = next(
        line for line in r.stdout.splitlines() if line.startswith("repro:") and "sizing-raised" in line
    ).removeprefix("repro: ")
    replay = fuzz(*shlex.split(line)[3:], cwd=tmp_path, env=env)
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
        (lambda tmp: sizing_file(tmp, text="from sglang.srt.mem_cache.memory_pool import X\n"), "No module named"),
        (
            lambda tmp: sizing_file(
                tmp, text="from sglang.srt.runtime_context import get_spec\nget_spec().page_size\n"
            ),
            "read before the runtime context was published",
        ),
        (lambda tmp: str(tmp / "missing.py"), "does not exist"),
        (lambda tmp: "sglang==0.5.15", "predates mem_cache/allocation_sizing.py"),
        (lambda tmp: "sglang==zero", "is not a version"),
    ],
)
def test_bad_targets_are_one_line_errors(tmp_path, make, needle):
    with pytest.raises(TargetError, match=re.escape(needle)) as e:
        resolve_target(make(tmp_path))
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "target, needle, online",
    [
        ("sglang==0.5.18", "the package index is unreachable (no network?) and no wheel is cached", False),
        ("sglang==0.5.999", "sglang 0.5.999 does not exist on the package index", True),
        ("SYNTAX", "syntax error at line 1", False),
    ],
)
def test_bad_input_through_the_command_line(tmp_path, target, needle, online):
    target = sizing_file(tmp_path, text="def f(:\n") if target == "SYNTAX" else target
    env = {**os.environ, "PYTHONPATH": ROOT, "KVROW_FUZZ_CACHE": str(tmp_path)} if online else offline_env(tmp_path)
    one_line_exit_2(fuzz("run", "--target", target, "--quiet", cwd=tmp_path, env=env), needle)


def test_bad_sglang_version_and_matrix_range(tmp_path):
    from fuzz.fidelity.matrix import parse_releases
    from fuzz.targets.sglang import with_sglang_version
    from fuzz.targets.sglang.versions import VersionError

    with pytest.raises(TargetError, match="--sglang-version: sglang 0.4.0 predates"):
        with_sglang_version(sizing_file(tmp_path), "0.4.0")
    with pytest.raises(VersionError, match=re.escape("no modeled release in 0.6.0..0.7.0")):
        parse_releases("0.6.0..0.7.0")
    assert parse_releases("0.5.16..0.5.18,0.5.23") == ["0.5.16", "0.5.17", "0.5.18", "0.5.23"]
    assert parse_releases(None)[0] == "0.5.16" and len(parse_releases(None)) == 8
    from fuzz.targets import known_targets

    specs = {spec for spec, _ in known_targets()}
    assert {"sglang==X.Y.Z", "sglang[@X.Y.Z]", "PATH[@X.Y.Z]", "sglang==0.5.23"} <= specs


def test_real_sizing_keeps_the_surface_of_the_model(releases):
    cfg = ServingConfig.resolve(context_len=100, page_size=64, attn_dcp_size=8, speculative_algorithm="EAGLE")
    fixed = releases[FIXED].sizing
    assert isinstance(fixed, RealSizing) and fixed.alloc_page_size(cfg) == 512
    assert releases[BUGGY].sizing.alloc_page_size(cfg) == 64  # 0.5.18 sizes with page_size alone
    assert fixed.page_aligned_decode_alloc_lens([(90, 90), (10, 600)], 8, 512) == ([90, 600], [512, 600], 422)
