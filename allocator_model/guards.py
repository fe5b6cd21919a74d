"""SGLang's own checks that stop a decode step whose allocation would leave its row.

A leaf module (no torch): the findings layer parses guard names against
``Guard`` when it reads a signature.
"""

from __future__ import annotations

from fuzz.common.compat import StrEnum


class Guard(StrEnum):
    """SGLang's own checks that stop a decode step whose allocation (or table write) would leave its row (a crash,
    not a spill)."""

    # speculative/uno_info.py [cite: uno-row-guard]: RuntimeError when max(next_lengths) > req_to_token.shape[1].
    UNO_ROW = "uno_info.prepare_for_decode"
    # speculative/eagle_utils.py [cite: eagle-tree-row-assert]: when the allocator page > 1 and topk > 1, assert
    # max(nxt) <= req_to_token.shape[1] before allocating (every algorithm routed to eagle_prepare_for_decode:
    # all but the DFLASH family and UNO, spec_utils.py [cite: spec-decode-dispatch]).
    EAGLE_TREE_ROW = "eagle_utils.eagle_prepare_for_decode"
    # main's mem_cache/allocation_sizing.py: assert max_alloc_len <= row_width (the file's own function,
    # called through the real file when a target has it).
    ROW_WIDTH = "assert_alloc_within_row_width"
    # an attention backend's assert that a replay's write fits its CUDA-graph buffer (FA3's decode, FlashInfer's
    # multi-step draft [cite: flashinfer-draft-assert]): the step raises before its builder writes a table's row
    BUFFER_FITS = "assert_buffer_fits"
