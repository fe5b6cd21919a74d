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

import functools
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from hermetic import pinned_wheel

SIZING = "srt/mem_cache/allocation_sizing.py"
CONFIGURATOR = "srt/mem_cache/kv_cache_configurator.py"
EAGLE = "srt/speculative/eagle_utils.py"
DFLASH = "srt/speculative/dflash_info_v2.py"
ALLOCATION = "srt/mem_cache/allocation.py"
ALLOCATOR_KERNELS = "kernels/ops/memory/allocator.py"


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
}
KNOWN_BUGS = tuple(FIXES)

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
}


@functools.cache
def base_tree(release: str) -> Path:
    """The release's wheel laid out as a checkout, once per process (read-only by convention)."""
    wheel = pinned_wheel(release)
    if wheel is None:
        raise FileNotFoundError(f"no wheel of sglang=={release} (./kvrow test fetches the pinned ones)")
    root = Path(tempfile.mkdtemp(prefix=f"kvrow-sglang-{release}-"))
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
    changes = [FIXES[n] for n in fixed] + [PLANTS.get(n) or SIZING_PLANTS[n] for n in plants]
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
            text = path.read_text()
            if text.count(e.old) != e.count:
                raise AssertionError(f"{change.name}: {e.member} holds {text.count(e.old)} of {e.old!r}, not {e.count}")
            path.write_text(text.replace(e.old, e.new))
    return dest


def sizing_file(root: Path) -> Path:
    return root / "python" / "sglang" / SIZING
