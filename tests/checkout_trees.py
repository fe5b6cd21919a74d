"""Checkout-shaped SGLang trees from a release's wheel, with its known row-sizing bugs fixed or not, and plants.

The one fixture builder the write-path, root-cause, CI and mutation tests
share: ``build_tree(dest, release, fixed=..., plants=...)`` lays the wheel's
``sglang/srt`` and ``sglang/kernels`` out as a checkout does
(``dest/python/sglang/...``), applies the named fixes of the release's known
bugs and the named one-line plants, and returns ``dest``.  A base tree per
release is extracted once per process and each variant hard-links every file
it leaves alone, so a tree costs milliseconds and no disk.

Every edit is a short substitution of SGLang's own text, checked to match
exactly once (the wheel moved it: the fixture says so, never plants
nothing).  Nothing of SGLang is kept here beyond those few words.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hermetic import missing_wheel, pinned_wheel

SIZING = "srt/mem_cache/allocation_sizing.py"
CONFIGURATOR = "srt/mem_cache/kv_cache_configurator.py"
EAGLE = "srt/speculative/eagle_utils.py"
DFLASH = "srt/speculative/dflash_info_v2.py"
ALLOCATION = "srt/mem_cache/allocation.py"
ALLOCATOR_KERNELS = "kernels/ops/memory/allocator.py"
FA3 = "srt/layers/attention/flashattention_backend.py"
FA3_METADATA = "kernels/ops/attention/metadata.py"
TRTLLM_MHA = "srt/layers/attention/trtllm_mha_backend.py"
TRTLLM_MHA_METADATA = "kernels/ops/attention/trtllm_mha_graph_metadata.py"
FLASHMLA = "srt/layers/attention/flashmla_backend.py"
TRTLLM_MLA = "srt/layers/attention/trtllm_mla_backend.py"
TRITON = "srt/layers/attention/triton_backend.py"
FLASHINFER = "srt/layers/attention/flashinfer_backend.py"
FLASHINFER_MLA = "srt/layers/attention/flashinfer_mla_backend.py"
MEMORY_POOL = "srt/mem_cache/memory_pool.py"


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` by ``new`` in ``member`` (a path under ``sglang/``), ``count`` times exactly."""

    member: str
    old: str
    new: str
    count: int = 1


@dataclass(frozen=True)
class Change:
    """A named change of a tree: one of a release's known bugs fixed, or a plant."""

    name: str
    what: str
    edits: tuple[Edit, ...]


# -- 0.5.23's known row-sizing bugs, fixed as the reference model states the fix ------------------------------

