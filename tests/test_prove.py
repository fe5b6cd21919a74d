"""The bounded proof: closed forms against the step-by-step model and brute force, groups, calls, CLI, heatmap."""

from __future__ import annotations

import dataclasses
import json
import random
import struct
import zlib

import pytest
import torch

from allocator_model import closed_form as cf
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.revisions import REFERENCE, REVISIONS
from allocator_model.scenario import DecodeScenario, run_scenario
from allocator_model.sizing import ModelSizing
from fuzz.prove import sweep as pv
from fuzz.cli import main
from fuzz.prove.heatmap import markdown_table, render
from fuzz.run.properties import regime
from fuzz.targets import Target, TargetCallError, resolve_target

TINY = pv.SPACES["tiny"]
# Brute force enumerates every residue: smaller allocator pages, every regime still reached.
BRUTE = dataclasses.replace(TINY, name="brute", page_sizes=(1, 2, 3, 16), dcp_sizes=(1, 2, 3, 4))
REVS = sorted(REVISIONS)


def blocks(spec: str, space=TINY):
    """(target, grid, model rows) of every (algorithm, page size) block of the space."""
    t = resolve_target(spec)
    for a in pv.target_algorithms(t):
        for p in space.page_sizes:
            g = pv.launch_grid(space, a, p)
            if len(g):
                yield t, g, cf.model_decode_rows(g, t.revision)


def segments(rows: cf.DecodeRows, per_row: torch.Tensor):
    """(row index, position within the row's segment) for per_row[i] positions of each row i."""
    idx = torch.repeat_interleave(torch.arange(len(rows)), per_row.long())
    start = torch.cumsum(per_row.long(), 0) - per_row.long()
    return idx, torch.arange(len(idx)) - start[idx]


def segment_max_count(idx, values, n):
    worst = torch.full((n,), torch.iinfo(torch.int64).min).scatter_reduce(0, idx, values.long(), "amax")
    count = torch.zeros(n, dtype=torch.int64).scatter_add(0, idx, (values > 0).long())
    return worst, count


# -- the closed forms against brute force --------------------------------------------------


@pytest.mark.parametrize("spec", [f"reference@{r}" if r != "reference" else r for r in REVS])
def test_worst_write_equals_every_residue_enumerated(spec):
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


def test_worst_write_is_at_the_longest_committed_length():
    """Shorter committed lengths (two pages below the bound, every residue) never write further."""
    rng = torch.Generator().manual_seed(5)
    for t, g, rows in blocks("reference@sglang-0.5.18", BRUTE):
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
def test_worst_draft_equals_every_offset_and_lag_enumerated(spec):
    """The candidate closed form equals brute force over every c mod P and every device lag."""
    for t, g, rows in blocks(spec, BRUTE):
        if g.algorithm is None:
            continue
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


def sample_rows(spec: str, n: int, seed: int, space=TINY):
    """n random (target, grid, rows, row index) across the space's blocks."""
    rng = random.Random(seed)
    pool = list(blocks(spec, space))
    for _ in range(n):
        t, g, rows = rng.choice(pool)
        yield rng, t, g, rows, rng.randrange(len(rows))


@pytest.mark.parametrize("spec", ["reference", "reference@sglang-0.5.18", "reference@sglang-0.5.23",
                                  "reference@pre-26972", "reference@pre-31616", "reference@pre-35265"])
def test_closed_form_equals_the_step_by_step_model(spec):
    """On a random sample: the write end, the draft footprint and the growth of run_scenario, number for number."""
    for rng, t, g, rows, r in sample_rows(spec, 60, seed=zlib.crc32(spec.encode())):
        one = rows.select(torch.tensor([r]))
        i = int(one.config[0])
        page = int(one.alloc_page[0])
        overlap = rng.random() < 0.5
        gap = cf.committed_gap(t.revision, overlap)
        context = rng.randint(3, 9) * page + rng.randrange(page) + 8
        bound = context - gap
        committed = bound if rng.random() < 0.5 else rng.randint(max(1, bound - 2 * page), bound)
        cfg = ServingConfig.resolve(context_len=context, enable_overlap=overlap, **g.config_kwargs(i))
        lag_max = cfg.max_speculative_num_draft_tokens if (overlap and cfg.spec_on) else 0
        lag = rng.randint(0, lag_max)
        steps = int(one.num_steps[0]) if cfg.speculative_adaptive else None
        run = run_scenario(DecodeScenario(cfg, committed, steps, None, lag), t.sizing, t.revision)
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


def test_witnesses_replay_on_the_step_by_step_model():
    """Every group's worst configuration, replayed by run_scenario, is in that group with that value."""
    for spec in ("reference@sglang-0.5.18", "reference@pre-26972", "reference@pre-31616", "reference@sglang-0.5.23"):
        t = resolve_target(spec)
        result = pv.prove(t, TINY)
        pv.confirm(t, result)
        assert result.groups
        for grp in result.groups.values():
            assert grp.confirmed and not grp.mismatch, (spec, grp.signature, grp.mismatch)


