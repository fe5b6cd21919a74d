"""The DSA indexer's key cache's advisory account (``Table.explain``): the cache's extent and who sized it, the DCP
allocator's pages, those stored past it, the fix, from the example case's build on the target."""

from __future__ import annotations

from dataclasses import dataclass

from allocator_model.dsa_index import index_buf_size
from fuzz.tables.declared import Explained

from .advisory_parts import code


@dataclass(frozen=True)
class Built:
    """What the example case's build on the target gave (``dsa_index.explain`` fills it): the pool's size, page and
    DCP size, its ``index_buf_size`` (None: not kept), the cache's locations, the allocator's largest location,
    page and last page, who built it and where the case ran."""

    size: int
    p: int
    dcp: int
    buf: int | None
    locations: int
    largest: int
    page: int
    last: int
    observer: str
    on_model: bool
    ran_on: str


def account(b: Built) -> Explained:
    """The advisory's account: the cache's extent and who sized it, the DCP allocator's pages, those stored past it."""
    size, p, dcp, buf, locations, largest, page, last = (
        b.size,
        b.p,
        b.dcp,
        b.buf,
        b.locations,
        b.largest,
        b.page,
        b.last,
    )
    first = locations // page  # the first allocator page whose locations reach past the cache
    forms = {index_buf_size(size, p, dcp, False): "the pool's size alone",
             index_buf_size(size, p, dcp, True): "(size + page_size) * dcp_size - page_size"}  # fmt: skip
    shown = (
        f"`index_buf_size` = {buf}" + (f" ({forms[buf]})" if buf in forms else "")
        if buf is not None
        else "`index_buf_size` (not kept on the pool)"
    )
    where = "the model's twin sizes" if b.on_model else "SGLang's own DSATokenToKVPool.__init__() allocated"
    share = 100 * (last - first + 1) // last
    mismatch = (
        " ".join(
            (
                f"The index key cache of the target's pool holds {locations} locations: {shown}, in whole pages of "
                f"{p} plus one ({locations // p} pages), as {where} it for a pool of {size} tokens.",
                f"Under `--dcp-size {dcp}` the allocator is the paged allocator over size * dcp_size = {size * dcp} "
                f"tokens in pages of page_size * dcp_size = {page}: pages 1 to {last}, its largest location "
                f"{largest}.",
                f"The indexer stores each token's index key at the allocator's location (`loc // {p}`, no bounds "
                f"check; every DCP rank keeps every key), so allocator pages {first} to {last} (locations "
                f"{first * page} to {largest}, {share}% of the pool's pages) reach past the cache's end.",
            )
        ),
        "",
        f"Confirmed on {b.observer}: the extent is the buffer the pool's own constructor allocated (on the "
        f"`meta` device), the pages those its own allocator hands out, run from {code(b.ran_on)}.",
        "",
        "The store past the cache happens in the indexer's store kernel (CUDA, or triton's `_set_k_and_s_triton_"
        "kernel`), which this machine does not run: it writes past the buffer, into another allocation's memory. "
        "SGLang accepts the launch (no check refuses DSA with DCP before 0.5.22), though before 0.5.22 its DSA "
        "attention backend has no DCP code of its own: the store past the cache is one failure of a launch that "
        "boots.",
        "",
    )
    fix = (
        "size the target pool's index key cache for the DCP allocator's locations, as 0.5.22 does: `index_buf_size "
        "= (size + page_size) * dcp_size - page_size` (the draft's replicated pool keeps `size`)"
    )
    reads = (
        "the DSA pool's class and its paged allocator are read and run from there; needs `pip install kvrow-fuzz` "
        "and triton"
    )
    return Explained("the indexer stores past the cache's end; nothing stops it", mismatch, fix, reads)