FIXES: dict[str, Change] = {
    "page-1-headroom": Change(
        "page-1-headroom",
        "#33579: the row headroom covers the decode reserve at every allocator page, not only above page 1",
        (Edit(SIZING, "        if page_size > 1 or spec_algo.is_uno():\n", "        if True:  # (fixture) #33579\n"),),
    ),
    "unified-mamba-rows": Change(
        "unified-mamba-rows",
        "the unified Mamba builders size the row with get_req_to_token_extra_context_len(), not 4 + D",
        (
            Edit(
                CONFIGURATOR,
                "        extra_max_context_len = 4\n"
                "        if get_spec().speculative_num_draft_tokens is not None:\n"
                "            extra_max_context_len += get_spec().speculative_num_draft_tokens\n",
                "        extra_max_context_len = get_req_to_token_extra_context_len()  # (fixture)\n",
                count=2,
            ),
        ),
    ),
    "page-table-width": Change(
        "page-table-width",
        "the backends' CUDA-graph page tables (FA3's, trtllm_mha's, FlashMLA's, trtllm_mla's; triton's and "
        "FlashInfer's draft kv_indices, dense and MLA) sized from the req_to_token row they copy (the approach of PR "
        "#29665), not from context_len",
        (
            Edit(
                TRITON,
                "            max_bs, self.topk, self.max_context_len\n",
                "            max_bs, self.topk, self.pool_len  # (fixture)\n",
            ),
            Edit(  # the eager path's rows (init_forward_metadata): the same width, not executed here
                TRITON,
                "            forward_batch.batch_size, self.topk, self.max_context_len\n",
                "            forward_batch.batch_size, self.topk, self.pool_len  # (fixture)\n",
            ),
            *(  # FlashInfer's multi-step drafts (dense and MLA): the same rows and calls (pool_len the same width)
                Edit(
                    member,
                    f"            {n}, self.topk, self.max_context_len\n",
                    f"            {n}, self.topk, self.pool_len  # (fixture)\n",
                )
                for member in (FLASHINFER, FLASHINFER_MLA)
                for n in ("max_bs", "forward_batch.batch_size")
            ),
            Edit(
                TRTLLM_MLA,
                "max_blocks_per_seq = self._calc_padded_blocks(self.max_context_len)\n",
                "max_blocks_per_seq = self._calc_padded_blocks(self.req_to_token.shape[1])  # (fixture)\n",
                count=2,
            ),
            Edit(
                FLASHMLA,
                "                (max_bs, (self.max_context_len + PAGE_SIZE) // PAGE_SIZE),\n",
                "                (max_bs, (self.req_to_token.shape[1] + PAGE_SIZE - 1) // PAGE_SIZE),  # (fixture)\n",
            ),
            Edit(
                TRTLLM_MHA,
                "            self.max_context_len + self.page_size - 1\n        ) // self.page_size\n",
                "            self.req_to_token.shape[1] + self.page_size - 1  # (fixture) #29665\n"
                "        ) // self.page_size\n",
            ),
            Edit(
                FA3,
                "            self.max_context_len + self.page_size - 1\n        ) // self.page_size\n",
                "            self.req_to_token.shape[1] + self.page_size - 1  # (fixture) #29665\n"
                "        ) // self.page_size\n",
            ),
            Edit(
                FA3,
                "        max_num_pages = (self.max_context_len + self.page_size - 1) // self.page_size\n",
                "        max_num_pages = self.max_num_pages  # (fixture) #29665\n",
            ),
            Edit(
                FA3,
                "0, self.max_context_len, self.page_size, device=self.device\n",
                "0, self.req_to_token.shape[1], self.page_size, device=self.device  # (fixture)\n",
                count=3,
            ),
        ),
    ),
}
KNOWN_BUGS = tuple(FIXES)

# -- upstream's two proposed fixes of FA3's page-table width, each as its pull request describes its change -------
# (read through the search tool: sgl-project/sglang#29665, closed, "Size FA3 speculative page tables from
# req_to_token capacity"; #35985, open, "Fix FA3 page_table OOB near context wall under speculative decoding").

UPSTREAM_FIXES: dict[str, Change] = {
    "pr-29665": Change(  # FIXES["page-table-width"]'s edits of FA3's file: that fix is this approach
        "pr-29665",
        "PR #29665: FA3's CUDA-graph page tables and strided_indices sized from the req_to_token row "
        "(req_to_token.shape[1]); max_context_len kept as the model's context length",
        tuple(e for e in FIXES["page-table-width"].edits if e.member == FA3),
    ),
    "pr-35985": Change(
        "pr-35985",
        "PR #35985: FA3's max_context_len (hence max_num_pages, its page tables and strided_indices) widened by "
        "speculative_num_draft_tokens whenever speculation is on",
        (
            Edit(
                FA3,
                "        self.max_context_len = model_runner.model_config.context_len\n",
                "        self.max_context_len = model_runner.model_config.context_len + (\n"
                "            get_spec().speculative_num_draft_tokens or 0\n"
                "        )  # (fixture) #35985\n",
            ),
        ),
    ),
    "pr-29665-triton": Change(  # FIXES["page-table-width"]'s edit of triton's file: #29665's approach, on triton
        "pr-29665-triton",
        "PR #29665's approach applied to triton's draft kv_indices: each step's row (CUDA graph and eager) sized "
        "from the req_to_token row (the backend's pool_len, req_to_token.shape[1]) instead of max_context_len",
        tuple(e for e in FIXES["page-table-width"].edits if e.member == TRITON),
    ),
    "dsa-index-0.5.22": Change(  # 0.5.22's sizing of the DSA indexer's key cache, on 0.5.18's pool
        "dsa-index-0.5.22",
        "0.5.22's DSATokenToKVPool: the target pool's index key cache sized for the DCP allocator's locations, "
        "(size + page_size) * dcp_size - page_size",
        (
            Edit(
                MEMORY_POOL,
                "        if index_buf_size is None:\n            index_buf_size = size\n",
                "        if index_buf_size is None:\n"
                "            dcp_size = get_parallel().attn_dcp_size  # (fixture) 0.5.22\n"
                "            index_buf_size = (size + self.page_size) * dcp_size - self.page_size\n",
            ),
        ),
    ),
}

