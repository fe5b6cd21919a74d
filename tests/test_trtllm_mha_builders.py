"""trtllm_mha's CUDA-graph page tables built by SGLang's own code (``runtime.attention.graph_builds``), held to the
model.

Per release, the builds SGLang's own builders make (the buffer's width as SGLang allocated it, the columns written
in the row and past it, the length published to the kernel) equal the model's twin
(``allocator_model.page_tables.graph_builds``) under the release's revision (``Revision.graph_sizing``: the table
sized from the context length; 0.5.14's whole graph path masks by the length alone over 4096-token blocks, the
others clamp at the width), but for the releases whose builder writes its whole row whatever the length
(``WHOLE_ROW``: the twin writes the row's used pages only; reported, not modeled).

Hermetic: the real wheels of ``./kvrow test``'s pinned releases (``hermetic``), the others the network tier's; a
missing wheel or triton skips, saying which.  The contexts are small (48 to 4112 tokens): one backend build per
release and configuration (about 0.5 s for the release's modules), then milliseconds a build.

The wheel's facts (TM: ``srt/layers/attention/trtllm_mha_backend.py``; GM: the fused graph-metadata kernel
``trtllm_mha_graph_metadata.py``, in ``srt/layers/attention/triton_ops/`` to 0.5.15, ``kernels/ops/kvcache/`` to
0.5.22, ``kernels/ops/attention/`` in 0.5.23):

* width: ``ceil(max_context_len / page_size)``, ``max_context_len = model_config.context_len`` (TM 0.5.13 94 and
  242 in ``init_cuda_graph_state``; 0.5.14 102, 144; 0.5.15 106, 158; 0.5.16 127, 179; 0.5.17 137, 193; 0.5.18
  147, 203; 0.5.19 158, 218; 0.5.20 158, 218; 0.5.21 230, 334; 0.5.22 235, 339; 0.5.23 245, 351);
* published: draft decode step s ``seq + s + 1``, verify ``seq + max_seq_len_q`` (D), draft extend ``seq_lens``
  (they hold the D drafts), decode ``seq`` (TM 0.5.13 460, 492; 0.5.14 519, 535, 544; 0.5.15+ the kernel's
  ``seq_lens + seqlen_offset``, the offset set in ``_apply_cuda_graph_metadata``: 0.5.15 532, 539; 0.5.23 979, 993).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from graph_twin import spec_config, twin  # noqa: E402
from hermetic import PINNED_RELEASES  # noqa: E402
from test_fa3_builders import eagle  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402

from allocator_model import page_tables as pt  # noqa: E402
from allocator_model.config import ServingConfig, SpecRuntime  # noqa: E402
from allocator_model.page_tables import Mode  # noqa: E402
from allocator_model.revisions import RELEASE_REVISIONS, get_revision  # noqa: E402

TRTLLM_MHA = pt.AttentionBackend.TRTLLM_MHA

RELEASES = tuple(f"0.5.{n}" for n in range(13, 24))
EVERY_RELEASE = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]

# The graph path's builder per release: the block of tokens of its grid where it masks on the published length alone
# (pages [width, min(need, blocks * block)) land in the next row), None where it clamps at the width.  Where:
BLOCK: dict[str, int | None] = {
    # TM 481-487, 502-506, 549-553: page_table[:, :max_seq_pages] from strided_indices[:max_seq_pages], and
    # strided_indices = arange(0, max_context_len, page_size) (TM 252): the width at most
    "0.5.13": None,
    # TM 529, 539, 563: _fill_page_table_device -> build_trtllm_mha_page_table (TM 207) for decode, draft decode,
    # verify and draft extend; layers/attention/triton_ops/trtllm_mha_page_table.py 23: _MHA_KV_INDEX_BLOCK_TOKENS =
    # 4096, its grid cdiv(width, 4096 / page) blocks (34-36), its mask on cdiv(seq_len, page) only (69, 77)
    "0.5.14": 4096,
    # TM 560: update_trtllm_mha_graph_metadata(max_seq_pages=self.max_num_pages) (TM 559); GM 78-80 writes
    # page_idx < max_seq_pages: the width at most (and all of it: WHOLE_ROW)
    "0.5.15": None,
    "0.5.16": None,  # TM 615-616; GM (kernels/ops/kvcache/) 78-80, the same
    # TM 710-711; GM 80: num_live_pages = min(cdiv(seqlen, page), max_seq_pages), 83: mask page_idx < num_live_pages
    "0.5.17": None,
    "0.5.18": None,  # TM 749-750; GM 80, 83
    "0.5.19": None,  # TM 775-777; GM 86, 89
    "0.5.20": None,  # TM 771-773; GM 86, 89
    "0.5.21": None,  # TM 955-957; GM 86, 89
    "0.5.22": None,  # TM 960-962; GM 86, 89
    "0.5.23": None,  # TM 1013-1015; GM (kernels/ops/attention/) 86, 89
}
# The releases whose graph builder writes its whole row [0, width) whatever the length, in every mode: GM 0.5.15 and
# 0.5.16 78-80 (the loop and mask run to max_seq_pages = self.max_num_pages, TM 0.5.15 559, 0.5.16 615); 0.5.17 masks
# on the live pages (GM 80, 83).
WHOLE_ROW = frozenset({"0.5.15", "0.5.16"})
# The page sizes trtllm_mha takes (any other is changed to 64): 16, 32 or 64 to 0.5.16 (0.5.13 server_args.py 2994,
# 0.5.14 server_args.py 4638, 0.5.15 arg_groups/overrides.py 1575, 0.5.16 overrides.py 1737); 16, 32, 64 or 128 from
# 0.5.17 (overrides.py 0.5.17 2090, 0.5.18 2188, 0.5.19 1187, 0.5.20 1225, 0.5.21 1114, 0.5.22 1133, 0.5.23 1183).
PAGES = {v: (16, 32, 64) if v in ("0.5.13", "0.5.14", "0.5.15", "0.5.16") else (16, 32, 64, 128) for v in RELEASES}


def config(context_len: int, page: int, algorithm: str | None) -> tuple[ServingConfig, SpecRuntime | None]:
    """No speculation, EAGLE (S,K,D) = (3,1,4), or DFLASH with D = 4 (steps 1, topk 1)."""
    return spec_config(context_len, page, algorithm)


def expected(version: str, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row_width: int) -> list[pt.Build]:
    """The model's twin under the release's revision, its writes widened to the whole row in ``WHOLE_ROW``."""
    built = twin(TRTLLM_MHA, version, cfg, rt, seq, row_width)
    if version not in WHOLE_ROW:
        return built
    return [pt.Build(b.mode, b.step, b.buffer, b.width, b.page_size, b.width, b.spilled, b.published) for b in built]


# (what, C, P, algorithm, device length): near the limit (the verify and draft extend publish past the width: read
# past it, and 0.5.14 writes into the next row), clean, a decode past the width (0.5.14 writes into the next row in
# every mode), DFLASH's verify, page 64 and 128, a width over one 4096-token block (0.5.14's grid: two blocks).
CASES = [
    ("eagle-near-limit", 48, 16, "EAGLE", 46),
    ("eagle-clean", 48, 16, "EAGLE", 10),
    ("decode", 48, 16, None, 47),
    ("decode-past-width", 48, 16, None, 49),
    ("dflash-near-limit", 64, 32, "DFLASH", 62),
    ("eagle-page-64-near-limit", 128, 64, "EAGLE", 126),
    ("eagle-page-128-near-limit", 384, 128, "EAGLE", 382),
    ("eagle-two-blocks-near-limit", 4112, 16, "EAGLE", 4110),
]


def reason_to_skip(version: str, page: int, algorithm: str | None) -> str | None:
    from fuzz.engines.sglang.real.runtime.releases import RELEASES as TABLE

    if page not in PAGES[version]:
        return f"sglang {version} changes page {page} to 64 for trtllm_mha"
    if algorithm is not None and algorithm in TABLE[version].unsupported:
        return TABLE[version].unsupported[algorithm]
    return None


@pytest.mark.parametrize("version", EVERY_RELEASE)
@pytest.mark.parametrize(("what", "context", "page", "algorithm", "seq"), CASES, ids=[c[0] for c in CASES])
def test_sglang_builders_equal_the_model(version: str, what: str, context: int, page: int, algorithm, seq: int):
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    why = reason_to_skip(version, page, algorithm)
    if why:
        pytest.skip(why)
    r = runtime(version)
    cfg, rt = config(context, page, algorithm)
    row_width = context + 8  # as wide as a req_to_token row near this context (C + 4 + D)
    builds = graph_builds(r, TRTLLM_MHA, cfg, rt, seq, row_width)
    assert [(b.mode, b.step) for b in builds] == list(pt.steps(cfg, rt))
    assert builds == expected(version, cfg, rt, seq, row_width)
    assert all(b.width == pt.pages(context, page) and b.stopped_by is None for b in builds)
    if what.endswith("near-limit"):  # the case the table is for: the verify publishes past the width
        verify = next(b for b in builds if b.mode is Mode.TARGET_VERIFY)
        assert verify.read_pages > verify.width
        assert (verify.spilled > 0) == (BLOCK[version] is not None)
        assert verify.written == verify.width
    if what == "decode-past-width":
        (decode,) = builds
        assert decode.read_pages == decode.width + 1 and decode.spilled == (1 if BLOCK[version] else 0)
    if what == "eagle-clean":
        assert not any(b.spilled or b.read_pages > b.width for b in builds)


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_builds_run_interpreted_and_leave_nothing_for_the_next_call(version: str):
    """Every triton kernel of the backend's modules interpreted; a call's buffers refilled before the next; topk > 1
    is not this table's (trtllm_mha takes topk 1 only)."""
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(48, 16)
    first = graph_builds(r, TRTLLM_MHA, cfg, rt, 46, 56)
    assert graph_builds(r, TRTLLM_MHA, cfg, rt, 10, 56) == expected(version, cfg, rt, 10, 56)
    assert graph_builds(r, TRTLLM_MHA, cfg, rt, 46, 56) == first
    builders = r.attention[TRTLLM_MHA]
    assert builders.loader.compiled_kernels() == []
    # The graph path's triton kernel (BLOCK's: 0.5.14's page-table builder, 0.5.15+'s fused metadata kernel; 0.5.13
    # gathers with torch) is SGLang's own, executed, and an interpreted one
    from triton.runtime.interpreter import InterpretedFunction

    kernel = {"0.5.13": None, "0.5.14": "trtllm_mha_page_table"}.get(version, "trtllm_mha_graph_metadata")
    if kernel is not None:
        (module,) = [
            m for d, m in builders.loader.modules.items() if d.endswith(kernel) and d in builders.loader.executed
        ]
        assert any(isinstance(v, InterpretedFunction) for v in vars(module).values())
    tree = ServingConfig.resolve(
        context_len=48,
        page_size=16,
        speculative_algorithm="EAGLE",
        speculative_num_steps=3,
        speculative_eagle_topk=2,
        speculative_num_draft_tokens=4,
    )
    assert graph_builds(r, TRTLLM_MHA, tree, tree.launch_runtime, 46, 56) == []