# -- the space -------------------------------------------------------------------------


def test_valid_mask_is_server_args_validation():
    """Masked in <=> ServingConfig accepts it, on grids built before masking (valid and invalid)."""
    rng = random.Random(3)
    for a in pv.target_algorithms(resolve_target("reference")):
        g = pv.launch_grid(TINY, a, 16, valid_only=False)
        ok = cf.valid_mask(g)
        assert bool(ok.any())
        for i in rng.sample(range(len(g)), min(150, len(g))):
            try:
                ServingConfig(context_len=4096, **g.config_kwargs(i))
                accepted = True
            except ConfigError:
                accepted = False
            assert accepted == bool(ok[i]), (a, g.config_kwargs(i))


def test_regime_codes_are_the_properties_regime():
    for rng, t, g, rows, r in sample_rows("reference", 200, seed=11):
        i = int(rows.config[r])
        cfg = ServingConfig.resolve(context_len=4096, **g.config_kwargs(i))
        code = pv.regime_codes(g, rows.config[r:r + 1], rows.alloc_page[r:r + 1])
        assert pv.REGIMES[int(code[0])] == regime(cfg, int(rows.alloc_page[r]))


def test_full_space_is_the_issue_space():
    full = pv.SPACES["full"]
    assert {1, 2, 4, 8, 16, 32, 64, 128, 256} <= set(full.page_sizes) and max(full.page_sizes) == 256
    assert full.dcp_sizes == tuple(range(1, 17)) and full.steps == tuple(range(1, 17))
    assert full.topks == tuple(range(1, 17)) and full.draft_tokens == tuple(range(1, 65))
    assert max(full.uno_draft_tokens) == 128


# -- the sweep ----------------------------------------------------------------------------

KNOWN_GROUPS = {
    "reference": set(),
    "reference@sglang-0.5.18": {"write-within-row/dcp>1", "write-within-row/alloc-page-1",
                                "drafts-within-allocation/dcp>1", "page-aligned-growth/dcp>1",
                                "page-aligned-growth/dflash"},
    "reference@sglang-0.5.19": {"write-within-row/alloc-page-1"},
    "reference@sglang-0.5.23": {"write-within-row/alloc-page-1"},
    "reference@pre-35265": {"page-aligned-growth/dflash", "page-aligned-growth/dcp>1"},
}


@pytest.mark.parametrize("spec", sorted(KNOWN_GROUPS))
def test_each_revision_reports_its_known_groups(spec):
    assert set(pv.prove(resolve_target(spec), TINY).groups) == KNOWN_GROUPS[spec]


def test_planted_tree_and_growth_bugs_are_found():
    tree = pv.prove(resolve_target("reference@pre-26972"), TINY).groups
    assert {"drafts-within-allocation/tree", "write-within-row/tree"} <= set(tree)
    growth = pv.prove(resolve_target("reference@pre-31616"), TINY).groups
    assert growth and all(s.startswith("page-aligned-growth/") for s in growth)


def test_seed_bug_number_from_the_reference_doc():
    """p=64, dcp=8, EAGLE 3,1,4 on 0.5.18: width C + 71, write end up to C + 515 (overshoot 444 at gap 4)."""
    t = resolve_target("reference@sglang-0.5.18")
    cfg = ServingConfig.resolve(context_len=4093, page_size=64, attn_dcp_size=8, speculative_algorithm="EAGLE")
    assert ModelSizing(t.revision).req_to_token_extra_context_len(cfg) == 71
    seed = cf.LaunchGrid("EAGLE", *(torch.tensor([v], dtype=cf.INT) for v in (64, 8, 3, 1, 4, 0)))
    worst, spilling = cf.worst_write_overshoot(cf.model_decode_rows(seed, t.revision), gap=4)
    assert int(worst[0]) + 71 == 515 and int(spilling[0]) == 444


def test_reference_full_space_has_no_violation():
    """The proof itself: over 10 million configurations of the issue's space, nothing spills."""
    result = pv.prove(resolve_target("reference"), "full")
    assert result.configurations > 10_000_000 and result.launch_configurations > 10_000_000
    assert not result.groups
    assert min(result.heat.values()) >= 0


# -- targets called per configuration ---------------------------------------------------------


@pytest.mark.parametrize("spec", ["reference@sglang-0.5.18", "reference@pre-31616"])
def test_calls_path_equals_the_vectorized_model(spec):
    t = resolve_target(spec)
    fast, called = pv.prove(t, TINY), pv.prove(t, TINY, calls=True)
    summary = lambda r: {s: (g.configurations, g.worst) for s, g in r.groups.items()}
    assert summary(called) == summary(fast)
    assert called.heat == fast.heat and called.configurations == fast.configurations
    # One call per distinct sizing point: the headroom once per launch configuration.
    assert called.sizing_calls["req_to_token_extra_context_len"] == called.launch_configurations
    assert called.sizing_calls["page_aligned_decode_alloc_lens"] < called.launch_configurations
    assert not fast.sizing_calls