# -- plants in the write path (each found by run --profile ci on a fixed tree, each clean on the model) ------

PLANTS: dict[str, Change] = {
    "eagle-schedule-page": Change(
        "eagle-schedule-page",
        "eagle_prepare_for_decode rounds with the schedule's page, not the allocator's",
        (
            Edit(
                EAGLE,
                "from sglang.srt.runtime_context import get_spec\n",
                "from sglang.srt.runtime_context import get_schedule, get_spec\n",
            ),
            Edit(
                EAGLE,
                "    page_size = batch.token_to_kv_pool_allocator.page_size\n    double_alloc",
                "    page_size = get_schedule().page_size  # (plant)\n    double_alloc",
            ),
        ),
    ),
    "eagle-extra-page-reserve": Change(
        "eagle-extra-page-reserve",
        "eagle_prepare_for_decode passes an extra page of reserve to page_aligned_decode_alloc_lens",
        (Edit(EAGLE, "        reserve=double_alloc,\n", "        reserve=double_alloc + page_size,  # (plant)\n"),),
    ),
    "dflash-reserve-d": Change(
        "dflash-reserve-d",
        "DFLASH's prepare_for_decode reserves D instead of 2D",
        (Edit(DFLASH, "        reserve = 2 * block_size\n", "        reserve = block_size  # (plant)\n"),),
    ),
    "writer-mask-le": Change(
        "writer-mask-le",
        "assign_req_to_token_pool's mask lets one column more through (< turned <=)",
        (
            Edit(
                ALLOCATION, "        mask = save_offset < kv_end\n", "        mask = save_offset <= kv_end  # (plant)\n"
            ),
        ),
    ),
    "last-loc-wrong-lens": Change(
        "last-loc-wrong-lens",
        "alloc_for_spec_decode hands get_last_loc the new lengths instead of the current ones",
        (
            Edit(
                ALLOCATION,
                "                req_to_token_pool.req_to_token, req_pool_indices, cur_kv_lens\n",
                "                req_to_token_pool.req_to_token, req_pool_indices, cur_kv_lens - 1  # (plant)\n",
            ),
        ),
    ),
    "alloc-kernel-pages-off-by-one": Change(
        "alloc-kernel-pages-off-by-one",
        "alloc_extend_kernel counts one new page too many before its own",
        (
            Edit(
                ALLOCATOR_KERNELS,
                "    new_page_start_loc = sum_num_new_pages - num_page_start_loc_self\n\n    # Part 1",
                "    new_page_start_loc = sum_num_new_pages - num_page_start_loc_self + 1  # (plant)\n\n    # Part 1",
            ),
        ),
    ),
    "spec-decode-keeps-old-allocated": Change(
        "spec-decode-keeps-old-allocated",
        "alloc_for_spec_decode records kv_allocated_len one short of what it allocated",
        (
            Edit(
                ALLOCATION,
                "        req.kv.kv_allocated_len = max(req.kv.kv_allocated_len, nxt_kv_len)\n",
                "        req.kv.kv_allocated_len = max(req.kv.kv_allocated_len, nxt_kv_len - 1)  # (plant)\n",
            ),
        ),
    ),
}