def test_the_fa3_and_trtllm_mha_builders_of_one_runtime_are_apart():
    """Each backend's modules load in a loader of their own: FA3's builds are the same beside trtllm_mha's."""
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime("0.5.23")
    cfg, rt = eagle(48, 16)
    fa3 = graph_builds(r, pt.AttentionBackend.FA3, cfg, rt, 46, 56)
    trtllm = graph_builds(r, TRTLLM_MHA, cfg, rt, 46, 56)
    assert graph_builds(r, pt.AttentionBackend.FA3, cfg, rt, 46, 56) == fa3
    assert [b.verdict for b in trtllm] == [b.verdict for b in fa3]  # both clamp in 0.5.23, both sized from C
    assert r.attention[TRTLLM_MHA].loader is not r.attention[pt.AttentionBackend.FA3].loader


def test_the_model_revisions_carry_the_measured_builders() -> None:
    """Each release's model revision holds the facts measured above: the width from the context length and the
    graph builder's block (``BLOCK``)."""
    for version in RELEASES:
        rev = get_revision(RELEASE_REVISIONS[version])
        sizing = rev.graph_sizing(TRTLLM_MHA)
        assert sizing.width is pt.TableWidth.CONTEXT, version
        assert rev.trtllm_mha_block_tokens == BLOCK[version], version
        assert sizing.unclamped == (frozenset(Mode) if BLOCK[version] else frozenset()), version
        assert sizing.asserts == frozenset(), version
