"""trtllm_mla's CUDA-graph page table built by SGLang's own code (``runtime.attention.graph_builds``), held to the
model.

Per release, the builds SGLang's own builders make (the buffer's width as SGLang allocated it, the columns written
in the row and past it, the length the kernel reads) equal the model's twin (``allocator_model.page_tables.
graph_builds``) under the release's revision (``Revision.graph_sizing``: the context's pages padded to whole
4096-token blocks, a grid of 4096-token blocks masked by the published length alone, in every mode).  The padded
width ends the builder's grid, so a verify near a whole number of blocks reads past its row (the next graph row)
and writes nothing past it.

The backend runs on a stand-in Blackwell GPU (SGLang refuses trtllm_mla below SM100; its ``device="cuda"`` buffers
in host memory), its model an MLA one (``attention_inputs.MLA_SHAPE``), the kernels' own scratch, JIT prebuild and
fused-write gate inert (``attention_standins.kernel_owned``).

Hermetic: the real wheels of ``./kvrow test``'s pinned releases (``hermetic``), the others the network tier's; a
missing wheel or triton skips, saying which.

The wheel's facts (TM: ``srt/layers/attention/trtllm_mla_backend.py``; KVI: the kv-indices kernels, in
``srt/layers/attention/triton_ops/`` to 0.5.15, ``kernels/ops/kvcache/`` to 0.5.22, ``kernels/ops/attention/`` in
0.5.23):

* width: ``_calc_padded_blocks(self.max_context_len)`` in ``init_cuda_graph_state``: ``cdiv(C, P)`` rounded up to
  ``lcm(128 // P, 4096 // P)`` pages (TM 0.5.13 344-360 and 418; 0.5.23 336-361 and 485);
* builder: ``create_flashmla_kv_indices_triton`` over a grid ``(bs, get_num_kv_index_blocks_flashmla(width, P))``,
  its stores masked by ``cdiv(len, P)`` alone (KVI 0.5.23 184-190, 235-236);
* published (``seq_lens_k``): verify ``seq_lens + num_draft_tokens`` (TM 0.5.23 622-632), draft extend the batch's
  ``seq_lens`` (they hold the drafts), a decode and each draft step the batch's ``seq_lens`` (0.5.13-0.5.16: the
  metadata holds none and the kernel reads ``forward_batch.seq_lens``, TM 0.5.16 793).
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

TRTLLM_MLA = pt.AttentionBackend.TRTLLM_MLA
RELEASES = tuple(f"0.5.{n}" for n in range(13, 24))
EVERY_JUDGED = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASES]


def config(
    context_len: int, algorithm: str | None, page: int = 64, draft_tokens: int = 4
) -> tuple[ServingConfig, SpecRuntime | None]:
    """At page 32 or 64 (trtllm_mla's)."""
    return spec_config(context_len, page, algorithm, draft_tokens)


def expected(version: str, cfg: ServingConfig, rt: SpecRuntime | None, seq: int, row_width: int) -> list[pt.Build]:
    return twin(TRTLLM_MLA, version, cfg, rt, seq, row_width)


# (what, C, algorithm, page, D, device length): C = 4096 is one block, 64 pages of 64 (128 of 32): a verify at 4094
# publishes 4098, a 65th page, read past the row (the grid ends with it: nothing written past); C = 4097 pads to two
# blocks: the same verify fits; DFLASH's block; a decode past the width (a read past); a request far from the limit.
CASES = [
    ("eagle-block-limit", 4096, "EAGLE", 64, 4, 4094),
    ("eagle-block-limit-page-32", 8192, "EAGLE", 32, 4, 8190),
    ("eagle-padded-room", 4097, "EAGLE", 64, 4, 4096),
    ("dflash-block-limit", 4096, "DFLASH", 64, 16, 4090),
    ("decode-past-width", 4096, None, 64, 4, 4100),
    ("eagle-clean", 4096, "EAGLE", 32, 4, 10),
]


@pytest.mark.parametrize("version", EVERY_JUDGED)
@pytest.mark.parametrize(("what", "context", "algorithm", "page", "draft", "seq"), CASES, ids=[c[0] for c in CASES])
def test_sglang_builders_equal_the_model(
    version: str, what: str, context: int, algorithm: str | None, page: int, draft: int, seq: int
):
    from fuzz.engines.sglang.real.runtime.attention import graph_builds
    from fuzz.engines.sglang.real.runtime.releases import RELEASES as TABLE

    if algorithm is not None and algorithm in TABLE[version].unsupported:
        pytest.skip(TABLE[version].unsupported[algorithm])
    r = runtime(version)
    cfg, rt = config(context, algorithm, page, draft)
    row_width = context + 24  # as wide as a req_to_token row near this context
    builds = graph_builds(r, TRTLLM_MLA, cfg, rt, seq, row_width)
    assert [(b.mode, b.step) for b in builds] == list(pt.steps(cfg, rt))
    assert builds == expected(version, cfg, rt, seq, row_width)
    padded = -(-context // 4096) * 4096 // page  # the context's pages, padded to whole 4096-token blocks
    assert all(b.width == padded and b.stopped_by is None and b.spilled == 0 for b in builds)
    assert all(b.buffer == "decode_cuda_graph_kv_indices" for b in builds)
    if what.endswith(("block-limit", "block-limit-page-32")):  # the case the table is for: the verify reads past
        verify = next(b for b in builds if b.mode is Mode.TARGET_VERIFY)
        assert verify.read_pages == verify.width + 1 and verify.written == verify.width
    if what in ("eagle-padded-room", "eagle-clean"):
        assert not any(b.read_pages > b.width for b in builds)
    if what == "decode-past-width":
        (decode,) = builds
        assert decode.read_pages == decode.width + 1 and decode.published == seq
    if algorithm == "EAGLE":  # each draft step's table is built from the batch's own lengths
        assert {b.published for b in builds if b.mode is Mode.DRAFT_DECODE} == {seq}


@pytest.mark.parametrize("version", EVERY_JUDGED)
def test_builds_run_interpreted_on_the_stand_in_gpu_and_leave_nothing_behind(version: str):
    """The builder is SGLang's interpreted kernel; a call's buffers are refilled before the next; the CUDA device is
    the stand-in's only inside SGLang's calls; the kernels' own values stay inert; topk > 1 is not this table's."""
    from fuzz.engines.sglang.real.runtime.inert import Inert

    builders = kv_indices_builds_run_interpreted(runtime(version), TRTLLM_MLA, version, 4096, 4094, 4120)
    cfg, _ = config(4096, "EAGLE")
    (bucket,) = [b for b in builders.buckets.values() if b.cfg == cfg]  # other tests' buckets may share the runtime
    target = bucket.backends["target"]
    if int(version.split(".")[2]) >= 17:  # trtllm-gen's multi-CTA counters (0.5.17+): the stand-in's scratch
        assert isinstance(target._multi_ctas_kv_counter_buffer, Inert)


def test_the_model_revisions_carry_the_measured_builders() -> None:
    """Each release's model revision: the context's pages padded to whole blocks of 4096 tokens (and trtllm-gen's
    128), every mode's builder masked by the length over 4096-token blocks; the reference pads the row's pages."""
    for version in RELEASES:
        sizing = get_revision(RELEASE_REVISIONS[version]).graph_sizing(TRTLLM_MLA)
        assert sizing.width is pt.TableWidth.CONTEXT and sizing.pad_to == (128, 4096), version
        assert (sizing.block_tokens, sizing.unclamped, sizing.asserts) == (4096, frozenset(Mode), frozenset())
    reference = get_revision("reference").graph_sizing(TRTLLM_MLA)
    assert reference.width is pt.TableWidth.ROW and reference.pad_to == (128, 4096)
    cfg = ServingConfig.resolve(context_len=4096, page_size=32)
    assert reference.width_of(cfg, 4100) == 256  # the row's 129 pages, padded to two blocks of 128