# -- plants in FA3's page-table builders, one per category (each on a tree with its page tables fixed) -----------

PAGE_TABLE_PLANTS: dict[str, Change] = {
    "fa3-width-context-plus-drafts": Change(  # a width
        "fa3-width-context-plus-drafts",
        "FlashAttentionBackend sizes its graph page table C + D (the approach of PR #35985), not the req_to_token row",
        (
            Edit(
                FA3,
                "            self.req_to_token.shape[1] + self.page_size - 1  # (fixture) #29665\n",
                "            self.max_context_len + (get_spec().speculative_num_draft_tokens or 0) + self.page_size - 1"
                "  # (plant)\n",
            ),
        ),
    ),
    "fa3-decode-clamp-dropped": Change(  # a builder's write (on a tree whose page tables keep their width)
        "fa3-decode-clamp-dropped",
        "the decode metadata kernel stops clamping its live pages at the page table's width",
        (
            Edit(
                FA3_METADATA,
                "    num_live_pages = tl.minimum(\n"
                "        tl.cdiv(seq_len + SEQ_LEN_DELTA, PAGE_SIZE), max_seq_pages\n    )\n",
                "    num_live_pages = tl.cdiv(seq_len + SEQ_LEN_DELTA, PAGE_SIZE)  # (plant)\n",
            ),
        ),
    ),
    "fa3-verify-double-window": Change(  # a published length
        "fa3-verify-double-window",
        "the target verify adds the draft window to its lens and again as its delta",
        (
            Edit(
                FA3,
                "                    verify_lens = seq_lens\n",
                "                    verify_lens = seq_lens + self.speculative_num_draft_tokens  # (plant)\n",
            ),
        ),
    ),
    "fa3-draft-extend-double-window": Change(  # draft extend
        "fa3-draft-extend-double-window",
        "the draft extend adds the draft window to seq_lens that already include it",
        (
            Edit(
                FA3,
                "            seq_lens=forward_batch.seq_lens[:bs],\n"
                "            extend_seq_lens=forward_batch.extend_seq_lens[:bs],\n"
                "            page_size=self.page_size,\n",
                "            seq_lens=forward_batch.seq_lens[:bs] + self.speculative_num_draft_tokens,  # (plant)\n"
                "            extend_seq_lens=forward_batch.extend_seq_lens[:bs],\n"
                "            page_size=self.page_size,\n",
            ),
        ),
    ),
    "fa3-decode-source-stride": Change(  # what a builder copies: a stride of the wrong tensor
        "fa3-decode-source-stride",
        "the decode metadata kernel is launched with the page table's row stride for req_to_token's: it copies "
        "each request's pages from the wrong req_to_token row",
        (
            Edit(
                FA3_METADATA,
                "        seq_lens.stride(0),\n        req_to_token,\n        req_to_token.stride(0),\n",
                "        seq_lens.stride(0),\n        req_to_token,\n        page_table.stride(0),  # (plant)\n",
            ),
        ),
    ),
    "flashmla-width-context-pages": Change(  # a width, on a third backend (a tree sized from the row)
        "flashmla-width-context-pages",
        "FlashMLABackend sizes its graph table as FA3's upstream does, the context's pages rounded up, not the "
        "req_to_token row's",
        (
            Edit(
                FLASHMLA,
                "                (max_bs, (self.req_to_token.shape[1] + PAGE_SIZE - 1) // PAGE_SIZE),  # (fixture)\n",
                "                (max_bs, (self.max_context_len + PAGE_SIZE - 1) // PAGE_SIZE),  # (plant)\n",
            ),
        ),
    ),
    "trtllm-mla-pad-drops-grid-block": Change(  # a width and a builder's write (0.5.23's own tree): a fourth backend
        "trtllm-mla-pad-drops-grid-block",
        "trtllm_mla pads its graph table to trtllm-gen's 128-token constraint only, no longer to the kv-indices "
        "builder's 4096-token block: the builder's grid then runs past the row",
        (
            Edit(
                TRTLLM_MLA,
                "        constraint_lcm = math.lcm(trtllm_constraint, triton_constraint)\n",
                "        constraint_lcm = trtllm_constraint  # (plant)\n",
            ),
        ),
    ),
    "trtllm-mha-graph-clamp-dropped": Change(  # a builder's write (on a tree whose page tables keep their width)
        "trtllm-mha-graph-clamp-dropped",
        "trtllm_mha's fused graph-metadata kernel stops clamping its live pages at the page table's width",
        (
            Edit(
                TRTLLM_MHA_METADATA,
                "            num_live_pages = tl.minimum(tl.cdiv(seqlen, PAGE_SIZE), max_seq_pages)\n",
                "            num_live_pages = tl.cdiv(seqlen, PAGE_SIZE)  # (plant)\n",
            ),
        ),
    ),
    "flashinfer-draft-check-one-step-short": Change(  # a builder's write past a check (0.5.23's own tree): a 5th
        "flashinfer-draft-check-one-step-short",
        "FlashInfer's multi-step draft checks the slots of the S - 1 steps whose backends read its rows, forgetting "
        "that its one launch fills row S - 1 too: a request one slot short of the limit passes the check and the "
        "kernel stores past the last row",
        (
            Edit(
                FLASHINFER,
                "            seq_lens_sum, self.topk, bs, self.speculative_num_steps\n",
                "            seq_lens_sum, self.topk, bs, self.speculative_num_steps - 1  # (plant)\n",
            ),
        ),
    ),
}

