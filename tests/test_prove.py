"""The bounded proof: closed forms against the step-by-step model and brute force, groups, calls, CLI, heatmap."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import torch
from hermetic import unbroken

from allocator_model import algorithms as algo
from allocator_model import closed_form as cf
from allocator_model.allocator import allocator_page_size
from allocator_model.config import ConfigError, ServingConfig, SpecRuntime
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool
from allocator_model.regimes import REGIMES, regime, regime_codes
from allocator_model.revisions import REFERENCE, REVISIONS, Headroom
from allocator_model.scenario import DecodeScenario, run_scenario
from fuzz.cli import main
from fuzz.engines.sglang.backends import DSA_INDEX, GRAPH_TABLES
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.prove.grid import launch_grid, target_algorithms
from fuzz.engines.sglang.prove.heatmap import MATPLOTLIB_MISSING, markdown_table, write_heatmap
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.result import NO_VIOLATION, ProveResult
from fuzz.engines.sglang.prove.space import SPACES, Space
from fuzz.engines.sglang.prove.sweep import prove, prove_on
from fuzz.engines.sglang.prove.witness import confirm
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.report import Status
from fuzz.findings.repro import repro_command
from fuzz.targets.base import Target, TargetCallError, TargetKind
from fuzz.targets.resolve import resolve_target

TINY = SPACES["tiny"]
# Brute force enumerates every residue: smaller allocator pages, every regime still reached.
BRUTE = dataclasses.replace(TINY, name="brute", page_sizes=(1, 2, 3, 16), dcp_sizes=(1, 2, 3, 4))
REVS = sorted(REVISIONS)


def blocks(spec: str, space: Space = TINY) -> list[tuple[Target, cf.LaunchGrid, cf.DecodeRows]]:
    """(target, grid, model rows) of every (algorithm, page size) block of the space: never none, never empty.

    A loop over no block proves nothing, so an empty space (or a block without rows) fails here.
    """
    t = resolve_target(spec)
    out = []
    for a in target_algorithms(t):
        for p in space.page_sizes:
            g = launch_grid(space, a, p)
            if len(g):
                rows = cf.model_decode_rows(g, t.revision)
                assert len(rows) >= len(g), (spec, a, p)
                out.append((t, g, rows))
    assert out, (spec, "no block")
    assert {g.algorithm for _, g, _ in out} == set(target_algorithms(t)), (spec, "an algorithm has no valid block")
    return out


def segments(rows: cf.DecodeRows, per_row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(row index, position within the row's segment) for per_row[i] positions of each row i."""
    idx = torch.repeat_interleave(torch.arange(len(rows)), per_row.long())
    start = torch.cumsum(per_row.long(), 0) - per_row.long()
    return idx, torch.arange(len(idx)) - start[idx]


