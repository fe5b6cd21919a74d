"""The request-lifecycle state machine: the committed-length bound it reaches, the bugs each invariant
catches (a historical revision or a planted model bug) and its silence on the reference, case files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st

from allocator_model.batch import UNLIMITED_NEW_TOKENS, OwnershipAllocator, RunningBatch, StepError
from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.revisions import REFERENCE, get_revision
from allocator_model.scheduler import decode_alloc_bound
from fuzz.cli import main as cli_main
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.lifecycle.machine import lifecycle_campaign
from fuzz.engines.sglang.lifecycle.replay import _without, run_case
from fuzz.engines.sglang.lifecycle.script import LifecycleCase
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.targets import model_target
from fuzz.findings import casefile
from fuzz.findings.kinds import Property
from fuzz.targets.base import Target, TargetCallError, TargetKind
from fuzz.targets.resolve import resolve_target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cfg(**kw) -> ServingConfig:
    kw.setdefault("context_len", 40)
    return ServingConfig.resolve(**kw)


def ci(n: int):
    return settings(settings.get_profile("ci"), max_examples=n)


def first_bug(n: int):
    """ci without Hypothesis' shrinking: stop at the first failure; the campaign still shortens its script."""
    return settings(ci(n), phases=[Phase.explicit, Phase.generate])


# -- the bound: decode allocations reach exactly the scheduler's bound ------------------------------


def drive_to_the_end(c: ServingConfig, revision) -> RunningBatch:
    """One request of a 1-token prompt and unlimited output, decoded one token per batch until it finishes."""
    b = RunningBatch(c, ModelSizing(revision), revision)
    b.apply({"op": "admit", "input_len": 1, "max_new_tokens": UNLIMITED_NEW_TOKENS})
    b.apply({"op": "prefill", "rid": 0, "chunk": None})
    while b.requests[0].state != "finished":
        b.apply({"op": "decode", "accepted": [[r.rid, 1] for r in b.decode_members()]})
    return b


BOUND_CASES = [
    # (revision, overlap, extra config, the bound as a function of min(C, capacity)): prepare-for-decode reads
    # the honest, stale kv_committed_len (0.5.15+), so a request with nothing in flight sets the bound.
    ("reference", True, {}, lambda limit: limit - 4),
    ("reference", False, {}, lambda limit: limit - 4),
    # one request always behind its in-flight batch: the honest committed length stops one short of the bound
    ("reference", True, {"speculative_algorithm": "EAGLE", "page_size": 4}, lambda limit: limit - 5),
    ("reference", True, {"max_total_num_tokens": 30}, lambda limit: limit - 4),
    ("sglang-0.5.18", True, {}, lambda limit: limit - 3),  # non-spec decode allocates at seq_len (+ in flight)
    ("sglang-0.5.18", True, {"speculative_algorithm": "EAGLE"}, lambda limit: limit - 4),
    ("sglang-0.5.18", False, {}, lambda limit: limit - 4),
    ("sglang-0.5.14", True, {}, lambda limit: limit - 3),  # the in-flight bonus token pre-claimed
]


@pytest.mark.parametrize(
    "revision, overlap, extra, doc_bound",
    BOUND_CASES,
    ids=[f"{r}-overlap-{'on' if o else 'off'}-{'+'.join(sorted(e)) or 'plain'}" for r, o, e, _ in BOUND_CASES],
)
def test_longest_committed_len_at_a_decode_allocation_is_the_docs_bound(revision, overlap, extra, doc_bound):
    c = cfg(enable_overlap=overlap, **extra)
    rev = get_revision(revision)
    b = drive_to_the_end(c, rev)
    limit = min(c.context_len, c.max_total_num_tokens or c.context_len)
    assert b.max_committed_len_at_decode_alloc == doc_bound(limit)
    assert b.max_committed_len_at_decode_alloc <= decode_alloc_bound(c, rev) <= doc_bound(limit) + 1
    assert b.allocator.available_size() == b.allocator.size()  # and nothing leaked on the way


