"""triton's draft-decode kv_indices built by SGLang's own code (``runtime.attention.graph_builds``), held to the model.

Per release, the builds SGLang's own multi-step draft backend makes in one CUDA-graph replay (one per draft step s in
0..S-1: the buffer's row width as SGLang allocated it for a bucket of one request, the prefix of row s the replay
changed, how far past the row's end step s stored, the length step s's reader is told) equal the model's twin
(``allocator_model.page_tables.graph_builds`` under the release's revision, ``Revision.graph_sizing``: a row of
``topk * C`` token slots, step s storing ``seq + s + 1`` masked by that length alone, row S - 1 read by no step), at
small contexts (48 to 256 tokens, pages 1 and 16, S = 3 and 5): well inside the context, at C - S, at C - 1 and past
the limit, where the last steps spill past their rows.  Only the last step's spill is observed (the interpreter runs
step 0 first, so a step's spill is overwritten by the next step's own row): the others' is derived from the end
SGLang's kernel published in ``kv_indptr``, which the builder holds equal to the stores on every replay
(``attention_draft``'s docstring).

Every release 0.5.13-0.5.23 runs (none refuses).  Hermetic: the real wheels of ``./kvrow test``'s pinned releases
(``hermetic``), the others the network tier's; a missing wheel or triton skips, saying which.  One backend build and
capture per release and configuration (about 0.4 s), then milliseconds a replay.

The wheel's facts (TB: ``srt/layers/attention/triton_backend.py``; SU: ``srt/speculative/spec_utils.py``; K: the
kernel ``generate_draft_decode_kv_indices``'s file, ``srt/speculative/triton_ops/cache_locs.py`` to 0.5.15,
``kernels/ops/speculative/cache_locs.py`` after), as ``release: class TritonMultiStepDraftBackend, its S - 1 step
backends; max_context_len; grid, kv_indices_stride, a step's slice; graph width; replay; SU width; K def, offset,
draft slots' store, kv_indptr store``:

* 0.5.13: TB 1406, 1432; 162; 1468, 1477, 1491; 1517; 1562; SU 77; K 124, 158, 191, 201
* 0.5.14: TB 1416, 1442; 187; 1478, 1487, 1501; 1527; 1572; SU 107; K 97, 131, 164, 174
* 0.5.15: TB 1778, 1804; 198; 1840, 1849, 1863; 1889; 1934; SU 109; K 98, 132, 165, 175
* 0.5.16: TB 1813, 1839; 202; 1875, 1884, 1898; 1924; 1969; SU 179; K 56, 90, 123, 133
* 0.5.17: TB 1867, 1893; 212; 1930, 1939, 1953; 1979; 2024; SU 181; K 56, 90, 123, 133
* 0.5.18: TB 1938, 1964; 242; 2001, 2010, 2024; 2050; 2095; SU 190; K 56, 90, 123, 133
* 0.5.19: TB 2027, 2053; 265; 2090, 2099, 2113; 2139; 2184; SU 192; K 56, 90, 123, 133
* 0.5.20: TB 2331, 2357; 295; 2394, 2403, 2417; 2443; 2488; SU 191; K 56, 122, 171, 184
* 0.5.21: TB 2373, 2399; 302; 2439, 2448, 2464; 2490; 2535; SU 217; K 66, 123, 184, 198
* 0.5.22: TB 2406, 2432; 308; 2478, 2487, 2506; 2532; 2577; SU 232; K 116, 179, 251, 265
* 0.5.23: TB 2504, 2530; 313; 2596, 2605, 2626; 2763; 2818; SU 298; K 161, 224, 296, 310

that is: the width is ``draft_kv_indices_buffer_width(max_bs, topk, max_context_len) = max_bs * topk * C``,
``max_context_len = model_config.context_len``; program (s, b, t) of the grid ``(S, num_seqs, topk)`` stores at row
s, offset ``cum_seq_len * topk + b * (s + 1) * topk + t * (seq_len + s + 1)``, the request's ``seq_len`` slots then
its ``s + 1`` draft slots, masked by those lengths alone (no width check), and ``kv_indptr[s][b * topk + t]``
(``[num_seqs * topk]`` for the first) as the positions' sum plus ``(s + 1)`` per branch; only ``S - 1`` step
backends exist (TB's ``range(S - 1)``), each handed row s, so row S - 1 is written and read by none.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from graph_twin import twin  # noqa: E402
from hermetic import PINNED_RELEASES  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402

from allocator_model import page_tables as pt  # noqa: E402
from allocator_model.config import ServingConfig, SpecRuntime  # noqa: E402
from allocator_model.page_tables import Mode  # noqa: E402
from allocator_model.revisions import RELEASE_REVISIONS, get_revision  # noqa: E402

TRITON = pt.AttentionBackend.TRITON
RELEASES = tuple(f"0.5.{n}" for n in range(13, 24))
EVERY_RELEASE = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]


def eagle(context_len: int, page: int, steps: int, topk: int = 1) -> tuple[ServingConfig, SpecRuntime]:
    """EAGLE (S, topk, D) = (steps, topk, steps + 1)."""
    cfg = ServingConfig.resolve(
        context_len=context_len,
        page_size=page,
        speculative_algorithm="EAGLE",
        speculative_num_steps=steps,
        speculative_eagle_topk=topk,
        speculative_num_draft_tokens=steps + 1,
    )
    assert cfg.launch_runtime is not None
    return cfg, cfg.launch_runtime


# (what, C, page, S, req_to_token row width): device lengths well inside, at C - S, at C - 1, just past the limit and
# past two rows (the last steps spill; the draft slots read past the row); a row narrower than the request (its
# reads land in the next request's row: foreign slots in the table).
CASES = [
    ("page-1-S3", 48, 1, 3, 56),
    ("page-16-S5", 64, 16, 5, 72),
    ("page-1-S5-C256", 256, 1, 5, 264),
    ("narrow-rows", 48, 16, 3, 24),
]


def lengths(context: int, steps: int) -> tuple[int, ...]:
    return 10, context - steps, context - 1, context + 2, 2 * context + 5


@pytest.mark.parametrize("version", EVERY_RELEASE)
@pytest.mark.parametrize(("what", "context", "page", "steps", "row_width"), CASES, ids=[c[0] for c in CASES])
def test_sglang_builders_equal_the_model(
    version: str, what: str, context: int, page: int, steps: int, row_width: int
) -> None:
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(context, page, steps)
    for seq in lengths(context, steps):
        builds = graph_builds(r, TRITON, cfg, rt, seq, row_width)
        drafts = [(m, s) for m, s in pt.steps(cfg, rt, TRITON) if m is Mode.DRAFT_DECODE]
        assert [(b.mode, b.step) for b in builds] == drafts == [(Mode.DRAFT_DECODE, s) for s in range(steps)]
        assert builds == twin(TRITON, version, cfg, rt, seq, row_width), (what, seq)
        assert all(b.buffer == "cuda_graph_kv_indices" and b.width == context for b in builds)
        assert all(b.page_size == 1 and b.stopped_by is None for b in builds)
        assert [b.published for b in builds] == [seq + s + 1 for s in range(steps - 1)] + [0]
        stored = [seq + s + 1 for s in range(steps)]
        assert [(b.written, b.spilled) for b in builds] == [(min(n, context), max(0, n - context)) for n in stored]
        if what == "narrow-rows" and seq > row_width:  # read past its own row: the next request's slots
            assert builds[0].foreign == min(seq + 1, context) - row_width
        if what != "narrow-rows":  # the written prefix is the request's own row
            assert not any(b.foreign for b in builds)


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_the_last_steps_spill_is_observed_and_the_others_derived(version: str) -> None:
    """Past the limit every step spills; the guard rows below the buffer hold the last step's spill (observed), the
    other steps' spills were overwritten by the next step's row (derived from ``kv_indptr``, held equal to the
    stores)."""
    from fuzz.engines.sglang.real.runtime.attention import SENTINEL, graph_builds

    r = runtime(version)
    cfg, rt = eagle(48, 1, 3)
    graph_builds(r, TRITON, cfg, rt, 50, 56)
    (bucket,) = [b for b in r.attention[TRITON].buckets.values() if b.cfg == cfg and b.width == 56]
    bucket.draft.measured.clear()  # replayed now (the rows show the last replay)
    builds = graph_builds(r, TRITON, cfg, rt, 50, 56)
    assert [b.spilled for b in builds] == [3, 4, 5]
    rows = bucket.draft.rows  # the buffer's 3 rows, then the guard rows
    assert rows.shape[1] == 48 and rows.shape[0] > 4
    assert int((rows[3:] != SENTINEL).sum()) == 5  # the last step's spill, in the first guard row
    assert bool((rows[:3] != SENTINEL).all())  # every row written whole: the earlier spills overwritten
    assert bool((rows[-1] == SENTINEL).all())  # the spare guard row untouched
    slots = rows[2, :48].tolist() + rows[3, :5].tolist()
    assert slots == list(range(56, 56 + 53))  # row 1's slots (span 56): seq's, then the step's 3 draft slots


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_builds_run_interpreted_and_a_replay_repeats(version: str) -> None:
    """Every triton kernel of the backend's modules interpreted; a fresh replay after others is the same; topk > 1,
    no speculation and one draft step build nothing of this table."""
    from triton.runtime.interpreter import InterpretedFunction

    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(48, 16, 3)
    first = graph_builds(r, TRITON, cfg, rt, 46, 56)
    assert graph_builds(r, TRITON, cfg, rt, 10, 56) == twin(TRITON, version, cfg, rt, 10, 56)
    builders = r.attention[TRITON]
    for bucket in builders.buckets.values():
        bucket.draft.measured.clear()  # measured again, after the other length's replay
    assert graph_builds(r, TRITON, cfg, rt, 46, 56) == first
    assert builders.loader.compiled_kernels() == []
    (module,) = [
        m for d, m in builders.loader.modules.items() if d.endswith("cache_locs") and d in builders.loader.executed
    ]
    assert isinstance(module.generate_draft_decode_kv_indices, InterpretedFunction)
    tree, _ = eagle(48, 16, 3, topk=2)
    assert graph_builds(r, TRITON, tree, tree.launch_runtime, 46, 56) == []
    plain = ServingConfig.resolve(context_len=48, page_size=16)
    assert graph_builds(r, TRITON, plain, None, 46, 56) == []
    one, one_rt = eagle(48, 16, 1)
    assert graph_builds(r, TRITON, one, one_rt, 46, 56) == []


def test_the_model_revisions_carry_the_measured_builder() -> None:
    """Each release's revision: the draft decode alone, a width from the context length, stores masked by the
    length alone (no width bound), no assert."""
    for version in RELEASES:
        sizing = get_revision(RELEASE_REVISIONS[version]).graph_sizing(TRITON)
        assert sizing.width is pt.TableWidth.CONTEXT, version
        assert sizing.block_tokens == pt.LENGTH_GRID, version
        assert sizing.modes == sizing.unclamped == frozenset({Mode.DRAFT_DECODE}), version
        assert sizing.asserts == frozenset(), version
