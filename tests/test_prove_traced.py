"""``prove`` on real code, each sizing function run once per path (``fuzz.prove.tracing``, ``traced_rows``).

The traced sweep must give the verdict the plain program gives (every
function called once per configuration): the same groups, counts, worst
values and witnesses, on every API generation's module shape.  Where
tracing cannot follow the code (an ``int()``, ``isinstance``), or the code
raises, those configurations are called one by one; a file that behaves
differently on traced values is caught by the per-block sample.
"""

from __future__ import annotations

import itertools
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from allocator_model.pools import KVPool
from fuzz.common.shards import Shard
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.space import Space
from fuzz.engines.sglang.prove.sweep import prove, prove_on
from fuzz.prove.tracing import Traced, Unsupported, bool_result, combine, explore, integer_result, leaf
from fuzz.targets.resolve import resolve_target

SHAPES = Path(__file__).parent / "sglang_shapes"

# Small, but every regime: page 1 and paged, DCP, topk 1 and > 1, adaptive sets, UNO's own draft counts.
MICRO = Space("micro", (1, 3, 64), (1, 8), (1, 5), (1, 4), (1, 8, 17), (8, 17), 1, (0, 3))
KINDS = (KVPool.STANDARD, KVPool.SWA, KVPool.UNIFIED_MAMBA)


# -- the tracer against plain ints ---------------------------------------------------------


def run_traced(fn, columns, accept=integer_result):
    """``fn`` over every row of ``columns`` (int tuples), traced: (values, ok, paths)."""
    cols = [torch.tensor(c) for c in zip(*columns, strict=True)]
    paths = explore(lambda run: fn(*(leaf(c, run) for c in cols)), torch.ones(len(columns), dtype=torch.bool))
    out = combine(paths, len(columns), accept)
    return out.values.tolist(), out.ok.tolist(), paths