@pytest.mark.parametrize("revision, doc_bound", [("reference", 20), ("sglang-0.5.18", 20)])
def test_hypothesis_runs_reach_the_bound_and_never_pass_it(revision, doc_bound):
    """Random accept runs and near-limit prompts: the longest kv_committed_len at a decode allocation,
    over every run, is exactly C - 4 (the honest committed length: C - 3 only where 0.5.13-0.5.14 pre-claim), C = 24."""
    c = cfg(context_len=24, speculative_algorithm="EAGLE", enable_overlap=True, max_running_requests=2)
    result = lifecycle_campaign(model_target(get_revision(revision)), ci(40), steps=20, configs=st.just(c))
    assert result.status == "clean"
    assert decode_alloc_bound(c, get_revision(revision)) == doc_bound
    assert result.stats["max_committed_len_minus_bound"] == 0


# -- every invariant catches a planted bug, and none fires on the reference --------------------------


class SingleBufferSizing(ModelSizing):
    """Planted: R = L, no double buffer for overlap's lag, so a verify can commit past the allocation."""

    def alloc_reserve_per_decode(self, cfg, rt):
        return self.alloc_len_per_decode(cfg, rt)


class StuckFreshAllocator(OwnershipAllocator):
    """Planted: the fresh-page counter never advances past one allocation, so page 1 is handed out again."""

    def _take_pages(self, n, owner):
        pages = super()._take_pages(n, owner)
        if pages:
            self._next_fresh = 1
        return pages


class StuckFreshBatch(RunningBatch):
    allocator_class = StuckFreshAllocator


class UnalignedTailRelease(RunningBatch):
    """Planted: the over-allocated tail is freed from kv_committed_len itself, not rounded up to the page."""

    def overallocated_start(self, kv_committed_len):
        return kv_committed_len


class PageTailLeak(RunningBatch):
    """Planted: a release frees the committed columns only; the page tail decode over-allocated past them leaks."""

    def overallocated_start(self, kv_committed_len):
        return self.pool.width  # an empty tail slice


# 0.5.18 sizes for page 4 (W = C + 11) while the allocator pages at 32: any c in [25, 41] writes to column 64.
DCP = cfg(
    context_len=45,
    page_size=4,
    attn_dcp_size=8,
    speculative_algorithm="EAGLE",
    enable_overlap=False,
    max_running_requests=2,
)
# #33579 (open upstream): page 1 DSPARK gamma 16 reserves 34 columns, the row has 21 spare: whole slots spill.
DSPARK = cfg(context_len=48, speculative_algorithm="DSPARK", speculative_num_draft_tokens=17, max_running_requests=2)
PAGED = cfg(context_len=40, page_size=4, speculative_algorithm="EAGLE", enable_overlap=False, max_running_requests=2)
PLANTED = [
    # (invariant, target, configs (None: the whole lifecycle space), batch class, what the headline must say)
    (Property.NEIGHBOUR_ROWS_UNTOUCHED, "reference@sglang-0.5.18", st.just(DCP), RunningBatch, "and changed request "),
    (Property.WRITE_WITHIN_ROW, "reference@sglang-0.5.23", st.just(DSPARK), RunningBatch, "columns past its end"),
    (SGLangProperty.KV_LENS_ORDERED, "reference@sglang-0.5.18", st.just(DCP), RunningBatch, "> row width"),
    (
        SGLangProperty.DRAFTS_WITHIN_ALLOCATION,
        "reference@pre-26972",
        st.just(
            cfg(
                context_len=64,
                page_size=16,
                speculative_algorithm="EAGLE",
                speculative_num_steps=5,
                speculative_eagle_topk=4,
                speculative_num_draft_tokens=8,
            )
        ),
        RunningBatch,
        "drafts up to column",
    ),
    (SGLangProperty.ROW_HOLDS_OWN_SLOTS, "reference@sglang-0.5.18", st.just(DCP), RunningBatch, "holds slot"),
    (SGLangProperty.SLOT_SINGLE_OWNER, "reference", st.just(PAGED), StuckFreshBatch, "stands in 2 places"),
    (
        SGLangProperty.NO_STRANDED_PAGE_TAIL,
        "reference@pre-31616",
        st.just(PAGED),
        RunningBatch,
        "but kv_allocated_len is",
    ),
    (SGLangProperty.FREE_LIST_UNIQUE, "reference", st.just(PAGED), UnalignedTailRelease, "a second time"),
    (SGLangProperty.NO_LEAK, "reference@sglang-0.5.23", st.just(DSPARK), RunningBatch, "but still owns"),
    (SGLangProperty.NO_LEAK, "reference", st.just(PAGED), PageTailLeak, "but still owns"),  # a page-tail leak
]