# -- a plant in the DSA pool's sizing of its indexer's key cache (0.5.23's own tree sizes it for DCP) ------------

DSA_INDEX_PLANTS: dict[str, Change] = {
    "dsa-index-replicated-flag-inverted": Change(
        "dsa-index-replicated-flag-inverted",
        "DSATokenToKVPool sizes the target pool's index key cache as the draft's replicated one (the flag read the "
        "wrong way round): its pool's size alone, while the allocator hands out size * D locations",
        (
            Edit(
                MEMORY_POOL,
                "                size\n                if dcp_replicated\n",
                "                size\n                if not dcp_replicated  # (plant)\n",
            ),
        ),
    ),
}

# -- plants in the sizing file (a new cause beside the known ones: the baseline and root-cause tests) ----------

SIZING_PLANTS: dict[str, Change] = {
    "dflash-reserve-r": Change(
        "dflash-reserve-r",
        "get_alloc_reserve_per_decode reserves L, not 2L, for DFLASH (a standard-pool reserve bug)",
        (
            Edit(
                SIZING,
                "    return 2 * get_alloc_len_per_decode()\n",
                '    return (1 if get_spec().speculative_algorithm == "DFLASH" else 2) * get_alloc_len_per_decode()\n',
            ),
        ),
    ),
    # In the builders' file: the unified Mamba+SWA builder's own row arithmetic (its known bug, 4 + D, made worse).
    "unified-swa-rows-3": Change(
        "unified-swa-rows-3",
        "_init_unified_mamba_swa_pools sizes the row C + 3 + D (one column under its known bug's C + 4 + D)",
        (
            Edit(
                CONFIGURATOR,
                '            "unified tri-pool does not support an MLA full side yet"\n'
                "        )\n"
                "        # Mirror the non-shared path's extra_max_context_len computation.\n"
                "        extra_max_context_len = 4\n",
                '            "unified tri-pool does not support an MLA full side yet"\n'
                "        )\n"
                "        # Mirror the non-shared path's extra_max_context_len computation.\n"
                "        extra_max_context_len = 3  # (plant)\n",
            ),
        ),
    ),
}


