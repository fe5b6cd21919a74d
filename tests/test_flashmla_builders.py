"""FlashMLA's CUDA-graph page table built by SGLang's own code (``runtime.attention.graph_builds``), held to the
model.

Per release, the builds SGLang's own builders make (the buffer's width as SGLang allocated it, the columns written
in the row and past it, the length the backend schedules the kernel over) equal the model's twin
(``allocator_model.page_tables.graph_builds``) under the release's revision (``Revision.graph_sizing``: one page
past the context's whole pages, a grid of 4096-token blocks masked by the published length alone, in every mode).
Unlike FA3's and trtllm_mha's, FlashMLA's builder does not clamp: a verify near the context limit writes its last
page into the next request's graph row.

The backend runs on the stand-in GPU (``attention_standins.on_the_stand_in_gpu``: its ``device="cuda"`` buffers in
host memory, an H100's properties), its model an MLA one (``attention_inputs.MLA_SHAPE``).  0.5.13-0.5.15 run the
draft's extend on FlashInfer's MLA backend, not FlashMLA's (its draft-extend factory returns none): there the table's
builds are the other modes (``NO_DRAFT_EXTEND``, the revisions' ``flashmla_draft_extend``).

Hermetic: the real wheels of ``./kvrow test``'s pinned releases (``hermetic``), the others the network tier's; a
missing wheel or triton skips, saying which.

The wheel's facts (FB: ``srt/layers/attention/flashmla_backend.py``; KVI: the kv-indices kernels, in
``srt/layers/attention/triton_ops/`` to 0.5.15, ``kernels/ops/kvcache/`` to 0.5.22, ``kernels/ops/attention/`` in
0.5.23):

* width: ``(self.max_context_len + PAGE_SIZE) // PAGE_SIZE`` in ``init_cuda_graph_state``, ``PAGE_SIZE = 64``
  (FB 0.5.16 32 and 251; 0.5.18 33 and 250; 0.5.23 39 and 274);
* builder: ``create_flashmla_kv_indices_triton`` over a grid ``(bs, get_num_kv_index_blocks_flashmla(stride, 64))``
  (64 pages a program, KVI 0.5.23 184-190), its stores masked by ``cdiv(len, 64)`` alone (KVI 0.5.23 235-236);
* published: decode ``seq_lens``, verify ``seq_lens + num_draft_tokens`` (FB 0.5.23 341-345), draft extend the
  batch's ``seq_lens`` (they hold the drafts), each draft step the batch's ``seq_lens`` (its inner DECODE view,
  FB 0.5.23 672-680).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from graph_twin import kv_indices_builds_run_interpreted, spec_config, twin  # noqa: E402
from hermetic import PINNED_RELEASES  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402

from allocator_model import page_tables as pt  # noqa: E402
from allocator_model.config import ServingConfig, SpecRuntime  # noqa: E402
from allocator_model.page_tables import Mode  # noqa: E402
from allocator_model.revisions import RELEASE_REVISIONS, get_revision  # noqa: E402

FLASHMLA = pt.AttentionBackend.FLASHMLA
RELEASES = tuple(f"0.5.{n}" for n in range(13, 24))
NO_DRAFT_EXTEND = frozenset({"0.5.13", "0.5.14", "0.5.15"})  # FlashInfer's MLA backend runs the draft extend there
EVERY_JUDGED = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]


def config(context_len: int, algorithm: str | None, draft_tokens: int = 4) -> tuple[ServingConfig, SpecRuntime | None]:
    """At page 64 (FlashMLA's)."""
    return spec_config(context_len, 64, algorithm, draft_tokens)


def expected(version: str, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row_width: int) -> list[pt.Build]:
    return twin(FLASHMLA, version, cfg, rt, seq, row_width)


# (what, C, algorithm, D, device length): C = 191 is 3 pages wide ((191 + 64) // 64): a verify at 190 publishes 194,
# a 4th page, stored into the next row; C = 192 is 4 pages wide (one past its whole pages): the same verify fits; a
# decode past the width; DFLASH's block; a width over one 4096-token block (two grid programs); a width of exactly one
# block (the grid ends with the row).
CASES = [
    ("eagle-near-limit", 191, "EAGLE", 4, 190),
    ("eagle-whole-pages", 192, "EAGLE", 4, 190),
    ("eagle-clean", 191, "EAGLE", 4, 10),
    ("decode-past-width", 191, None, 4, 193),
    ("dflash-near-limit", 250, "DFLASH", 16, 245),
    ("eagle-two-blocks-near-limit", 4159, "EAGLE", 4, 4158),
    ("eagle-grid-end", 4095, "EAGLE", 4, 4094),  # 64 pages wide: the grid's one block ends at the row's end
]


@pytest.mark.parametrize("version", EVERY_JUDGED)
@pytest.mark.parametrize(("what", "context", "algorithm", "draft", "seq"), CASES, ids=[c[0] for c in CASES])
def test_sglang_builders_equal_the_model(version: str, what: str, context: int, algorithm, draft: int, seq: int):
    from fuzz.engines.sglang.real.runtime.attention import graph_builds
    from fuzz.engines.sglang.real.runtime.releases import RELEASES as TABLE

    if algorithm is not None and algorithm in TABLE[version].unsupported:
        pytest.skip(TABLE[version].unsupported[algorithm])
    r = runtime(version)
    cfg, rt = config(context, algorithm, draft)
    row_width = context + 24  # as wide as a req_to_token row near this context
    builds = graph_builds(r, FLASHMLA, cfg, rt, seq, row_width)
    own = [(m, s) for m, s in pt.steps(cfg, rt) if m is not Mode.DRAFT_EXTEND or version not in NO_DRAFT_EXTEND]
    assert [(b.mode, b.step) for b in builds] == own
    assert builds == expected(version, cfg, rt, seq, row_width)
    assert all(b.width == (context + 64) // 64 and b.stopped_by is None for b in builds)
    assert all(b.buffer == "cuda_graph_kv_indices" for b in builds)
    if what.endswith("near-limit"):  # the case the table is for: the verify writes into the next row
        verify = next(b for b in builds if b.mode is Mode.TARGET_VERIFY)
        assert verify.read_pages > verify.width and verify.spilled == verify.read_pages - verify.width
    if what == "eagle-whole-pages":
        assert not any(b.spilled or b.read_pages > b.width for b in builds)
    if what == "decode-past-width":
        (decode,) = builds
        assert decode.read_pages == decode.width + 1 and decode.spilled == 1
    if what == "eagle-clean":
        assert not any(b.spilled or b.read_pages > b.width for b in builds)
    if what == "eagle-grid-end":  # no program past the grid's end: the verify reads past the row, writes nothing
        verify = next(b for b in builds if b.mode is Mode.TARGET_VERIFY)
        assert verify.read_pages == verify.width + 1 and verify.spilled == 0
    if algorithm == "EAGLE":  # each draft step's table is built from the batch's own lengths
        assert {b.published for b in builds if b.mode is Mode.DRAFT_DECODE} == {seq}


@pytest.mark.parametrize("version", EVERY_JUDGED)
def test_builds_run_interpreted_on_the_stand_in_gpu_and_leave_nothing_behind(version: str):
    """The builder is SGLang's interpreted kernel; a call's buffers are refilled before the next; the CUDA device
    and torch.cuda's properties are the stand-in's only inside SGLang's calls; topk > 1 is not this table's."""
    kv_indices_builds_run_interpreted(runtime(version), FLASHMLA, version, 191, 190, 215)


def test_the_model_revisions_carry_the_measured_builders() -> None:
    """Each release's model revision: one page past the context's whole pages, every mode's builder masked by the
    length over 4096-token blocks, the draft extend FlashMLA's from 0.5.16; the reference sizes it from the row."""
    for version in RELEASES:
        sizing = get_revision(RELEASE_REVISIONS[version]).graph_sizing(FLASHMLA)
        assert sizing.width is pt.TableWidth.CONTEXT_NEXT_PAGE, version
        assert (sizing.block_tokens, sizing.unclamped, sizing.asserts) == (4096, sizing.modes, frozenset())
        assert sizing.modes == frozenset(Mode) - ({Mode.DRAFT_EXTEND} if version in NO_DRAFT_EXTEND else set())
    assert get_revision("reference").graph_sizing(FLASHMLA).width is pt.TableWidth.ROW