def target_of(spec: str) -> Target:
    if spec == "single-buffer":
        return Target(
            spec, "reference sizing with R = L", SingleBufferSizing(REFERENCE), REFERENCE, TargetKind.MODEL, "sglang"
        )
    return resolve_target(spec)


def test_kv_lens_ordered_catches_a_verify_committing_past_the_allocation():
    """Without the double buffer, two accept runs in flight outgrow one reserve: kv_committed_len > kv_allocated_len.

    The fuzzer needs a few hundred runs for this pattern (decode, decode, then a batch that is not a
    decode processes the second verify), so the planted run is written out.
    """
    c = cfg(speculative_algorithm="EAGLE", enable_overlap=True)
    steps = [
        {"op": "admit", "input_len": 24, "max_new_tokens": UNLIMITED_NEW_TOKENS},
        {"op": "prefill", "rid": 0, "chunk": None},
        {"op": "admit", "input_len": 30, "max_new_tokens": UNLIMITED_NEW_TOKENS},
        {"op": "decode", "accepted": [[0, 3]]},
        {"op": "decode", "accepted": [[0, 4]]},
        {"op": "prefill", "rid": 1, "chunk": 3},
    ]
    found = run_case(
        target_of("single-buffer"), LifecycleCase(c, steps), checks=(SGLangProperty.KV_LENS_ORDERED,)
    ).violations
    assert [(i, v.prop) for i, v in found] == [(6, SGLangProperty.KV_LENS_ORDERED)]
    assert "kv_committed_len 31 > kv_allocated_len 28" in found[0][1].headline
    assert run_case(resolve_target("reference"), LifecycleCase(c, steps)).violations == []


@pytest.mark.parametrize(
    "invariant, spec, configs, batch_class, says", PLANTED, ids=[f"{p[0]}-{p[1]}-{p[3].__name__}" for p in PLANTED]
)
def test_each_invariant_catches_its_planted_bug(invariant, spec, configs, batch_class, says):
    result = lifecycle_campaign(
        target_of(spec),
        first_bug(200),
        steps=20,
        checks=(invariant,),
        configs=configs,
        batch_class=batch_class,
        max_rounds=1,
    )
    assert result.findings, f"{invariant} did not catch {spec} / {batch_class.__name__}"
    (f,) = result.findings
    assert f.violation.prop == invariant and says in f.violation.headline, f.violation.describe()
    assert len(f.case["steps"]) <= 15, f.case["steps"]  # shortened: runs here go up to 20 steps


QUIET = {
    "dcp": DCP,
    "dspark": DSPARK,
    "paged": PAGED,
    "eagle-overlap": cfg(speculative_algorithm="EAGLE"),
    "tree": cfg(
        context_len=64,
        page_size=16,
        speculative_algorithm="EAGLE",
        speculative_num_steps=5,
        speculative_eagle_topk=4,
        speculative_num_draft_tokens=8,
    ),
}