def test_a_release_wheel_proves_like_its_model_revision():
    """The real 0.5.18 sizing module, called once per configuration: the model revision's groups, count for count."""
    real = pv.prove(resolve_target("sglang==0.5.18"), TINY)
    model = pv.prove(resolve_target("reference@sglang-0.5.18"), TINY)
    assert real.method.startswith("sizing calls") and not model.sizing_calls
    summary = lambda r: {s: (g.configurations, g.worst) for s, g in r.groups.items()}
    assert summary(real) == summary(model) and "write-within-row/dcp>1" in summary(real)
    assert real.sizing_calls["req_to_token_extra_context_len"] == real.launch_configurations


class _Odd(ModelSizing):
    """The reference, except that it raises for DSPARK and grows by c + R + 1 for one reserve."""

    def req_to_token_extra_context_len(self, cfg):
        if cfg.speculative_algorithm == "DSPARK":
            raise TargetCallError("boom")
        return super().req_to_token_extra_context_len(cfg)

    def page_aligned_decode_alloc_lens(self, lens, reserve, page):
        cur, nxt, need = super().page_aligned_decode_alloc_lens(lens, reserve, page)
        if reserve == 8:
            nxt = [n + 1 for n in nxt]
        return cur, nxt, need


def test_a_raising_or_unrecognised_target_is_not_called_clean():
    t = Target("odd", "a test target", _Odd(REFERENCE), REFERENCE, "file")
    result = pv.prove(t, TINY)
    assert result.method.startswith("sizing calls")
    assert "sizing-raised/alloc-page-1" in result.groups
    assert "unproven/growth-rule" in result.groups
    assert all(s.split("/")[0] in ("sizing-raised", "unproven") for s in result.groups)


# -- command line and heatmap ---------------------------------------------------------------


def test_cli_clean_target(tmp_path, capsys):
    report = tmp_path / "r.json"
    assert main(["prove", "--target", "reference", "--space", "tiny", "--json", str(report)]) == 0
    out = capsys.readouterr().out
    assert pv.NO_VIOLATION in out and "configurations" in out
    (t,) = json.loads(report.read_text())["targets"]
    assert t["status"] == "clean" and t["configurations"] > 0 and t["groups"] == []


def test_cli_seed_bug_groups_heatmap_and_replayable_case(tmp_path, capsys):
    png = tmp_path / "heat.png"
    rc = main(["prove", "--target", "reference@sglang-0.5.18", "--space", "tiny", "--algorithm", "EAGLE",
               "--heatmap", str(png), "--cases", str(tmp_path / "cases")])
    out = capsys.readouterr().out
    assert rc == 1 and pv.NO_VIOLATION not in out
    assert "write-within-row/dcp>1" in out and "worst overshoot:" in out and "victim: row" in out
    table = (tmp_path / "heat.md").read_text()
    assert "| attn_dcp_size \\ page_size |" in table and "**-" in table
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    case = next(line.split()[-1] for line in out.splitlines() if "repro:" in line and "write-within-row-dcp" in line)
    assert main(["repro", case]) == 1
    assert "FAILS write-within-row/dcp>1" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--algorithm", "FOO"], "has no speculative algorithm FOO"),
    (["--target", "reference@sglang-0.5.18", "--algorithm", "UNO"], "has no speculative algorithm UNO"),
    (["--heatmap", "out.txt"], "needs a .png"),
    (["--space", "huge"], "invalid choice"),
    (["--target", "nope"], "unknown target"),
])
def test_cli_bad_input_is_one_line_and_exit_2(args, message, capsys):
    argv = ["prove"] + (args if "--target" in args else ["--target", "reference"] + args)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def _png_pixels(data: bytes):
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            size = struct.unpack(">II", body[:8])
        idat += body if kind == b"IDAT" else b""
        pos += 12 + n
    w, h = size
    raw = zlib.decompress(idat)
    assert len(raw) == h * (1 + 3 * w)
    return {tuple(raw[y * (1 + 3 * w) + 1 + 3 * x:y * (1 + 3 * w) + 4 + 3 * x]) for y in range(h) for x in range(w)}


def test_heatmap_png_is_valid_and_colours_violations_red():
    heat = {(1, 1): -500, (2, 1): 4, (1, 2): 0}
    colours = _png_pixels(render(heat, "test").png())
    assert any(r > 150 and g < 60 and b < 60 for r, g, b in colours)  # a violation cell
    assert any(b > 120 and r < 40 for r, g, b in colours)  # a cell with slack
    table = markdown_table(heat, "test", axes=([1, 2], [1, 2]))
    assert "| 1 | **-500** | 4 |" in table and "| 2 | 0 | n/a |" in table