def segment_max_count(idx: torch.Tensor, values: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    worst = torch.full((n,), torch.iinfo(torch.int64).min).scatter_reduce(0, idx, values.long(), "amax")
    count = torch.zeros(n, dtype=torch.int64).scatter_add(0, idx, (values > 0).long())
    return worst, count


# -- the closed forms against brute force --------------------------------------------------


@pytest.mark.parametrize("spec", [f"reference@{r}" if r != "reference" else r for r in REVS])
def test_worst_write_equals_every_residue_enumerated(spec: str) -> None:
    """Max and count over every residue of C mod P at c = C - gap, enumerated, equal the closed form."""
    for t, g, rows in blocks(spec, BRUTE):
        for overlap in (False, True):
            gap = cf.committed_gap(t.revision, overlap)
            worst, spilling = cf.worst_write_overshoot(rows, gap)
            idx, residue = segments(rows, rows.alloc_page)
            sub = rows.select(idx)
            context = 8 * sub.alloc_page + residue
            got = cf.write_overshoot_at(sub, context, context - gap)
            brute_worst, brute_count = segment_max_count(idx, got, len(rows))
            assert torch.equal(brute_worst, worst.long()), (spec, g.algorithm)
            assert torch.equal(brute_count, spilling.long()), (spec, g.algorithm)


def test_worst_write_is_at_the_longest_committed_length() -> None:
    """Shorter committed lengths (two pages below the bound, every residue) never write further."""
    rng = torch.Generator().manual_seed(5)
    for t, _g, rows in blocks("reference@sglang-0.5.18", BRUTE):
        assert len(rows) > 0
        sample = rows.select(torch.randperm(len(rows), generator=rng)[:20])
        gap = cf.committed_gap(t.revision, True)
        worst, _ = cf.worst_write_overshoot(sample, gap)
        span = sample.alloc_page * (2 * sample.alloc_page)  # every residue x every c in the last two pages
        idx, k = segments(sample, span)
        sub = sample.select(idx)
        context = 8 * sub.alloc_page + k % sub.alloc_page
        committed = context - gap - k // sub.alloc_page
        brute, _ = segment_max_count(idx, cf.write_overshoot_at(sub, context, committed), len(sample))
        assert torch.equal(brute, worst.long())


@pytest.mark.parametrize("spec", ["reference", "reference@sglang-0.5.18", "reference@pre-26972", "reference@pre-31616"])
def test_worst_draft_equals_every_offset_and_lag_enumerated(spec: str) -> None:
    """The candidate closed form equals brute force over every c mod P and every device lag."""
    spec_blocks = [(t, g, rows) for t, g, rows in blocks(spec, BRUTE) if g.algorithm is not None]
    assert spec_blocks  # blocks() has checked every algorithm has one
    for _t, g, rows in spec_blocks:
        topk = g.topk[rows.config]
        for lag in (torch.zeros_like(rows.alloc_page), g.max_draft_tokens[rows.config]):
            worst, committed = cf.worst_draft_overshoot(rows, g.algorithm, topk, lag)
            # The c returned reaches the worst.
            assert torch.equal(cf.draft_overshoot_at(rows, g.algorithm, topk, committed, lag), worst)
            idx, k = segments(rows, rows.alloc_page * (lag + 1))
            sub = rows.select(idx)
            ell = k // sub.alloc_page
            c = 4 * sub.alloc_page + 1024 + k % sub.alloc_page
            got = cf.draft_overshoot_at(sub, g.algorithm, topk[idx], c, ell)
            brute = torch.full((len(rows),), torch.iinfo(torch.int64).min).scatter_reduce(0, idx, got.long(), "amax")
            assert torch.equal(brute, worst.long()), (spec, g.algorithm)


# -- the closed forms against the step-by-step model ---------------------------------------


def sample_rows(
    spec: str,
    n: int,
    seed: int,
    space: Space = TINY,
) -> Iterator[tuple[random.Random, Target, cf.LaunchGrid, cf.DecodeRows, int]]:
    """n random (target, grid, rows, row index) across the space's blocks."""
    rng = random.Random(seed)
    pool = list(blocks(spec, space))
    for _ in range(n):
        t, g, rows = rng.choice(pool)
        yield rng, t, g, rows, rng.randrange(len(rows))


class SpelledOut(ModelSizing):
    """A revision's sizing written out again in plain integers, apart from ``allocator_model.sizing``.

    The closed form (``cf.model_decode_rows``) and ``ModelSizing`` share the
    formulas of ``allocator_model.sizing``: run through ``ModelSizing``, the
    step-by-step model would agree with the closed form even if a formula
    were wrong.  This sizing answers from the revision's toggles alone
    (``allocator_model.revisions``: what each one means, in its comments),
    so the comparison checks the arithmetic, not only the twins.  What is not
    sizing arithmetic (the row width C + extra, the row guard) is inherited.
    """

    def alloc_page_size(self, cfg: ServingConfig) -> int:
        return cfg.page_size * (cfg.attn_dcp_size if self.revision.alloc_page_with_dcp else 1)

    def _alloc_len(self, cfg: ServingConfig, steps: int, dmax: int) -> int:
        a, k, page = cfg.speculative_algorithm, cfg.topk, self.alloc_page_size(cfg)
        if a == algo.UNO:
            return dmax + 1  # Q draft slots and a clean root
        s = max(steps, 1)
        if self.revision.tree_alloc_len and a != algo.NGRAM and page > 1 and k > 1:
            pages_per_branch = (page - 1 + s + page - 1) // page
            return max(pages_per_branch * page * k, dmax)
        return max(s * k, dmax)

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        if not cfg.spec_on:
            return 1
        return self._alloc_len(cfg, rt.num_steps if rt else 0, cfg.max_speculative_num_draft_tokens or 0)

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return 2 * self.alloc_len_per_decode(cfg, rt)

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        rev, page = self.revision, self.alloc_page_size(cfg)
        if not cfg.spec_on:
            return 4
        if rev.headroom_from_launch_shape:
            launch = cfg.launch_runtime.num_steps if cfg.launch_runtime else 0
            dmax = cfg.speculative_num_draft_tokens or 0
            reserve = 2 * self._alloc_len(cfg, launch, dmax)
        else:
            dmax = cfg.max_speculative_num_draft_tokens or 0
            shapes = cfg.runtimes() if rev.headroom is Headroom.ALWAYS else [cfg.launch_runtime]
            reserve = max(self.alloc_reserve_per_decode(cfg, rt) for rt in shapes)
        covered = {
            Headroom.ALWAYS: True,
            Headroom.PAGED: page > 1 or cfg.speculative_algorithm == algo.UNO,
            Headroom.NONE: False,
        }[rev.headroom]
        return max(4 + dmax, reserve + page - 1) if covered else 4 + dmax

    def page_aligned_decode_alloc_lens(
        self, lens: Sequence[tuple[int, int]], reserve: int, page: int
    ) -> tuple[list[int], list[int], int]:
        cur = [a for _, a in lens]
        want = [c + reserve for c, _ in lens]
        if self.revision.page_aligned_growth:
            want = [(w + page - 1) // page * page for w in want]
        nxt = [max(a, w) for a, w in zip(cur, want, strict=True)]
        return cur, nxt, sum(nxt) - sum(cur)


@pytest.mark.parametrize(
    "spec",
    [
        "reference",
        "reference@sglang-0.5.18",
        "reference@sglang-0.5.23",
        "reference@pre-26972",
        "reference@pre-31616",
        "reference@pre-35265",
        "reference@adaptive-launch-headroom",
    ],
)
def test_closed_form_equals_the_step_by_step_model(spec: str) -> None:
    """On a random sample: the write end, the draft footprint and the growth of run_scenario, number for number.

    The step-by-step model runs with ``SpelledOut``, not with the sizing formulas the closed form is built on.
    """
    sampled = 0
    for rng, t, g, rows, r in sample_rows(spec, 60, seed=zlib.crc32(spec.encode())):
        sampled += 1
        one = rows.select(torch.tensor([r]))
        i = int(one.config[0])
        page = int(one.alloc_page[0])
        overlap = rng.random() < 0.5
        gap = cf.committed_gap(t.revision, overlap)
        context = rng.randint(3, 9) * page + rng.randrange(page) + 8
        bound = context - gap
        committed = bound if rng.random() < 0.5 else rng.randint(max(1, bound - 2 * page), bound)
        cfg = ServingConfig.resolve(context_len=context, enable_overlap=overlap, **g.config_kwargs(i))
        lag_max = (cfg.max_speculative_num_draft_tokens or 0) if (overlap and cfg.spec_on) else 0
        lag = rng.randint(0, lag_max)
        steps = int(one.num_steps[0]) if cfg.speculative_adaptive else None
        run = run_scenario(DecodeScenario(cfg, committed, steps, None, lag), SpelledOut(t.revision), t.revision)
        assert run.skipped is None, run.skipped
        obs = run.writes[-1]
        assert run.extra == int(one.extra[0]) and run.alloc_page == page
        assert obs.write.reserve == int(one.reserve[0])
        c = torch.tensor([committed], dtype=cf.INT)
        assert obs.write.nxt - run.width == int(cf.write_overshoot_at(one, torch.tensor([context]), c)[0])
        if cfg.spec_on and not obs.write.refused:
            drafted = cf.draft_overshoot_at(one, g.algorithm, g.topk[one.config], c, torch.tensor([lag]))
            assert obs.draft_end - obs.req.kv_allocated_len == int(drafted[0])
            unaligned = obs.write.nxt % page != 0 and obs.write.nxt != obs.write.cur
            assert unaligned <= bool(cf.unaligned_growth(one, g.algorithm)[0])
    assert sampled == 60


def test_witnesses_replay_on_the_step_by_step_model() -> None:
    """Every group's worst configuration, replayed by run_scenario, is in that group with that value."""
    for spec in ("reference@sglang-0.5.18", "reference@pre-26972", "reference@pre-31616", "reference@sglang-0.5.23"):
        t = resolve_target(spec)
        result = prove(t, request(t, TINY))
        confirm(t, result)
        assert result.groups
        for sig, grp in result.groups.items():
            assert grp.confirmed and not grp.mismatch, (spec, sig, grp.mismatch)
            # The witness is an ordinary decode finding of its group, carrying the model's account.
            assert grp.signature == sig and grp.witness.signature == sig and grp.witness.kind is SGLangCase.DECODE
            assert grp.witness.target == spec and grp.witness.case["committed_len"] > 0
            if sig.prop is not SGLangProperty.PAGE_ALIGNED_GROWTH:
                assert grp.witness.violation.overshoot == grp.worst


# -- the space -------------------------------------------------------------------------


def test_valid_mask_is_server_args_validation() -> None:
    """Masked in <=> ServingConfig accepts it, on grids built before masking (valid and invalid)."""
    rng = random.Random(3)
    algorithms = target_algorithms(resolve_target("reference"))
    assert algorithms == [None, *algo.ALL]  # speculation off and every algorithm: none left unchecked
    sides: set[bool] = set()
    for a in algorithms:
        g = launch_grid(TINY, a, 16, valid_only=False)
        ok = cf.valid_mask(g)
        assert bool(ok.any()), a
        for i in rng.sample(range(len(g)), min(150, len(g))):
            try:
                ServingConfig(context_len=4096, **g.config_kwargs(i))
                accepted = True
            except ConfigError:
                accepted = False
            assert accepted == bool(ok[i]), (a, g.config_kwargs(i))
            sides.add(accepted)
    assert sides == {True, False}  # valid and invalid configurations both checked


def test_regime_codes_is_the_twin_of_regime() -> None:
    """The tensor twin equals ``regime`` on every configuration of the tiny space (each allocator page it has)."""
    checked = set()
    for a in target_algorithms(resolve_target("reference")):
        for p in TINY.page_sizes:
            g = launch_grid(TINY, a, p)
            cfgs = [ServingConfig.resolve(context_len=4096, **g.config_kwargs(i)) for i in range(len(g))]
            pages = torch.tensor([allocator_page_size(c) for c in cfgs], dtype=cf.INT)
            codes = regime_codes(g, torch.arange(len(g)), pages).tolist()
            for i, (cfg, code) in enumerate(zip(cfgs, codes, strict=True)):
                assert REGIMES[code] is regime(cfg, int(pages[i])), (a, g.config_kwargs(i))
                checked.add(REGIMES[code])
    assert checked == set(REGIMES)


def test_full_space_is_the_issue_space() -> None:
    full = SPACES["full"]
    assert {1, 2, 4, 8, 16, 32, 64, 128, 256} <= set(full.page_sizes) and max(full.page_sizes) == 256
    assert full.dcp_sizes == tuple(range(1, 17)) and full.steps == tuple(range(1, 17))
    assert full.topks == tuple(range(1, 17)) and full.draft_tokens == tuple(range(1, 65))
    assert max(full.uno_draft_tokens) == 128


# -- the sweep ----------------------------------------------------------------------------

KNOWN_GROUPS = {  # on the standard pool (tests/test_pools.py covers the other kinds)
    "reference": set(),
    "reference@sglang-0.5.18": {
        "write-within-row/dcp>1",
        "write-within-row/dcp>1[guard:eagle_utils.eagle_prepare_for_decode]",
        "write-within-row/alloc-page-1",
        "write-within-row/alloc-page-1[guard:eagle_utils.eagle_prepare_for_decode]",
        "drafts-within-allocation/dcp>1[stale-read]",
        "page-aligned-growth/dcp>1",
        "page-aligned-growth/dflash",
    },
    "reference@sglang-0.5.19": {"write-within-row/alloc-page-1"},
    "reference@sglang-0.5.23": {"write-within-row/alloc-page-1"},
    "reference@pre-35265": {"page-aligned-growth/dflash", "page-aligned-growth/dcp>1"},
}


@pytest.mark.parametrize("spec", sorted(KNOWN_GROUPS))
def test_each_revision_reports_its_known_groups(spec: str) -> None:
    groups = prove_on(resolve_target(spec), TINY, kinds=[KVPool.STANDARD]).groups
    assert all(isinstance(s, Signature) and groups[s].signature == s for s in groups)
    assert {str(s) for s in groups} == KNOWN_GROUPS[spec]


def test_planted_tree_and_growth_bugs_are_found() -> None:
    tree = prove_on(resolve_target("reference@pre-26972"), TINY).groups
    assert {
        Signature.parse("drafts-within-allocation/tree[stale-read]"),
        Signature.parse("write-within-row/tree"),
    } <= set(tree)
    growth = prove_on(resolve_target("reference@pre-31616"), TINY).groups
    assert growth and all(s.prop is SGLangProperty.PAGE_ALIGNED_GROWTH for s in growth)


def test_seed_bug_number_from_the_reference_doc() -> None:
    """p=64, dcp=8, EAGLE 3,1,4 on 0.5.18: width C + 71, write end up to C + 515 (overshoot 444 at gap 4)."""
    t = resolve_target("reference@sglang-0.5.18")
    cfg = ServingConfig.resolve(context_len=4093, page_size=64, attn_dcp_size=8, speculative_algorithm="EAGLE")
    assert ModelSizing(t.revision).req_to_token_extra_context_len(cfg) == 71
    seed = cf.LaunchGrid("EAGLE", *(torch.tensor([v], dtype=cf.INT) for v in (64, 8, 3, 1, 4, 0)))
    worst, spilling = cf.worst_write_overshoot(cf.model_decode_rows(seed, t.revision), gap=4)
    assert int(worst[0]) + 71 == 515 and int(spilling[0]) == 444


@pytest.mark.parametrize("kind", list(KVPool), ids=[k.value for k in KVPool])
@pytest.mark.slow
def test_reference_full_space_has_no_violation(kind: KVPool) -> None:
    """The proof itself: over the issue's space on every kind of KV pool (one test per kind), nothing spills."""
    result = prove_on(resolve_target("reference"), "full", kinds=[kind])
    assert result.configurations > 1_000_000 and result.launch_configurations > 10_000
    if kind is KVPool.STANDARD:
        assert result.launch_configurations > 10_000_000
    assert not result.groups
    assert min(result.heat.values()) >= 0


# -- targets called per configuration ---------------------------------------------------------


def summary(r: ProveResult) -> dict[Signature, tuple[int, int | None]]:
    return {s: (g.configurations, g.worst) for s, g in r.groups.items()}


@pytest.mark.parametrize("spec", ["reference@sglang-0.5.18", "reference@pre-31616"])
def test_calls_path_equals_the_vectorized_model(spec: str) -> None:
    t = resolve_target(spec)
    fast, called = prove(t, request(t, TINY)), prove(t, request(t, TINY, calls=True))
    assert summary(called) == summary(fast)
    assert called.heat == fast.heat and called.configurations == fast.configurations
    # One call per distinct sizing point: the headroom once per launch configuration.
    assert called.sizing_calls["req_to_token_extra_context_len"] == called.launch_configurations
    assert called.sizing_calls["page_aligned_decode_alloc_lens"] < called.launch_configurations
    assert not fast.sizing_calls


def test_a_release_wheel_proves_like_its_model_revision() -> None:
    """The real 0.5.18 sizing module, called once per configuration: the model revision's groups, count for count."""
    real = prove_on(resolve_target("sglang==0.5.18"), TINY, traced=False)
    model = prove_on(resolve_target("reference@sglang-0.5.18"), TINY)
    assert real.method.startswith("sizing calls") and not model.sizing_calls
    assert summary(real) == summary(model) and Signature.parse("write-within-row/dcp>1") in summary(real)
    assert real.sizing_calls["req_to_token_extra_context_len"] == real.launch_configurations


class _Odd(ModelSizing):
    """The reference, except that it raises for DSPARK and grows by c + R + 1 for one reserve."""

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        if cfg.speculative_algorithm == "DSPARK":
            raise TargetCallError("boom")
        return super().req_to_token_extra_context_len(cfg)

    def page_aligned_decode_alloc_lens(
        self, lens: Sequence[tuple[int, int]], reserve: int, page: int
    ) -> tuple[list[int], list[int], int]:
        cur, nxt, need = super().page_aligned_decode_alloc_lens(lens, reserve, page)
        if reserve == 8:
            nxt = [n + 1 for n in nxt]
        return cur, nxt, need


def test_a_raising_or_unrecognised_target_is_not_called_clean() -> None:
    t = Target("odd", "a test target", _Odd(REFERENCE), REFERENCE, TargetKind.FILE, "sglang")
    result = prove(t, request(t, TINY))
    assert result.method.startswith("sizing calls")
    raised = result.groups[Signature(Property.SIZING_RAISED, "alloc-page-1")]
    assert "boom" in raised.witness.violation.headline and raised.witness.config.speculative_algorithm == "DSPARK"
    assert Signature(Property.UNPROVEN, "growth-rule") in result.groups
    assert all(s.prop in (Property.SIZING_RAISED, Property.UNPROVEN) for s in result.groups)
    assert result.status is Status.COUNTEREXAMPLE


# -- command line and heatmap ---------------------------------------------------------------


def test_cli_clean_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    assert main(["prove", "--target", "reference", "--space", "tiny", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert NO_VIOLATION in out and "configurations" in out
    doc = json.loads(report.read_text())
    assert doc["command"] == "prove"
    (t,) = doc["targets"]
    assert t["status"] == Status.CLEAN.value and t["configurations"] > 0 and t["findings"] == []
    assert {"target", "seconds", "space", "method", "launch_configurations", "violations"} <= set(t)


def test_cli_seed_bug_groups_heatmap_and_replayable_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png, report, cases = tmp_path / "heat.png", tmp_path / "r.json", tmp_path / "cases"
    rc = main(
        [
            "prove",
            "--target",
            "reference@sglang-0.5.18",
            "--space",
            "tiny",
            "--algorithm",
            "EAGLE",
            "--heatmap",
            str(png),
            "--cases",
            str(cases),
            "--json",
            str(report),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 1 and NO_VIOLATION not in out
    assert "write-within-row/dcp>1" in out and "worst overshoot:" in out and "victim: row" in out
    assert "WITNESS write-within-row/dcp>1 on reference@sglang-0.5.18" in out
    table = (tmp_path / "heat.md").read_text()
    assert "| attn_dcp_size \\ page_size |" in table and "**-" in table
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Witness case files are named apart from run's, one per group.
    names = sorted(os.listdir(cases))
    assert names and all(n.startswith("reference-sglang-0.5.18--witness--") for n in names)
    # The report has the shared shape: each finding is Finding.to_json plus prove's counts.
    (t,) = json.loads(report.read_text())["targets"]
    assert t["status"] == Status.COUNTEREXAMPLE.value and len(t["findings"]) == len(names)
    for f in t["findings"]:
        assert {"kind", "class", "signature", "config", "case", "message", "found_at", "repro"} <= set(f)
        assert f["repro"].startswith(f"{repro_command()} ")
        if f["kind"] == "table-case":  # the tables' witnesses: their closed forms', not the sizing sweep's
            assert f["case"]["table"] in {*GRAPH_TABLES, DSA_INDEX}
            continue
        assert {"configurations", "worst", "first_at", "mismatch"} <= set(f) and f["mismatch"] is None
        assert f["kind"] == SGLangCase.DECODE.value
    pytest.importorskip("jsonschema")
    schemas = pytest.importorskip("fuzz.findings.schemas")
    schemas.validate("report", json.loads(report.read_text()))
    case = next(
        line.split()[-1]
        for line in unbroken(out).splitlines()
        if "repro:" in line and "write-within-row-dcp" in line and "table-case" not in line  # the seed bug's
    )
    assert "--witness--" in case and main(["repro", case]) == 1
    assert "FAILS write-within-row/dcp>1" in capsys.readouterr().out


def test_cli_heatmap_without_matplotlib_is_one_line_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    cases = tmp_path / "cases"
    rc = main(
        [
            "prove",
            "--target",
            "reference@sglang-0.5.18",
            "--space",
            "tiny",
            "--heatmap",
            str(tmp_path / "h.png"),
            "--cases",
            str(cases),
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == "" and not cases.exists()
    assert captured.err.strip().splitlines() == [f"kvrow-fuzz: error: {MATPLOTLIB_MISSING}"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--algorithm", "FOO"], "has no speculative algorithm FOO"),
        (["--target", "reference@sglang-0.5.18", "--algorithm", "UNO"], "has no speculative algorithm UNO"),
        (["--heatmap", "out.txt"], "needs a .png"),
        (["--space", "huge"], "invalid choice"),
        (["--target", "nope"], "unknown target"),
        (["--device", "tpu"], "--device takes cpu or cuda[:N], got 'tpu'"),
    ]
    + ([] if torch.cuda.is_available() else [(["--device", "cuda"], "sees no CUDA device here")]),
)
def test_cli_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["prove"] + (args if "--target" in args else ["--target", "reference"] + args)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_heatmap_writes_a_png_and_its_markdown_twin(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    heat = {(1, 1): -500, (2, 1): 4, (1, 2): 0}
    path = tmp_path / "sub" / "heat.png"
    md = write_heatmap(str(path), [("test", heat)], axes=([1, 2], [1, 2]))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert md == str(tmp_path / "sub" / "heat.md")
    table = (tmp_path / "sub" / "heat.md").read_text()
    assert table == markdown_table(heat, "test", axes=([1, 2], [1, 2]))
    assert "| 1 | **-500** | 4 |" in table and "| 2 | 0 | n/a |" in table


def test_heatmap_has_one_panel_per_pool_with_a_violation_each_named() -> None:
    """0.5.23's model: its unified Mamba rows are short everywhere, its standard pool only at page 1; the panels
    name their pool, and a pool filter keeps its own panel alone."""
    from allocator_model.pools import KVPool
    from fuzz.engines.sglang.prove.heatmap import pool_panels

    result = prove_on(resolve_target("reference@sglang-0.5.23"), TINY, algorithm="EAGLE")
    panels = pool_panels(result.pool_heat, "EAGLE")
    titles = [t for t, _ in panels]
    assert "EAGLE, kv_pool unified-mamba" in titles and "EAGLE, kv_pool standard" in titles
    for title, heat in panels:
        assert any(v < 0 for v in heat.values()), title
    assert [t for t, _ in pool_panels(result.pool_heat, "EAGLE", KVPool.SWA)] == ["EAGLE, kv_pool swa"]
    for kind, heat in result.pool_heat.items():  # the overall heat is the least over the pools
        assert all(result.heat[cell] <= v for cell, v in heat.items()), kind
    clean = prove_on(resolve_target("reference"), TINY, algorithm="EAGLE")
    assert [t for t, _ in pool_panels(clean.pool_heat, "clean")] == ["clean, kv_pool standard"]


def test_heatmap_table_has_the_sweeps_numbers() -> None:
    """The table's cells are the result's heat, every swept (page_size, attn_dcp_size) laid out."""
    result: ProveResult = prove_on(resolve_target("reference"), TINY, algorithm="EAGLE")
    table = markdown_table(result.heat, "clean", axes=(TINY.page_sizes, TINY.dcp_sizes))
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| attn")]
    assert len(rows) == len(TINY.dcp_sizes) and "**" not in table
    for line, d in zip(rows, TINY.dcp_sizes, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")][1:]
        assert cells == [str(result.heat[p, d]) if (p, d) in result.heat else "n/a" for p in TINY.page_sizes]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch sees no CUDA device")
@pytest.mark.parametrize("spec", ["reference@sglang-0.5.18", "reference@sglang-0.5.23"])
def test_the_sweep_on_a_gpu_gives_the_cpu_verdict(spec: str) -> None:
    t = resolve_target(spec)
    on_cpu, on_gpu = prove(t, request(t, TINY)), prove(t, request(t, TINY, device="cuda"))
    assert summary(on_gpu) == summary(on_cpu) and on_gpu.heat == on_cpu.heat
    assert on_gpu.configurations == on_cpu.configurations


@pytest.mark.parametrize("spec", ["reference@sglang-0.5.23", "sglang==0.5.23"])
def test_the_sweep_under_a_device_context_gives_the_plain_verdict(spec: str) -> None:
    """``--device cuda`` runs the sweep inside ``torch.device(...)``, a mode that intercepts every torch call.

    Without a GPU the same mode with the CPU still runs every intercepted
    call (model and traced real sizing alike): none may change the verdict.
    What only a GPU can show (the test above) stays skipped here.
    """
    t = resolve_target(spec)
    plain = prove(t, request(t, TINY, algorithm="EAGLE"))
    with torch.device("cpu"):
        moded = prove(t, request(t, TINY, algorithm="EAGLE"))
    assert summary(moded) == summary(plain) and moded.heat == plain.heat
    assert moded.configurations == plain.configurations > 0


def test_groups_that_differ_only_in_outcome_keep_a_witness_and_a_case_file_each(tmp_path: Path) -> None:
    """A silent spill and the same spill stopped by EAGLE's guard are two groups: two witnesses, two case files."""
    result = prove_on(resolve_target("reference@sglang-0.5.18"), TINY, kinds=[KVPool.STANDARD])
    by_name: dict[tuple[Property, str], set[str]] = {}
    for sig, grp in result.groups.items():
        assert grp.witness.violation.signature == sig
        by_name.setdefault((sig.prop, sig.group), set()).add(str(sig.outcome))
    assert any(len(outcomes) > 1 for outcomes in by_name.values()), by_name
    cases = tmp_path / "cases"
    argv = ["prove", "--target", "reference@sglang-0.5.18", "--space", "tiny", "--quiet", "--cases", str(cases)]
    assert main(argv) == 1
    from fuzz.engines import engine_of
    from fuzz.prove.proof import ProveOptions
    from fuzz.prove.tables import prove_tables

    target = resolve_target("reference@sglang-0.5.18")
    tables = prove_tables(target, engine_of(target).prover(target, ProveOptions(space="tiny")))
    witnesses = sum(len(p.witnesses) for p in tables)  # FA3's page table's groups: a witness each too
    assert len(list(cases.glob("*.json"))) == len(prove_on(target, TINY).groups) + witnesses


def test_highest_bit_is_the_bit_length_less_one_of_every_mask() -> None:
    """Every candidate-step mask (below 2**17) and a few wide ones: frexp's exponent, exactly as ``int.bit_length``."""
    from allocator_model.launch_grid import highest_bit

    masks = torch.arange(0, 1 << 17, dtype=torch.int32)
    assert highest_bit(masks).tolist() == [m.bit_length() - 1 for m in range(1 << 17)]
    wide = torch.tensor([(1 << 52) + 12345, (1 << 40) - 1, 1, 0], dtype=torch.int64)
    assert highest_bit(wide).tolist() == [52, 39, 0, -1]
    with pytest.raises(ValueError, match="2\\*\\*53"):
        highest_bit(torch.tensor([1 << 53], dtype=torch.int64))


def test_unique_rows_is_unique_by_rows_in_the_same_order():
    """The table sweep's keys: ``unique_rows`` gives ``unique(dim=0)``'s rows and inverse, negative columns too."""
    from fuzz.engines.sglang.prove.grid import unique_rows

    gen = torch.Generator().manual_seed(7)
    for rows in (
        torch.randint(-40, 40, (5000, 6), generator=gen),
        torch.randint(0, 3, (300, 4), generator=gen),
        torch.zeros((0, 6), dtype=torch.long),
    ):
        got, expected = unique_rows(rows), rows.unique(dim=0, return_inverse=True)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