@pytest.mark.parametrize("name", sorted(QUIET))
def test_no_invariant_fires_on_the_reference_with_the_planted_configs(name):
    result = lifecycle_campaign(resolve_target("reference"), ci(60), steps=20, configs=st.just(QUIET[name]))
    assert result.status == "clean", [f.violation.describe() for f in result.findings]


@pytest.mark.slow
def test_no_invariant_fires_on_the_reference_anywhere():
    result = lifecycle_campaign(resolve_target("reference"), ci(150), steps=30)
    assert result.status == "clean", [f.violation.describe() for f in result.findings]
    assert result.examples >= 150 and result.stats["steps"] > 150 * 10


# -- the acceptance cases, over the whole lifecycle space ----------------------------------------------


def test_sglang_0_5_18_is_caught_corrupting_a_named_neighbour_request():
    # The neighbour check alone: with every invariant each round stops at its first new group, and the guard
    # spills', the page-1 gap's and the stranded tails' come first.
    target = resolve_target("reference@sglang-0.5.18")
    checks = (Property.NEIGHBOUR_ROWS_UNTOUCHED,)
    result = lifecycle_campaign(target, first_bug(300), steps=30, checks=checks, max_rounds=3)
    corrupt = [f for f in result.findings if f.violation.prop == Property.NEIGHBOUR_ROWS_UNTOUCHED]
    assert corrupt, [f.signature for f in result.findings]
    v = corrupt[0].violation
    assert "and changed request " in v.headline and v.details[0].startswith("victim: request "), v.describe()


def test_pre_31616_is_caught_as_a_stranded_page_tail_or_a_leak():
    result = lifecycle_campaign(resolve_target("reference@pre-31616"), first_bug(300), steps=30, max_rounds=1)
    assert result.findings and {f.violation.prop for f in result.findings} <= {
        SGLangProperty.NO_STRANDED_PAGE_TAIL,
        SGLangProperty.NO_LEAK,
    }


# -- case files: a failing run's step script replays deterministically ---------------------------------


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def neighbour_case(tmp_path_factory):
    """The 0.5.18 neighbour corruption as a saved case file (pinned config: one round, a second)."""
    target = resolve_target("reference@sglang-0.5.18")
    result = lifecycle_campaign(
        target,
        first_bug(200),
        steps=20,
        checks=(Property.NEIGHBOUR_ROWS_UNTOUCHED,),
        configs=st.just(DCP),
        max_rounds=1,
    )
    (f,) = result.findings
    return casefile.save(f, str(tmp_path_factory.mktemp("cases")))


def fuzz_cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run(
        [sys.executable, "-m", "fuzz", *args], capture_output=True, text=True, cwd=cwd or ROOT, env=env
    )


def test_case_file_replays_the_whole_story_byte_for_byte(neighbour_case):
    first, second = casefile.replay(neighbour_case), casefile.replay(neighbour_case)
    assert first.reproduced and first.text == second.text
    assert "FAILS neighbour-rows-untouched/dcp>1 at step" in first.text
    # The write and its victim, whichever request the search put there (the constants Hypothesis mixes into its
    # draws come from every project module, so what a derandomized round finds moves with the source).
    changed = re.search(
        r"wrote columns \[\d+, \d+\) of a row \d+ wide and changed request (\d+) \(row (\d+)\)", first.text
    )
    assert changed and f"victim: request {changed[1]} (row {changed[2]})" in first.text
    doc = json.loads(open(neighbour_case).read())
    assert doc["kind"] == "lifecycle" and doc["case"]["steps"][0]["op"] == "admit"


