"""What a backend's builders copy into its page table: every page index in the part of a row the kernel reads is a
page of the request's own ``req_to_token`` row (``copied-from-own-row``).

SGLang's own builders copy page j of a row from the request's ``req_to_token`` column j * P: a length past that
row's width reads the next request's row (its flat layout), and those pages reach the kernel.  Measured on what
each builder stored (``Build.foreign``: the entries that are no page of the request's row), held equal to the
model's twin (``foreign_pages``) on a row narrower than the length a decode publishes; a plant that launches the
decode builder with another tensor's stride is found by this property alone (``tests/test_page_table_checkout.py``).
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from graph_twin import spec_config, twin  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402

from allocator_model import page_tables as pt  # noqa: E402
from allocator_model.page_tables import pages  # noqa: E402
from fuzz.engines.sglang.backends import CHECKED  # noqa: E402

# (backend, context, page): a context each builds at a page it keeps; a backend whose table holds its draft steps alone
# builds no decode (triton: its narrow-row copies are ``test_triton_builders.py``'s)
DECODES = [b for b in CHECKED if not CHECKED[b].table.draft_steps_only]
AT = {
    pt.AttentionBackend.FA3: (256, 16),
    pt.AttentionBackend.TRTLLM_MHA: (256, 16),
    pt.AttentionBackend.FLASHMLA: (256, 64),
    pt.AttentionBackend.TRTLLM_MLA: (4096, 64),
}


@pytest.mark.parametrize("backend", DECODES, ids=[b.value for b in DECODES])
def test_a_decode_past_a_narrow_req_to_token_row_copies_the_next_requests_pages_as_the_twin_says(backend) -> None:
    """The decode builders read ``req_to_token`` through a pointer (triton), so a length past the row reads the next
    one; the draft extend's torch gather raises there instead (an IndexError: no copy), so speculation stays out."""
    assert set(AT) == set(DECODES)
    r = runtime("0.5.23")
    context, page = AT[backend]
    cfg, rt = spec_config(context, page, None)
    seq = context - 2 * page + 1  # a row of seq - 1 = whole pages: the decode reads a page past it
    row = seq - 1
    (decode,) = _builds(r, backend, cfg, rt, seq, row)
    assert [decode] == twin(backend, "0.5.23", cfg, rt, seq, row)
    assert decode.foreign == decode.used - pages(row, page) == 1, decode
    wide = _builds(r, backend, cfg, rt, seq, context + 64)  # a row as wide as SGLang sizes it: nothing foreign
    assert wide == twin(backend, "0.5.23", cfg, rt, seq, context + 64) and wide[0].foreign == 0


def _builds(r, backend, cfg, rt, seq, row):
    from fuzz.engines.sglang.real.runtime.attention import graph_builds

    return graph_builds(r, backend, cfg, rt, seq, row)
