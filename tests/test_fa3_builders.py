"""FA3's CUDA-graph page tables built by SGLang's own code (``runtime.attention.graph_builds``), held to the model.

Per release, the builds SGLang's own builders make (the buffer's width as SGLang allocated it, the columns written
in the row and past it, the length published to the kernel) equal the model's twin
(``allocator_model.page_tables.graph_builds``, the table sized from the context length) with the release's verify
builder as measured: ``VERIFY_BLOCK`` (its grid's block where it masks on the length alone, None where it clamps at
the width), and with the modes whose builder writes its whole row whatever the length (``WHOLE_ROW``: the twin
writes the row's used pages only; reported, not modeled yet).  A wrong width, clamp or published length in the
twin fails here.

Hermetic: the real wheels of ``./kvrow test``'s pinned releases (``hermetic``), the others the network tier's; a
missing wheel or triton skips, saying which.  C is tiny (40 at page 4, 41 at page 1): one backend build per
release and configuration (about 1 s for the release's modules), then milliseconds a build.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from hermetic import PINNED_RELEASES  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402

from allocator_model import page_tables as pt  # noqa: E402
from allocator_model.config import ServingConfig, SpecRuntime  # noqa: E402
from allocator_model.page_tables import Mode  # noqa: E402

FA3 = pt.AttentionBackend.FA3

RELEASES = tuple(f"0.5.{n}" for n in range(13, 24))
EVERY_RELEASE = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]
FA = "sglang/srt/layers/attention/flashattention_backend.py"

# The target_verify builder (topk 1) per release, measured on these tests' builds: the block of tokens of its grid
# where it masks on the published length alone (pages [width, min(need, blocks * block)) land in the next row),
# None where it clamps at the width.  Where (the wheel's file:line):
VERIFY_BLOCK: dict[str, int | None] = {
    "0.5.13": None,  # FA 2265-2280: a gather of strided_indices[:max_seq_pages] (the width at most)
    "0.5.14": None,  # FA 2310-2325: the same
    # FA 2577: build_trtllm_mha_page_table(...); layers/attention/triton_ops/trtllm_mha_page_table.py 23:
    # _MHA_KV_INDEX_BLOCK_TOKENS = 4096, and its mask on cdiv(cache_seqlens, page) only
    "0.5.15": 4096,
    "0.5.16": 4096,  # FA 2787; kernels/ops/kvcache/trtllm_mha_page_table.py 23 (the same builder, moved)
    "0.5.17": 4096,  # FA 2833; the same
    "0.5.18": 4096,  # FA 2900; the same
    "0.5.19": 4096,  # FA 2956; the same
    "0.5.20": 4096,  # FA 2953; the same
    "0.5.21": 4096,  # FA 3055; the same
    "0.5.22": None,  # FA 3103: _set_decode_page_metadata -> normal_decode_set_metadata, min(live pages, width)
    "0.5.23": None,  # FA 3191: the same
}
# The modes whose builder writes its whole row [0, width) whatever the length.  Where (the wheel's file:line):
#   decode, draft decode 0.5.15-0.5.16: normal_decode_set_metadata is passed self.max_num_pages (FA 0.5.15 2417,
#     2530; 0.5.16 2615, 2731) and masks its columns on it alone (0.5.15 layers/attention/triton_ops/metadata.py
#     222, 312; 0.5.16 kernels/ops/attention/metadata.py 222, 312); 0.5.17 masks on the live pages (its 239, 347);
#   draft extend 0.5.16-0.5.23: page_table[:, :max_seq_pages] gathers strided_indices[:max_seq_pages] with
#     max_seq_len_k = max_context_len (no seq_lens_cpu: needs_cpu_seq_lens False): FA 0.5.16 2934, 0.5.17 2980,
#     0.5.18 3047, 0.5.19 3103, 0.5.20 3098, 0.5.21 3200, 0.5.22 3253, 0.5.23 3341.
_DECODES = frozenset({Mode.DECODE, Mode.DRAFT_DECODE})
WHOLE_ROW: dict[str, frozenset[Mode]] = {
    "0.5.15": _DECODES,
    "0.5.16": _DECODES | {Mode.DRAFT_EXTEND},
    **{f"0.5.{n}": frozenset({Mode.DRAFT_EXTEND}) for n in range(17, 24)},
}


def eagle(context_len: int, page_size: int) -> tuple[ServingConfig, SpecRuntime]:
    cfg = ServingConfig.resolve(
        context_len=context_len,
        page_size=page_size,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=1,
        speculative_num_draft_tokens=4,
    )
    assert cfg.launch_runtime is not None
    return cfg, cfg.launch_runtime


def expected(version: str, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row_width: int) -> list[pt.Build]:
    """The model's twin, with the release's verify builder (``VERIFY_BLOCK``) and whole-row writers (``WHOLE_ROW``)."""
    block = VERIFY_BLOCK[version]
    unclamped = frozenset({Mode.TARGET_VERIFY}) if block else frozenset()
    twin = pt.graph_builds(cfg, rt, seq, pt.GraphSizing(pt.TableWidth.CONTEXT, block, unclamped), row_width)
    whole = WHOLE_ROW.get(version, frozenset())
    return [
        pt.Build(b.mode, b.step, b.buffer, b.width, b.page_size, b.width, b.spilled, b.published)
        if b.mode in whole
        else b
        for b in twin
    ]


# (what, C, P, EAGLE or no speculation, device length): near the limit (the verify and draft extend publish past
# the width: read past it, and 0.5.15-0.5.21's verify writes into the next row at C=40 P=4 and C=41 P=1), clean.
CASES = [
    ("eagle-near-limit", 40, 4, True, 37),
    ("eagle-clean", 40, 4, True, 10),
    ("decode", 40, 4, False, 36),
    ("eagle-page-1-near-limit", 41, 1, True, 38),
]


@pytest.mark.parametrize("version", EVERY_RELEASE)
@pytest.mark.parametrize(("what", "context", "page", "spec", "seq"), CASES, ids=[c[0] for c in CASES])
def test_sglang_builders_equal_the_model(version: str, what: str, context: int, page: int, spec: bool, seq: int):
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(context, page) if spec else (ServingConfig.resolve(context_len=context, page_size=page), None)
    row_width = context + 8  # as wide as a req_to_token row near this context (C + 4 + D)
    builds = graph_builds(r, FA3, cfg, rt, seq, row_width)
    assert [(b.mode, b.step) for b in builds] == list(pt.steps(cfg, rt))
    assert builds == expected(version, cfg, rt, seq, row_width)
    if what.endswith("near-limit"):  # the case the table is for: the verify publishes past the width
        verify = next(b for b in builds if b.mode is Mode.TARGET_VERIFY)
        assert verify.read_pages > verify.width == pt.pages(context, page)
        assert (verify.spilled > 0) == (VERIFY_BLOCK[version] is not None)


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_builds_run_interpreted_and_leave_nothing_for_the_next_call(version: str):
    """Every triton kernel of the backend's modules interpreted; a call's buffers refilled before the next."""
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(40, 4)
    first = graph_builds(r, FA3, cfg, rt, 37, 48)
    assert graph_builds(r, FA3, cfg, rt, 10, 48) == expected(version, cfg, rt, 10, 48)
    assert graph_builds(r, FA3, cfg, rt, 37, 48) == first
    assert r.attention[FA3].loader.compiled_kernels() == []
    tree = ServingConfig.resolve(
        context_len=40,
        page_size=4,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=2,
        speculative_num_draft_tokens=4,
    )
    assert graph_builds(r, FA3, tree, tree.launch_runtime, 37, 48) == []  # topk > 1 runs other tables: not stage 1's


def test_sglang_own_check_refuses_a_decode_past_the_width_in_0_5_13():
    """0.5.13's decode asserts the pages fit the buffer (FA 2209: assert_buffer_fits(..., "FA3 decode page_table"),
    layers/attention/utils.py 1364): the build is refused, naming the check whose assert fired (the twin's name
    of it); 0.5.23 builds it, the kernel to read past the row."""
    from fuzz.engines.sglang.real.runtime.attention import BuildRefused, graph_builds

    plain = ServingConfig.resolve(context_len=40, page_size=4)
    (stopped,) = graph_builds(runtime("0.5.13"), FA3, plain, None, 44, 48)
    assert stopped.stopped_by == "assert_buffer_fits" == pt.DECODE_ASSERT
    assert (stopped.written, stopped.spilled, stopped.published, stopped.width) == (0, 0, 44, 10)
    asserting = pt.GraphSizing(pt.TableWidth.CONTEXT, asserts=frozenset({Mode.DECODE, Mode.DRAFT_DECODE}))
    (twin,) = pt.graph_builds(plain, None, 44, asserting, 48)
    assert twin.stopped_by == pt.DECODE_ASSERT and (twin.width, twin.published) == (10, 44)
    assert issubclass(BuildRefused, Exception)  # what the runtime turns into a stopped build
    (build,) = graph_builds(runtime("0.5.23"), FA3, plain, None, 44, 48)
    assert (build.written, build.spilled, build.published, build.read_pages) == (10, 0, 44, 11)


def test_the_model_revisions_carry_the_measured_builders() -> None:
    """Each release's model revision holds the facts measured above: the width from the context length, the
    verify builder's block (``VERIFY_BLOCK``), and the decode assert of 0.5.13-0.5.14."""
    from allocator_model.revisions import RELEASE_REVISIONS, get_revision

    for version in RELEASES:
        rev = get_revision(RELEASE_REVISIONS[version])
        assert rev.page_table_width is pt.TableWidth.CONTEXT, version
        assert rev.fa3_verify_block_tokens == VERIFY_BLOCK[version], version
        assert rev.fa3_decode_asserts == (version in ("0.5.13", "0.5.14")), version