def sizing_like(page, steps, topk, tokens):
    """0.5.23's L at the alloc page, in this project's words: flat below a page, whole pages per branch above."""
    if page == 1 or topk == 1:
        return max(steps * topk, tokens)
    return max(-(-(page - 1 + steps) // page) * page * topk, tokens)


def python_corners(a, b):
    """Floor division and modulo of negatives, min, and/or, a chained comparison, unary minus."""
    x = (a - 7) // (b + 1) + (-a) % (b + 2) - min(a, b)
    if a > 2 and b or not a:
        x += 1
    return x if 0 <= a < b else -x


GRID = list(itertools.product([1, 2, 3, 16, 64], [0, 1, 2, 5, 8], [1, 2, 4], [1, 4, 9]))


@pytest.mark.parametrize(
    "fn, columns",
    [
        (sizing_like, [(p, s, k, d) for p, s, k, d in GRID if s]),
        (python_corners, [(a, b) for a, b, _, _ in GRID]),
    ],
    ids=["sizing-like", "python-corners"],
)
def test_each_configuration_gets_what_a_plain_call_returns(fn, columns):
    values, ok, paths = run_traced(fn, columns)
    assert all(ok)
    assert values == [fn(*c) for c in columns]
    assert 1 < len(paths) < len(columns)  # it branched, and ran far fewer times than the grid has rows


def test_a_zero_divisor_raises_for_those_configurations_only():
    def per_dcp(page, dcp):
        return page // (dcp - 1)

    columns = [(p, d) for p in (2, 64) for d in (1, 2, 8)]
    values, ok, paths = run_traced(per_dcp, columns)
    assert ok == [d != 1 for _, d in columns]
    assert [v for v, good in zip(values, ok, strict=True) if good] == [p // (d - 1) for p, d in columns if d != 1]
    assert any(isinstance(p.error, ZeroDivisionError) for p in paths)


def test_an_assert_is_a_path_that_raises():
    def guard(alloc, width):
        assert alloc <= width
        return True

    columns = [(a, w) for a in (3, 9) for w in (4, 8)]
    _, ok, paths = run_traced(guard, columns, accept=bool_result)
    assert ok == [a <= w for a, w in columns]
    assert sum(isinstance(p.error, AssertionError) for p in paths) == 1


@pytest.mark.parametrize(
    "use",
    [int, float, hash, lambda x: range(x), lambda x: x / 2, lambda x: x.bit_length(), lambda x: [0][x]],
    ids=["int", "float", "hash", "range", "true-division", "attribute", "index"],
)
def test_what_tracing_cannot_follow_is_refused_never_guessed(use):
    _, ok, paths = run_traced(lambda x: use(x * 2), [(1,), (2,)])
    assert ok == [False, False]
    assert isinstance(paths[0].error, Unsupported)


@pytest.mark.parametrize(
    "other",
    [2.0, Fraction(2), Decimal(2)],
    ids=["float", "fraction", "decimal"],
)
def test_a_comparison_with_another_kind_of_number_is_refused_never_guessed(other):
    """2 == 2.0 is True for a Python int: identity would say False for every configuration."""
    _, ok, paths = run_traced(lambda x: 1 if x == other else 0, [(2,), (3,)])
    assert ok == [False, False] and isinstance(paths[0].error, Unsupported)
    _, ok, _ = run_traced(lambda x: 1 if x in (other, 5.0) else 0, [(2,), (3,)])
    assert ok == [False, False]


def test_none_and_text_are_never_equal_as_for_a_plain_int():
    values, ok, _ = run_traced(lambda x: (x == None) + 2 * (x != "2") + 4 * (x in (None, "a")), [(2,), (3,)])  # noqa: E711
    assert all(ok) and values == [2, 2]


def test_a_varying_flag_compares_with_ints_as_0_and_1():
    def by_flag(flag, x):
        return (10 if flag == 1 else 20) + (1 if flag != 0 else 0) + (100 if flag == x else 0)

    columns = [(True, 1), (False, 1), (True, 0), (False, 0)]
    cols = [torch.tensor([c[0] for c in columns]), torch.tensor([c[1] for c in columns])]
    paths = explore(lambda run: by_flag(*(leaf(c, run) for c in cols)), torch.ones(4, dtype=torch.bool))
    out = combine(paths, 4, integer_result)
    assert out.ok.tolist() == [True] * 4 and out.values.tolist() == [by_flag(*c) for c in columns]


def test_an_integer_that_could_wrap_in_int64_is_refused():
    """Python's ints do not wrap: x * 2**70 // 2**62 is exact; int64 would wrap silently."""
    _, ok, paths = run_traced(lambda x: x * 2**40 * 2**30 // 2**62, [(1024,), (3,)])
    assert ok == [False, False] and isinstance(paths[0].error, Unsupported)
    _, ok, _ = run_traced(lambda x: x**40 % 1000, [(3,), (5,)])
    assert ok == [False, False]
    values, ok, _ = run_traced(lambda x: x * 2**20, [(1024,), (3,)])  # well inside: traced
    assert all(ok) and values == [2**30, 3 * 2**20]


def test_an_error_message_may_name_a_traced_value():
    def guard(alloc, width):
        assert alloc <= width, f"allocation end {alloc} is past the row width {width}"
        return True

    _, ok, paths = run_traced(guard, [(3, 4), (9, 4)], accept=bool_result)
    assert ok == [True, False]
    assert "allocation end <traced int> is past" in str(next(p.error for p in paths if p.error))


def test_an_unsupported_use_cannot_be_swallowed_by_the_code():
    def swallowing(x):
        try:
            return int(x)
        except Exception:  # noqa: BLE001 - what a careless sizing file might do
            return 0

    _, ok, paths = run_traced(swallowing, [(1,), (2,)])
    assert ok == [False, False] and isinstance(paths[0].error, Unsupported)


def test_a_column_every_row_agrees_on_is_a_plain_value():
    def is_plain(page, dcp):
        return 1 if isinstance(page, int) and isinstance(dcp, Traced) else 0

    values, ok, _ = run_traced(is_plain, [(64, 1), (64, 8)])
    assert values == [1, 1] and all(ok)


# -- the traced sweep against the plain one -----------------------------------------------


def verdict(result):
    """Everything a report says of a sweep, but its time and its call counts."""
    return (
        result.launch_configurations,
        result.decode_shapes,
        result.configurations,
        {str(s): (g.configurations, g.worst, g.first_at, g.witness.to_json()) for s, g in result.groups.items()},
        dict(result.heat),
    )


def both(spec: str, kinds=KINDS):
    target = resolve_target(spec)
    traced = prove(target, request(target, MICRO, kinds=kinds))
    plain = prove(target, request(target, MICRO, kinds=kinds, traced=False))
    assert traced.trace is not None and plain.trace is None
    return traced, plain


@pytest.mark.parametrize(
    "shape",
    ["main.py", "alloc_page.py", "accessors.py", "uno.py", "server_args.py", "common_0_5_13.py"],
)
def test_the_traced_sweep_gives_the_plain_verdict_on_every_api_generation(shape):
    traced, plain = both(str(SHAPES / shape))
    assert verdict(traced) == verdict(plain)
    assert traced.trace.configs_traced == traced.launch_configurations  # none had to be called one by one
    assert not traced.trace.diverged
    assert sum(traced.sizing_calls.values()) < sum(plain.sizing_calls.values())


def test_the_traced_sweep_finds_the_page_1_gap_of_a_release_shape():
    traced, _ = both(str(SHAPES / "uno.py"), kinds=(KVPool.STANDARD,))
    assert "write-within-row/alloc-page-1" in {str(s) for s in traced.groups}


def planted(tmp_path: Path, name: str, old: str, new: str) -> str:
    text = (SHAPES / "alloc_page.py").read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return str(path)


HEADROOM_RETURN = "def get_req_to_token_extra_context_len"


def test_a_file_that_raises_for_some_configurations_is_called_one_by_one_there(tmp_path):
    spec = planted(
        tmp_path,
        "raises_at_dcp_8.py",
        "def get_alloc_page_size() -> int:\n",
        "def get_alloc_page_size() -> int:\n"
        "    if get_parallel().attn_dcp_size == 8:\n"
        "        raise ValueError('no DCP 8 here')\n",
    )
    traced, plain = both(spec, kinds=(KVPool.STANDARD,))
    assert verdict(traced) == verdict(plain)
    assert any(s.prop.value == "sizing-raised" for s in traced.groups)
    assert 0 < traced.trace.configs_called < traced.launch_configurations


def test_a_file_using_int_falls_back_to_plain_calls_with_the_same_verdict(tmp_path):
    spec = planted(
        tmp_path,
        "int_of_dcp.py",
        "return get_parallel().attn_dcp_size * get_schedule().page_size",
        "return int(get_parallel().attn_dcp_size) * get_schedule().page_size",
    )
    traced, plain = both(spec, kinds=(KVPool.STANDARD,))
    assert verdict(traced) == verdict(plain)
    assert traced.trace.configs_called > 0


def test_a_file_that_tells_traced_values_apart_is_caught_by_the_sample(tmp_path):
    """isinstance(x, int) is False for a traced value: the block's sample sees the difference."""
    spec = planted(
        tmp_path,
        "isinstance.py",
        "return get_parallel().attn_dcp_size * get_schedule().page_size",
        "dcp = get_parallel().attn_dcp_size\n"
        "    return (dcp if isinstance(dcp, int) else 1) * get_schedule().page_size",
    )
    traced, plain = both(spec, kinds=(KVPool.STANDARD,))
    assert verdict(traced) == verdict(plain)
    assert traced.trace.diverged


@pytest.mark.parametrize("shard", [Shard(1, 1), Shard(2, 3)])
def test_the_merged_blocks_of_the_workers_give_the_single_process_verdict(shard):
    """What ``prove --jobs 2`` merges: each worker's blocks (``blocks_part``), added up (``merge_results``).

    Each block is traced by one worker only (its paths counted once), within a ``--shard`` too.
    """
    from fuzz.engines.sglang.prove.result import merge_results

    target = resolve_target(str(SHAPES / "uno.py"))
    single = prove(target, request(target, MICRO, kinds=KINDS, shard=shard))
    parts = [prove(target, request(target, MICRO, kinds=KINDS, shard=shard, blocks_part=Shard(j, 2))) for j in (1, 2)]
    assert all(p.launch_configurations for p in parts)
    merged = merge_results(parts)
    assert summary_of(merged) == summary_of(single) and merged.heat == single.heat
    assert merged.trace.configs_traced == single.trace.configs_traced == single.launch_configurations
    assert merged.trace.paths == single.trace.paths and merged.trace.blocks == single.trace.blocks


@pytest.mark.slow
def test_two_worker_processes_give_the_single_process_verdict():
    """``prove --jobs 2`` end to end: two spawned workers, each dealt every other block, merged."""
    from fuzz.engines.sglang.prove.parallel import prove_in_parallel

    spec = str(SHAPES / "uno.py")
    single = prove_on(resolve_target(spec), MICRO, kinds=KINDS)
    both_workers = prove_in_parallel(spec, request(resolve_target(spec), MICRO, kinds=KINDS), 2)
    assert summary_of(both_workers) == summary_of(single) and both_workers.heat == single.heat


def summary_of(result):
    return (
        result.launch_configurations,
        result.decode_shapes,
        result.configurations,
        {str(s): (g.configurations, g.worst) for s, g in result.groups.items()},
    )


def test_a_growth_rule_with_more_paths_than_tracing_follows_is_read_plainly(tmp_path, monkeypatch):
    """A lens function that loops (one path per iteration count): the sweep falls back, it does not crash."""
    import fuzz.engines.sglang.prove.traced_rows as traced_rows

    real_explore = traced_rows.explore

    def at_most_one_path(fn, domain, max_paths=None):
        return real_explore(fn, domain, max_paths=0) if "alloc_end" in fn.__qualname__ else real_explore(fn, domain)

    monkeypatch.setattr(traced_rows, "explore", at_most_one_path)
    traced, plain = both(str(SHAPES / "alloc_page.py"), kinds=(KVPool.STANDARD,))
    assert verdict(traced) == verdict(plain)


def test_a_growth_rule_that_tells_traced_values_apart_is_caught_and_counted(tmp_path):
    """Traced growth that differs from the plain call (isinstance): the block's pairs are read plainly."""
    spec = planted(
        tmp_path,
        "lens_isinstance.py",
        "def page_aligned_decode_alloc_lens(",
        "def _is_plain(x):\n    return isinstance(x, int)\n\n\ndef page_aligned_decode_alloc_lens(",
    )
    text = Path(spec).read_text()
    old = "wanted = r.kv.kv_committed_len + reserve\n"
    assert old in text, "the shape's growth formula moved"
    Path(spec).write_text(
        text.replace(old, "wanted = r.kv.kv_committed_len + reserve + (0 if _is_plain(reserve) else 1)\n")
    )
    traced, plain = both(spec, kinds=(KVPool.STANDARD,))
    assert verdict(traced) == verdict(plain)
    assert any(d.endswith("growth rule") for d in traced.trace.diverged)


def test_the_parent_follows_every_block_the_workers_report(monkeypatch):
    """``prove --jobs 2``: each worker's finished blocks reach the parent's progress, every one, before it ends."""
    from fuzz.engines.sglang.prove.parallel import prove_in_parallel
    from fuzz.prove.progress import SweepProgress

    monkeypatch.setattr(SweepProgress, "due", lambda self: True)  # a line per block

    lines: list[str] = []
    target = resolve_target("reference")
    result = prove_in_parallel("reference", request(target, MICRO, algorithm="EAGLE"), 2, on_progress=lines.append)
    blocks = [line for line in lines if " prove: block " in line]
    assert blocks and result.launch_configurations > 0
    last = blocks[-1]
    total = int(last.split(" of ")[1].split(",")[0])
    assert f"block {total} of {total}" in last and f"{result.launch_configurations:,} launch configurations" in last
