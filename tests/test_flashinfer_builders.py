"""FlashInfer's draft-decode kv_indices built by SGLang's own code (``runtime.attention.graph_builds``), held to the
model.

Per release, SGLang's own ``FlashInferMultiStepDraftBackend`` (its S - 1 ``FlashInferAttnBackend`` step backends,
each planning FlashInfer's decode wrapper over its row: ``runtime.flashinfer_standins``) in one CUDA-graph replay
builds what the model's twin says (``allocator_model.page_tables.graph_builds`` under the release's revision,
``Revision.graph_sizing``): triton's rows (``topk * C`` token slots a row, step s storing ``seq + s + 1``), except
that before the launch ``assert_buffer_fits`` checks every step's slots at once, so a request whose last step would
pass its row stops every step (nothing written: the server's step raises) rather than spilling.  A bucket of one at
S >= C is refused at its capture (the fill length 1 already fails the check) and every replay after it.

Every release 0.5.13-0.5.23 runs.  Hermetic: the real wheels of ``./kvrow test``'s pinned releases (``hermetic``),
the others the network tier's; a missing wheel or triton skips, saying which.

The wheel's facts (FB: ``srt/layers/attention/flashinfer_backend.py``), as ``release: class
FlashInferMultiStepDraftBackend; its assert_buffer_fits( (common_template); the graph width's call
(init_cuda_graph_state); the capture's fast_decode_plan install``:

* 0.5.13: FB 1613; 1672; 1741; 538
* 0.5.14: FB 1834; 1895; 1964; 707
* 0.5.15: FB 1982; 2043; 2112; 737
* 0.5.16: FB 2216; 2277; 2346; 804
* 0.5.17: FB 2212; 2273; 2342; 792
* 0.5.18: FB 2219; 2280; 2349; 796
* 0.5.19: FB 2329; 2390; 2459; 812
* 0.5.20: FB 2297; 2358; 2427; 797
* 0.5.21: FB 2322; 2386; 2457; 814
* 0.5.22: FB 2357; 2422; 2501; 821
* 0.5.23: FB 2442; 2507; 2635; 846

that is: ``required = draft_kv_indices_used_len(seq_lens_sum, topk, bs, S) = seq_lens_sum * topk + bs * S`` is
asserted to fit ``kv_indices_buffer.shape[1] = draft_kv_indices_buffer_width(max_bs, topk, max_context_len)``
before ``generate_draft_decode_kv_indices`` is launched over the grid of S steps (triton's kernel and store).

FlashInfer's MLA backend (the same flag on an MLA model: ``FlashInferMLAMultiStepDraftBackend`` in
``srt/layers/attention/flashinfer_mla_backend.py``, its ``FlashInferMLAAttnBackend`` steps planning FlashInfer's MLA
wrapper, ``runtime.flashinfer_standins.MLAWrapper``) builds the same rows under the same assert; each step's kernel
is planned over the batch's host lengths (``seq``), not the step's ``seq + s + 1``.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from graph_twin import twin  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402
from test_triton_builders import CASES, EVERY_RELEASE, eagle, lengths  # noqa: E402

from allocator_model import page_tables as pt  # noqa: E402
from allocator_model.page_tables import Mode  # noqa: E402

FLASHINFER = pt.AttentionBackend.FLASHINFER
FLASHINFER_MLA = pt.AttentionBackend.FLASHINFER_MLA
BOTH = (FLASHINFER, FLASHINFER_MLA)


@pytest.mark.parametrize("backend", BOTH)
@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_sglang_builders_equal_the_model(version: str, backend: pt.AttentionBackend) -> None:
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    for what, context, page, steps, row_width in CASES:
        cfg, rt = eagle(context, page, steps)
        for seq in (*lengths(context, steps), context - steps + 1):  # and the first length the check stops
            builds = graph_builds(r, backend, cfg, rt, seq, row_width)
            assert [(b.mode, b.step) for b in builds] == [(Mode.DRAFT_DECODE, s) for s in range(steps)]
            assert builds == twin(backend, version, cfg, rt, seq, row_width), (what, seq)
            assert all(b.buffer == "cuda_graph_kv_indices" and b.width == context and b.spilled == 0 for b in builds)
            if seq + steps > context:  # the last step's slots pass the row: SGLang's own check stops every step
                assert all(b.stopped_by == "assert_buffer_fits" and b.written == 0 for b in builds), (what, seq)
                assert [b.published for b in builds] == [seq + s + 1 for s in range(steps)]  # what each asked
            else:
                assert not any(b.stopped_by for b in builds)
                assert [b.written for b in builds] == [seq + s + 1 for s in range(steps)]
                read = [seq + s + 1 if backend is FLASHINFER else seq for s in range(steps - 1)]  # MLA: host lengths
                assert [b.published for b in builds] == read + [0]


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_each_step_plans_flashinfers_wrapper_over_its_own_row(version: str) -> None:
    """The replay hands each step's FlashInfer wrapper its row of the buffer and of ``kv_indptr``: the indices it
    plans are the step's published slots (the builder's check that the kernel reads the rows measured)."""
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(48, 1, 3)
    builds = graph_builds(r, FLASHINFER, cfg, rt, 20, 56)
    (bucket,) = [b for b in r.attention[FLASHINFER].buckets.values() if b.cfg == cfg and b.width == 56]
    backend = bucket.draft.backend
    for s, step in enumerate(backend.attn_backends):
        (wrapper,) = step.forward_metadata.decode_wrappers
        assert wrapper._paged_kv_indices_buf.data_ptr() == bucket.draft.rows[s].data_ptr()
        assert wrapper.plans[-1] == (1, builds[s].published)  # one request, its published slots


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_each_mla_step_plans_flashinfers_mla_wrapper_over_its_row_and_the_host_lengths(version: str) -> None:
    """FlashInfer MLA: the replay plans each step's MLA wrapper over its row of the buffer, its kernel over one
    request's host length ``seq`` from 0 (what the builder publishes), and FlashInfer's copies land in the row
    itself (the indices handed are the row's own prefix)."""
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(48, 1, 3)
    builds = graph_builds(r, FLASHINFER_MLA, cfg, rt, 20, 56)
    (bucket,) = [b for b in r.attention[FLASHINFER_MLA].buckets.values() if b.cfg == cfg and b.width == 56]
    for s, step in enumerate(bucket.draft.backend.attn_backends):
        wrapper = step.forward_metadata.decode_wrapper
        assert wrapper._kv_indices_buf.data_ptr() == bucket.draft.rows[s].data_ptr()
        assert wrapper.planned == ([0, 20], [20]) and builds[s].published == 20


@pytest.mark.parametrize("backend", BOTH)
@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_a_bucket_whose_capture_sglang_refuses_builds_every_length_stopped(
    version: str, backend: pt.AttentionBackend
) -> None:
    """S >= C: the capture's fill length already fails SGLang's check; every replay after it is stopped, as the
    twin says (seq + S > C at every length)."""
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    r = runtime(version)
    cfg, rt = eagle(8, 2, 8)
    for seq in (1, 5):
        builds = graph_builds(r, backend, cfg, rt, seq, 40)
        assert builds == twin(backend, version, cfg, rt, seq, 40)
        assert len(builds) == 8 and all(b.stopped_by == "assert_buffer_fits" for b in builds)


def test_a_refused_replay_that_wrote_is_the_targets_failure_not_a_stopped_build() -> None:
    """SGLang's check stopping a replay is a stopped build only where the table still holds the sentinel: a check
    that came after the builder wrote (a release moving it past the launch) is no crash but a write, never hidden."""
    import torch

    from fuzz.engines.sglang.real.runtime.attention_inputs import SENTINEL, BuildRefused, untouched_if_refused
    from fuzz.targets.base import TargetError

    class Owner:
        def call(self, *args: object, **kwargs: object) -> None:
            raise BuildRefused("SGLang's assert: used 49 > capacity 48", "assert_buffer_fits")

    rows = torch.full((2, 4), SENTINEL)
    with pytest.raises(BuildRefused):
        untouched_if_refused(Owner(), None, None, "replay", lambda: None, (rows,))
    rows[1, 0] = 7  # the builder stored before the check fired
    with pytest.raises(TargetError, match="after it wrote its table"):
        untouched_if_refused(Owner(), None, None, "replay", lambda: None, (rows,))


def test_the_decode_wrapper_stand_in_makes_flashinfers_checks_and_refuses_what_it_cannot_answer() -> None:
    import torch

    from fuzz.engines.sglang.real.runtime.flashinfer_standins import DecodeWrapper, fast_decode_plan
    from fuzz.engines.sglang.real.stubs import StandInMissing

    indptr, indices, last = torch.zeros(2, dtype=torch.int32), torch.zeros(8, dtype=torch.int32), torch.ones(1)
    with pytest.raises(ValueError, match="batch_size \\+ 1"):  # FlashInfer's check at construction
        DecodeWrapper(use_cuda_graph=True, paged_kv_indptr_buffer=torch.zeros(3), paged_kv_indices_buffer=indices,
                      paged_kv_last_page_len_buffer=last)  # fmt: skip
    w = DecodeWrapper(
        use_cuda_graph=True, paged_kv_indptr_buffer=indptr, paged_kv_indices_buffer=indices,
        paged_kv_last_page_len_buffer=last,
    )  # fmt: skip
    w.plan(torch.tensor([0, 3], dtype=torch.int32), torch.arange(3, dtype=torch.int32), torch.ones(1))
    assert indices[:3].tolist() == [0, 1, 2] and indptr.tolist() == [0, 3] and w.plans == [(1, 3)]
    with pytest.raises(ValueError, match="allocated buffer"):
        w.plan(indptr, torch.zeros(9, dtype=torch.int32), torch.ones(1))
    with pytest.raises(ValueError, match="batch size should be fixed"):
        fast_decode_plan(w, indptr, indices[:3], torch.ones(2))
    with pytest.raises(StandInMissing, match="other than its buffers"):  # FlashInfer would read its buffers instead
        fast_decode_plan(w, indptr, torch.arange(3, dtype=torch.int32), torch.ones(1))
    fast_decode_plan(w, indptr, indices[:3], torch.ones(1))
    assert w.plans[-1] == (1, 3)
    with pytest.raises(StandInMissing):  # a plan without CUDA-graph buffers: FlashInfer's own
        DecodeWrapper("workspace", "NHD").plan(indptr, indices, last)


def test_the_mla_wrapper_stand_in_copies_into_its_buffers_records_the_host_plan_and_refuses_the_rest() -> None:
    """``MLAWrapper``: a CUDA-graph plan copies the indptrs, lengths and indices into the wrapper's buffers and
    plans the kernel over the host indptr and lengths (``planned``), which the planned module SGLang's replay calls
    records alike; indices past their buffer raise, as FlashInfer does; a source of another shape than its buffer
    (FlashInfer's versions differ), a plan without CUDA graph, or a use of FlashInfer's own, is refused."""
    import torch

    from fuzz.engines.sglang.real.runtime.flashinfer_standins import MLAWrapper
    from fuzz.engines.sglang.real.stubs import StandInMissing

    def i32(*values: int) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.int32)

    qo, indptr, indices, lens = i32(0, 0), i32(0, 0), torch.zeros(8, dtype=torch.int32), i32(0)
    w = MLAWrapper(torch.empty(0), True, qo, indptr, indices, lens, "auto")
    w.plan(i32(0, 1), i32(0, 3), i32(5, 6, 7), i32(3), 16, 512, 64, 1, False, 1.0, None, None)
    assert indices[:4].tolist() == [5, 6, 7, 0] and indptr.tolist() == [0, 3] and lens.tolist() == [3]
    assert w.planned == ([0, 3], [3])
    w._cached_module.plan(None, None, None, i32(0, 1), i32(0, 5), i32(5), 16, 512, False)  # a replay's fast plan
    assert w.planned == ([0, 5], [5])
    with pytest.raises(ValueError, match="allocated buffer"):
        w.plan(i32(0, 1), i32(0, 9), torch.zeros(9, dtype=torch.int32), i32(9))
    with pytest.raises(StandInMissing, match="indptr has shape"):  # another batch size: FlashInfer's versions differ
        w.plan(i32(0, 1, 2), i32(0, 1, 2), i32(1, 2), i32(1, 1))
    with pytest.raises(ValueError, match="non-decreasing"):
        w._cached_module.plan(None, None, None, i32(1, 0), i32(0, 1), i32(1))
    with pytest.raises(StandInMissing):  # a run, FlashInfer's own
        w.run()
    with pytest.raises(StandInMissing):  # a plan without CUDA-graph buffers
        MLAWrapper(torch.empty(0), backend="auto").plan(qo, indptr, indices, lens)