# -- one plant per site of 0.5.23's write path that the decode steps reach (fuzz/engines/sglang/real/write_sites.json):
# site (its function and anchor) -> a one-line regression of that site's own line or of the value it stores ----
SPEC_UTILS_UNO = "srt/speculative/uno_info.py"
PAGED = "srt/mem_cache/allocator/paged.py"
TOKEN = "srt/mem_cache/allocator/token.py"


def _plant(name: str, what: str, member: str, old: str, new: str) -> Change:
    return Change(name, what, (Edit(member, old, new),))


SITE_PLANTS: dict[str, Change] = {
    "assign_req_to_token_pool token_pool + save_offset": _plant(
        "assign-store-from-last-committed",
        "assign_req_to_token_pool starts its store one column early (on the last committed column)",
        ALLOCATION,
        "    save_offset = tl.arange(0, BLOCK_SIZE) + kv_start\n",
        "    save_offset = tl.arange(0, BLOCK_SIZE) + kv_start - 1  # (plant)\n",
    ),
    "assign_req_to_token_pool_func assign_req_to_token_pool": _plant(
        "assign-launch-one-program-short",
        "assign_req_to_token_pool_func launches one program fewer than the batch (the last request unwritten)",
        ALLOCATION,
        "    assign_req_to_token_pool[(batch_size,)](\n",
        "    assign_req_to_token_pool[(max(batch_size - 1, 1),)](  # (plant)\n",
    ),
    "alloc_for_spec_decode assign_req_to_token_pool_func": _plant(
        "spec-decode-writes-one-short",
        "alloc_for_spec_decode hands the writer nxt - 1 as the end (the last allocated column unwritten)",
        ALLOCATION,
        "            cur_kv_lens,\n            nxt_kv_lens,\n            out_cache_loc,\n",
        "            cur_kv_lens,\n            nxt_kv_lens - 1,  # (plant)\n            out_cache_loc,\n",
    ),
    "alloc_for_decode_default batch.req_to_token_pool.write": _plant(
        "decode-writes-last-committed-column",
        "alloc_for_decode writes the new slot at seq_len - 1 (over the last committed token's slot)",
        ALLOCATION,
        "        locs = seq_lens_gpu.clone()\n",
        "        locs = seq_lens_gpu - 1  # (plant)\n",
    ),
    "alloc_token_slots allocator.alloc": _plant(
        "token-slots-one-extra",
        "alloc_token_slots asks the allocator for one slot more than it writes",
        ALLOCATION,
        "    out_cache_loc = allocator.alloc(num_tokens)\n",
        "    out_cache_loc = allocator.alloc(num_tokens + 1)  # (plant)\n",
    ),
    "alloc_paged_token_slots_extend allocator.alloc_extend": _plant(
        "paged-extend-last-loc-past",
        "alloc_paged_token_slots_extend hands the allocator last_loc + 1 (the partial page continued one late)",
        ALLOCATION,
        "        last_loc,\n        extend_num_tokens,\n        **extra_alloc_kwargs,\n",
        "        last_loc + 1,  # (plant)\n        extend_num_tokens,\n        **extra_alloc_kwargs,\n",
    ),
    "alloc_paged_token_slots_decode allocator.alloc_decode": _plant(
        "paged-decode-last-loc-before",
        "alloc_paged_token_slots_decode hands the allocator last_loc - 1 (the last committed slot handed again)",
        ALLOCATION,
        "    out = allocator.alloc_decode(seq_lens, seq_lens_cpu, last_loc, **extra_alloc_kwargs)\n",
        "    out = allocator.alloc_decode(seq_lens, seq_lens_cpu, last_loc - 1, **extra_alloc_kwargs)  # (plant)\n",
    ),
    "alloc_decode_kernel out_indices + pid": _plant(
        "decode-kernel-continues-on-last",
        "alloc_decode_kernel continues the page at last_loc, not last_loc + 1",
        ALLOCATOR_KERNELS,
        "        tl.store(out_indices + pid, last_loc + 1)\n",
        "        tl.store(out_indices + pid, last_loc)  # (plant)\n",
    ),
    "alloc_decode_kernel out_indices + pid #2": _plant(
        "decode-kernel-next-free-page",
        "alloc_decode_kernel takes the free page after its own (off by one in the free-page index)",
        ALLOCATOR_KERNELS,
        "        page = tl.load(free_page_ptr + new_page_start_loc)\n",
        "        page = tl.load(free_page_ptr + new_page_start_loc + 1)  # (plant)\n",
    ),
    "alloc_extend_kernel out_indices + output_start_loc + offset_one_page": _plant(
        "extend-kernel-part1-on-last",
        "alloc_extend_kernel fills the old partial page from last_loc, not last_loc + 1",
        ALLOCATOR_KERNELS,
        "        last_loc + 1 + offset_one_page,\n",
        "        last_loc + offset_one_page,  # (plant)\n",
    ),
    "alloc_extend_kernel out_indices + output_start_loc + num_part1 + offset": _plant(
        "extend-kernel-part2-page-past",
        "alloc_extend_kernel's full pages start one free page late",
        ALLOCATOR_KERNELS,
        "            free_page_ptr + new_page_start_loc + offset // page_size,\n",
        "            free_page_ptr + new_page_start_loc + offset // page_size + 1,  # (plant)\n",
    ),
    "PagedTokenToKVPoolAllocator.alloc_extend def": _plant(
        "paged-extend-keeps-last-page-free",
        "PagedTokenToKVPoolAllocator.alloc_extend takes one page fewer off its free list than it handed out",
        PAGED,
        "                prefix_lens=prefix_lens_cpu,\n            )\n\n"
        "        self.free_pages = self.free_pages[num_new_pages:]\n",
        "                prefix_lens=prefix_lens_cpu,\n            )\n\n"
        "        self.free_pages = self.free_pages[max(num_new_pages - 1, 0):]  # (plant)\n",
    ),
    "PagedTokenToKVPoolAllocator.alloc_decode def": _plant(
        "paged-decode-keeps-page-free",
        "PagedTokenToKVPoolAllocator.alloc_decode takes one page fewer off its free list than it handed out",
        PAGED,
        "            assert len(torch.unique(out_indices)) == len(out_indices)\n\n"
        "        self.free_pages = self.free_pages[num_new_pages:]\n        return out_indices\n\n    def free(",
        "            assert len(torch.unique(out_indices)) == len(out_indices)\n\n"
        "        self.free_pages = self.free_pages[max(num_new_pages - 1, 0):]  # (plant)\n"
        "        return out_indices\n\n    def free(",
    ),
    "TokenToKVPoolAllocator.alloc def": _plant(
        "token-alloc-skips-first-free",
        "TokenToKVPoolAllocator.alloc hands out the slots after the first free one, and drops only need_size",
        TOKEN,
        "        select_index = self.free_pages[:need_size]\n",
        "        select_index = self.free_pages[1 : need_size + 1]  # (plant)\n",
    ),
    "eagle_prepare_for_decode alloc_for_spec_decode": _plant(
        "eagle-uniform-growth",
        "eagle_prepare_for_decode grows every request by the batch's mean (num_needed_tokens // bs)",
        EAGLE,
        "    nxt_kv_lens = nxt_kv_lens_device\n",
        "    nxt_kv_lens = cur_kv_lens_device + num_needed_tokens // len(reqs)  # (plant)\n",
    ),
    "DFlashDraftInputV2.prepare_for_decode alloc_for_spec_decode": _plant(
        "dflash-uniform-growth",
        "DFLASH's prepare_for_decode grows every request by the batch's mean on the device",
        DFLASH,
        "            nxt_kv_lens.copy_(nxt_kv_lens_cpu_t, non_blocking=True)\n",
        "            nxt_kv_lens.copy_(cur_kv_lens_cpu_t + num_needed_tokens // bs, non_blocking=True)  # (plant)\n",
    ),
    "UnoDraftInput.prepare_for_decode alloc_for_spec_decode": _plant(
        "uno-device-lengths-one-past",
        "UNO's prepare_for_decode hands the writer the current lengths one past (column kv_allocated_len unwritten)",
        SPEC_UTILS_UNO,
        "            cur_kv_lens=current_device,\n",
        "            cur_kv_lens=current_device + 1,  # (plant)\n",
    ),
}
SITE_PLANT_NAMES = {c.name: c for c in SITE_PLANTS.values()}


