"""Three SGLang write paths the model does not step through, each with the claim that it widens no write's bounds.

Each claim is read in the released 0.5.23 wheel of the user's cache (skipped
when absent: tests never download), at the cited file and line, and its
arithmetic consequence is checked on the model's own scheduler rules, so a
release that changes the path, or a model whose bound moves, fails here:

* encoder-decoder decode writes at ``encoder_len + seq_len`` (``mem_cache/allocation.py`` 658-661), where
  ``seq_len`` excludes the encoder tokens the prompt carries (``managers/schedule_batch.py`` 2759-2760):
  the absolute column is the whole sequence length, bounded as a decoder-only request's.
* PD decode pre-allocates ``fill_len = len(origin_input_ids) + max(len(output_ids) - 1, 0)`` columns
  (``disaggregation/decode.py`` 947-960, set as kv_committed_len at 2263-2264): a prefill of the committed
  length, no longer than the retracted re-prefill the model has (``scheduler.reached_by``).
* mixed chunked prefill with speculation (EAGLE, EAGLE3, DFLASH, DSPARK: ``speculative/spec_info.py``
  147-158) reads each running request's slot at ``seqlen - 1`` (``managers/schedule_batch.py`` 3290-3301),
  a column the request's own decode allocation already holds: no new write.
"""

from __future__ import annotations

import functools
import glob
import os
import zipfile

import pytest

from allocator_model import algorithms as algo
from allocator_model.config import ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool
from allocator_model.revisions import REFERENCE, REVISIONS
from allocator_model.scheduler import committed_len, decode_alloc_bound, max_prompt_len, max_total_len

RELEASE = "0.5.23"
SLACK = 15  # lines a cited statement may move within the cited release before the citation counts as stale


def wheel_source(member: str) -> list[str]:
    """Lines of ``sglang/srt/<member>`` in the cached 0.5.23 wheel (the test is skipped without one)."""
    cache = os.path.expanduser("~/.cache/kvrow-fuzz/wheels")
    found = glob.glob(os.path.join(cache, f"sglang-{RELEASE}-*.whl"))
    if not found:
        pytest.skip(f"sglang {RELEASE} wheel not cached (tests never download)")
    return _members(found[0])[member]


@functools.cache
def _members(wheel: str) -> dict[str, list[str]]:
    """The cited members of ``wheel``, read once (opening the wheel's directory is what costs)."""
    with zipfile.ZipFile(wheel) as z:
        return {m: z.read(f"sglang/srt/{m}").decode().splitlines() for m in MEMBERS}


MEMBERS = (
    "mem_cache/allocation.py",
    "managers/schedule_batch.py",
    "disaggregation/decode.py",
    "speculative/spec_info.py",
)


def cited(member: str, statement: str, line: int) -> int:
    """The 1-based line of ``statement`` in ``member`` nearest ``line``; fails if it is not within ``SLACK``."""
    lines = wheel_source(member)
    hits = [i + 1 for i, text in enumerate(lines) if statement in " ".join(text.split())]
    assert hits, f"{member}: {statement!r} is gone from {RELEASE}: the claim must be re-read"
    near = min(hits, key=lambda n: abs(n - line))
    assert abs(near - line) <= SLACK, f"{member}: {statement!r} moved to line {near} (cited {line})"
    return near


CONFIGS = [
    ServingConfig.resolve(context_len=c, page_size=p, max_total_num_tokens=cap, kv_pool=kind, **spec)
    for c, p, cap in ((4093, 64, None), (512, 1, 300), (1000, 16, 640))
    for kind in (KVPool.STANDARD, KVPool.UNIFIED_MAMBA)
    for spec in ({}, {"speculative_algorithm": algo.EAGLE})
]


def test_encoder_decoder_writes_at_the_whole_sequence_length_which_the_decoder_bound_covers():
    cited("mem_cache/allocation.py", "locs = batch.encoder_lens + seq_lens_gpu", 659)
    cited("managers/schedule_batch.py", "seq_lens[i] -= encoder_len", 2760)
    cited("managers/schedule_batch.py", "input_ids[i] = input_ids[i][encoder_len:]", 2765)
    for cfg in CONFIGS:
        width = ModelSizing(REFERENCE).req_to_token_row_width(cfg)
        total = max_total_len(cfg)  # prompt (encoder tokens included) + outputs, at the admission limit
        for encoder_len in (0, 1, max_prompt_len(cfg)):
            seq_len = committed_len(total) - encoder_len  # the decoder's seq_len: the encoder tokens taken out
            column = encoder_len + seq_len  # allocation.py: the absolute column of the decode write
            # The decoder-only request of the same length writes at the same column: the bound is the same one.
            assert column == committed_len(total) and decode_alloc_bound(cfg, REFERENCE) <= column < width, cfg.short()


def test_pd_decode_preallocates_the_committed_length_a_re_prefill_already_reaches():
    cited("disaggregation/decode.py", "return len(req.origin_input_ids) + max(len(req.output_ids) - 1, 0)", 960)
    cited("disaggregation/decode.py", "return len(req.origin_input_ids) + len(req.output_ids)", 959)
    cited("disaggregation/decode.py", "req.kv.kv_committed_len = fill_len", 2264)
    for cfg in CONFIGS:
        for name in ("reference", "sglang-0.5.23"):
            revision = REVISIONS[name]
            width = ModelSizing(revision).req_to_token_row_width(cfg)
            # The rebootstrap branch (the longer) fills prompt + outputs, at most the admission limit.
            assert max_total_len(cfg) < cfg.context_len <= width, (name, cfg.short())


def test_mixed_chunked_prefill_with_spec_reads_the_committed_column_it_already_holds():
    cited("managers/schedule_batch.py", "[r.seqlen - 1 for r in running_batch.reqs],", 3294)
    cited("managers/schedule_batch.py", "tail_base,", 3299)
    start = cited("speculative/spec_info.py", "def supports_mixed_chunk(self) -> bool:", 147)
    body = " ".join(wheel_source("speculative/spec_info.py")[start : start + 12])
    runs = {a for a in algo.ALL if f"SpeculativeAlgorithm.{a}," in body}
    assert runs == {algo.EAGLE, algo.EAGLE3, algo.DFLASH, algo.DSPARK}, runs
    # The column read, seqlen - 1 = kv_committed_len - 1 after prepare_for_decode, sits below the committed
    # length, which never passes the allocation (the lifecycle's kv-lens-ordered invariant).
    for cfg in CONFIGS:
        c = decode_alloc_bound(cfg, REFERENCE)
        assert 0 <= c - 1 < c <= ModelSizing(REFERENCE).req_to_token_row_width(cfg)