def test_repro_command_exit_codes(neighbour_case, tmp_path, capsys):
    # A fresh process: reading the case imports its replayer (fuzz.lifecycle) by itself, then the entry point.
    script = (
        "import sys; from fuzz.findings import casefile; assert casefile.replay(sys.argv[1]).reproduced; "
        "from fuzz.cli import main; sys.exit(main(['repro', sys.argv[1]]))"
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-c", script, neighbour_case], capture_output=True, text=True, env=env)
    assert r.returncode == 1 and "FAILS neighbour-rows-untouched" in r.stdout, r.stderr
    doc = json.loads(open(neighbour_case).read())
    fixed = tmp_path / "fixed.json"
    fixed.write_text(json.dumps({**doc, "target": "reference"}))
    assert cli_main(["repro", str(fixed)]) == 0
    assert "no longer fails on reference" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**doc, "case": {"steps": [{"op": "prefill", "rid": 7, "chunk": None}]}}))
    assert cli_main(["repro", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "step 1: prefill: no request 7" in err and len(err.strip().splitlines()) == 1


def test_leaked_slots_are_named_in_the_story():
    doc = {
        "target": "reference@sglang-0.5.23",
        "property": SGLangProperty.NO_LEAK,
        "config": DSPARK.to_dict(),
        "case": {
            "steps": [
                {"op": "admit", "input_len": 41, "max_new_tokens": UNLIMITED_NEW_TOKENS},  # the prompt limit, C - 7
                {"op": "prefill", "rid": 0, "chunk": None},
                {"op": "decode", "accepted": [[0, 2]]},
                {"op": "decode", "accepted": [[0, 2]]},
                {"op": "decode", "accepted": [[0, 2]]},
            ]
        },
    }
    replay = casefile.replayer(SGLangCase.LIFECYCLE)(doc, "inline")
    assert replay.reproduced, replay.text
    assert "still owns" in replay.text and "leaked slots [" in replay.text
    assert "also fails write-within-row/alloc-page-1 at step 3" in replay.text


def test_lifecycle_command_exit_codes(tmp_path, capsys):
    code = cli_main(
        [
            "lifecycle",
            "--target",
            "reference",
            "--profile",
            "ci",
            "--max-examples",
            "10",
            "--steps",
            "10",
            "--quiet",
            "--cases",
            str(tmp_path / "cases"),
            "--json",
            str(tmp_path / "report.json"),
        ]
    )
    assert code == 0, capsys.readouterr().out
    (t,) = json.loads((tmp_path / "report.json").read_text())["targets"]
    assert t["status"] == "clean" and t["kind"] == "lifecycle" and t["runs"] == 10 and t["steps"] > 0
    for args, needle in [
        (["--target", "reference@nope"], "unknown revision"),
        (["--target", "reference", "--steps", "0"], "positive integer"),
    ]:
        capsys.readouterr()
        assert cli_main(["lifecycle", *args]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1


# -- the model's step contract -----------------------------------------------------------------------


def test_steps_that_cannot_run_now_are_refused_by_name():
    b = RunningBatch(PAGED, ModelSizing(REFERENCE), REFERENCE)
    b.apply({"op": "admit", "input_len": 10, "max_new_tokens": 5})
    for step, needle in [
        ({"op": "decode", "accepted": []}, "no request to decode"),
        ({"op": "retract", "rid": 0}, "request 0 is waiting"),
        ({"op": "prefill", "rid": 0, "chunk": 0}, "chunk must be >= 1"),
        ({"op": "set_num_steps", "num_steps": 3}, "not an adaptive candidate"),
        ({"op": "evict"}, "unknown op"),
    ]:
        with pytest.raises(StepError, match=needle):
            b.apply(step)
    b.apply({"op": "prefill", "rid": 0, "chunk": None})
    with pytest.raises(StepError, match=r"accepts 9 tokens, outside \[1, 4\]"):
        b.apply({"op": "decode", "accepted": [[0, 9]]})


def test_a_prompt_past_the_admission_limit_is_aborted_and_holds_nothing():
    b = RunningBatch(PAGED, ModelSizing(REFERENCE), REFERENCE)
    b.apply({"op": "admit", "input_len": 39, "max_new_tokens": 5})
    assert b.requests[0].state == "finished" and not b.prefillable()


def test_removing_an_admission_takes_its_requests_steps_and_renumbers_the_rest():
    steps = [
        {"op": "admit", "input_len": 3, "max_new_tokens": 4},
        {"op": "admit", "input_len": 5, "max_new_tokens": 4},
        {"op": "prefill", "rid": 0, "chunk": None},
        {"op": "prefill", "rid": 1, "chunk": None},
        {"op": "decode", "accepted": [[0, 2], [1, 3]]},
        {"op": "retract", "rid": 1},
    ]
    assert _without(steps, 0) == [
        {"op": "admit", "input_len": 5, "max_new_tokens": 4},
        {"op": "prefill", "rid": 0, "chunk": None},
        {"op": "decode", "accepted": [[0, 3]]},
        {"op": "retract", "rid": 0},
    ]


def test_a_sizing_function_that_raises_is_a_finding():
    class Raising(ModelSizing):
        def alloc_reserve_per_decode(self, cfg, rt):
            raise TargetCallError("alloc_reserve_per_decode raised ZeroDivisionError")

    target = Target("raising", "sizing that raises", Raising(REFERENCE), REFERENCE, TargetKind.MODEL, "sglang")
    result = lifecycle_campaign(target, first_bug(20), steps=10, configs=st.just(PAGED), max_rounds=1)
    assert [f.violation.prop for f in result.findings] == ["sizing-raised"]
    assert run_case(target, LifecycleCase(PAGED, [])).violations[0][1].prop == "sizing-raised"


# -- kinds of KV pool: drawn as the strategies draw them, launch refusals honoured -------------------------


def drawn_kinds(name: str) -> set:
    """The kinds of KV pool 25 lifecycle configurations of release ``name`` use; each must be one it launches."""
    from hypothesis import given

    from strategies.lifecycle import lifecycle_configs

    revision, seen = get_revision(name), set()

    @settings(ci(25), phases=[Phase.generate])
    @given(lifecycle_configs(revision.algorithms, None, revision))
    def launchable(c):
        assert revision.refuses(c) is None and c.kv_pool in revision.pools, c.short()
        seen.add(c.kv_pool)

    launchable()
    return seen


def test_lifecycle_draws_the_kinds_a_release_builds_and_only_what_it_launches():
    from allocator_model.pools import KVPool

    newest = drawn_kinds("sglang-0.5.23")
    assert KVPool.STANDARD in newest and any(k.unified for k in newest), newest
    assert drawn_kinds("sglang-0.5.14") <= {KVPool.STANDARD, KVPool.SWA, KVPool.HISPARSE}  # and attn_dcp_size 1
    drawn_kinds("sglang-0.5.19")  # unified memory without DCP


UNIFIED_SPILL = (
    cfg(
        context_len=16,
        page_size=16,
        speculative_algorithm="EAGLE",
        kv_pool="unified-mamba",
        enable_overlap=False,
        max_running_requests=2,
    ),
    [
        {"op": "admit", "input_len": 9, "max_new_tokens": UNLIMITED_NEW_TOKENS},
        {"op": "prefill", "rid": 0, "chunk": None},
        {"op": "decode", "accepted": [[0, 1]]},
    ],
)


def test_the_unified_mamba_row_of_0_5_23_is_written_past_and_the_reference_is_not():
    """The lifecycle's own find (``lifecycle --pin kv_pool=unified-mamba`` on reference@sglang-0.5.23):
    W = C + 4 + D = 24, the EAGLE (3,1,4) decode at committed 9 allocates to ceil_16(9 + 8) = 32."""
    c, steps = UNIFIED_SPILL
    (i, v), *_ = run_case(model_target(get_revision("sglang-0.5.23")), LifecycleCase(c, steps)).violations
    assert i == 3 and v.prop is Property.WRITE_WITHIN_ROW and str(v.signature) == "write-within-row/paged@unified-mamba"
    assert "wrote columns [9, 32) of a row 24 wide: 8 columns past its end" in v.headline
    assert "extra_max_context_len 8 of _init_unified_mamba_pools = 24" in v.describe()
    assert run_case(model_target(REFERENCE), LifecycleCase(c, steps)).violations == []


def test_a_case_the_release_does_not_launch_is_refused_by_repro(tmp_path):
    c = cfg(context_len=64, page_size=4, attn_dcp_size=2)
    doc = {
        "kind": "lifecycle",
        "target": "reference@sglang-0.5.14",
        "config": c.to_dict(),
        "case": {"steps": []},
        "property": "write-within-row",
    }
    from fuzz.engines.sglang.lifecycle.replay import replay_lifecycle

    with pytest.raises(casefile.CaseFileError, match="no decode context parallelism"):
        replay_lifecycle(doc, "case.json")


def test_the_memory_clamp_rounds_with_the_release_s_page():
    """0.5.21+ clamp with the allocator's page (P * dcp), 0.5.13-0.5.20 with the server's page_size."""
    from allocator_model.revisions import MemoryClamp
    from allocator_model.scheduler import clamp_max_new_tokens

    c = cfg(context_len=4096, page_size=16, attn_dcp_size=4, max_total_num_tokens=1000)
    assert clamp_max_new_tokens(c, 10, 10_000, MemoryClamp.ALLOCATOR_PAGE) == 1000 - 64 - 64 - 1
    assert clamp_max_new_tokens(c, 10, 10_000, MemoryClamp.SERVER_PAGE) == 1000 - 16 - 16 - 1
    clamps = {n: get_revision(n).memory_clamp for n in ("sglang-0.5.13", "sglang-0.5.20", "sglang-0.5.21")}
    assert clamps == {
        "sglang-0.5.13": MemoryClamp.SERVER_PAGE,
        "sglang-0.5.20": MemoryClamp.SERVER_PAGE,
        "sglang-0.5.21": MemoryClamp.ALLOCATOR_PAGE,
    }
    assert REFERENCE.memory_clamp is MemoryClamp.ALLOCATOR_PAGE
    # The looser server-page clamp lets a request run longer: the bound follows the revision.
    assert decode_alloc_bound(c, get_revision("sglang-0.5.20")) > decode_alloc_bound(c, get_revision("sglang-0.5.21"))
    b = RunningBatch(c, ModelSizing(get_revision("sglang-0.5.20")), get_revision("sglang-0.5.20"))
    b.apply({"op": "admit", "input_len": 10, "max_new_tokens": UNLIMITED_NEW_TOKENS})
    assert b.requests[0].max_new_tokens == 1000 - 16 - 16 - 1


# -- the release's own allocator: only the pages it runs, and no round lost to Hypothesis' discards ---------------


def test_a_lifecycle_draws_only_the_pages_its_allocator_takes():
    """SGLang's allocator kernel takes power-of-2 pages (``allocator_adapter.takes_page``): a lifecycle on it draws
    page and DCP size among those (``alloc_pages``), none to discard; without it, other pages are drawn too."""
    from hypothesis import given

    from allocator_model.allocator import allocator_page_size
    from fuzz.engines.sglang.real.allocator_adapter import takes_page
    from strategies.lifecycle import lifecycle_configs

    revision = get_revision("sglang-0.5.23")
    pages: dict[bool, set[int]] = {True: set(), False: set()}

    def collect(own: bool) -> None:
        @settings(ci(200), phases=[Phase.generate])
        @given(lifecycle_configs(revision.algorithms, None, revision, takes_page if own else None))
        def drawn(c):
            pages[own].add(allocator_page_size(c))

        drawn()

    collect(True)
    collect(False)
    assert pages[True] and all(takes_page(p) for p in pages[True]), pages[True]
    assert any(not takes_page(p) for p in pages[False]), pages[False]
    assert [p for p in range(1, 70) if takes_page(p)] == [1, 2, 4, 8, 16, 32, 64]