@functools.cache
def base_tree(release: str) -> Path:
    """The release's wheel laid out as a checkout, once per process (read-only by convention), removed when the
    process ends (about 100 MB a release: every worker and subprocess that builds one would leave it behind)."""
    wheel = pinned_wheel(release)
    if wheel is None:
        pytest.skip(missing_wheel(release))  # a test that needs the tree skips, saying why and how to get it
    root = Path(tempfile.mkdtemp(prefix=f"kvrow-sglang-{release}-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if (
                name.startswith(("sglang/srt/", "sglang/kernels/"))
                or name.count("/") == 1
                and name.startswith("sglang/")
            ):
                z.extract(name, root / "python")
    return root


def build_tree(
    dest: Path, release: str = "0.5.23", *, fixed: tuple[str, ...] = (), plants: tuple[str, ...] = ()
) -> Path:
    """A checkout-shaped tree of ``release`` at ``dest`` with the ``fixed`` known bugs fixed and the ``plants``."""
    base = base_tree(release)
    changes = [FIXES[n] if n in FIXES else UPSTREAM_FIXES[n] for n in fixed] + [
        PLANTS.get(n)
        or SITE_PLANT_NAMES.get(n)
        or PAGE_TABLE_PLANTS.get(n)
        or DSA_INDEX_PLANTS.get(n)
        or SIZING_PLANTS[n]
        for n in plants
    ]
    edited = {e.member for c in changes for e in c.edits}
    for directory, _, files in os.walk(base):
        rel = Path(directory).relative_to(base)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            source, target = Path(directory) / name, dest / rel / name
            member = str((rel / name).relative_to("python/sglang")) if str(rel).startswith("python/sglang") else None
            if member in edited:
                shutil.copyfile(source, target)
            else:
                os.link(source, target)
    for change in changes:
        for e in change.edits:
            path = dest / "python" / "sglang" / e.member
            path.write_text(_edited(path.read_text(), change, e))
    return dest


def _edited(text: str, change: Change, e: Edit) -> str:
    if text.count(e.old) != e.count:
        raise AssertionError(f"{change.name}: {e.member} holds {text.count(e.old)} of {e.old!r}, not {e.count}")
    return text.replace(e.old, e.new)


def patch_of(release: str, fixed: tuple[str, ...]) -> str:
    """The unified diff (``git diff``'s shape: ``a/python/sglang/...``) that the named fixes make of ``release``'s
    tree: what a pull request's patch file holds, computed from the wheel and the anchored edits."""
    import difflib

    base = base_tree(release)
    changes = [FIXES[n] if n in FIXES else UPSTREAM_FIXES[n] for n in fixed]
    out: list[str] = []
    for member in sorted({e.member for c in changes for e in c.edits}):
        before = (base / "python" / "sglang" / member).read_text()
        after = before
        for c in changes:
            for e in c.edits:
                after = _edited(after, c, e) if e.member == member else after
        name = f"python/sglang/{member}"
        out += difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{name}", f"b/{name}"
        )
    return "".join(out)


def sizing_file(root: Path) -> Path:
    return root / "python" / "sglang" / SIZING
