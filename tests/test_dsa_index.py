"""The DSA indexer's key cache under DCP (issue 36): SGLang's own pool and allocator, the twin, and the table.

The cache's extent is what the release's own ``DSATokenToKVPool.__init__`` allocates (executed on the ``meta``
device over a stand-in of its MLA base: ``real.runtime.dsa_index``) and the allocator's largest location its own
``PagedTokenToKVPoolAllocator`` of a DCP launch's; the twin (``allocator_model.dsa_index``) equals both on every
pinned release, at every DCP size and at pool sizes on and off the page.  The wheels' facts, per release
(``mem_cache/memory_pool.py``: ``class DSATokenToKVPool``; its ``index_buf_size``; where its buffer's rows are
``(index_buf_size + page_size + 1) // page_size``):

* 0.5.13: 2188; ``index_buf_size = size`` 2231 (a local); rows inline 2260
* 0.5.14: 2492; 2535; inline 2564
* 0.5.15: 3009; 3052; inline 3081
* 0.5.16: 4210; ``self.index_buf_size`` 4253; ``_create_index_buffers`` 4279
* 0.5.17: 4322; 4365; ``_create_index_buffers`` 4392
* 0.5.18-0.5.21: 4348, 4396, 4798, 4869; ``self.index_buf_size = size``; ``IndexKeyCache`` (``index_key_cache.py``
  17)
* 0.5.22: 5151; ``(size + self.page_size) * dcp_size - self.page_size`` 5214; ``IndexKeyCache`` 18
* 0.5.23: 5279; 5342; ``IndexKeyCache`` 24

The paged allocator of a DCP launch is ``PagedTokenToKVPoolAllocator(max_total_num_tokens * attn_dcp_size,
page_size=page_size * attn_dcp_size)`` (``kv_cache_configurator.py``: 0.5.18 1713, 0.5.23 2930; the ModelRunner
mixin 1132 in 0.5.15), its free pages ``arange(1, num_pages + 1)`` (``allocator/paged.py``).  The indexer stores at
the allocator's location (``layers/attention/dsa/dsa_indexer.py`` ``Indexer._store_index_k_cache``: 0.5.18 1475,
0.5.23 1825, ``forward_batch.out_cache_loc`` unchanged), so 0.5.15-0.5.21 store the upper half of a DCP 2
allocator's pages past the cache; 0.5.22 sized it for them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports triton

from hermetic import PINNED_RELEASES  # noqa: E402
from test_sglang_runtime import runtime  # noqa: E402

from allocator_model.config import ServingConfig  # noqa: E402
from allocator_model.dsa_index import DSA_PAGE, dcp_largest_location, index_buf_size, index_locations  # noqa: E402
from allocator_model.revisions import REFERENCE, RELEASE_REVISIONS, get_revision  # noqa: E402
from fuzz.cli import main  # noqa: E402
from fuzz.engines.sglang.backends import backend_of  # noqa: E402
from fuzz.engines.sglang.dsa_index import config as dsa  # noqa: E402
from fuzz.engines.sglang.launch import launch_line  # noqa: E402

TABLE = "dsa_index_key_cache"
GROUP = f"write-within-row/dcp>1@{TABLE}"
SIZES = (4096, 4097, 4159, 4160, 4161, 6000, (1 << 20) + 37)
# Every release the model knows: the pinned ones in the default tier, the rest in the network tier (their wheels).
EVERY_RELEASE = [v if v in PINNED_RELEASES else pytest.param(v, marks=pytest.mark.network) for v in RELEASE_REVISIONS]


@pytest.mark.parametrize("version", EVERY_RELEASE)
def test_the_twin_is_sglangs_own_pool_and_allocator(version: str) -> None:
    from fuzz.engines.sglang.real.runtime.dsa_index import build_index_cache, dcp_allocator, largest_location

    r = runtime(version)
    widened = get_revision(RELEASE_REVISIONS[version]).dsa_index_dcp_widened
    for dcp in (1, 2, 4, 8):
        for size in SIZES:
            built = build_index_cache(r.tree, size, DSA_PAGE, dcp)
            assert built.page == DSA_PAGE
            assert built.locations == index_locations(size, DSA_PAGE, dcp, widened), (version, dcp, size)
            kept = built.index_buf_size  # on the pool from 0.5.16 (a local of __init__ before)
            assert kept is None or kept == index_buf_size(size, DSA_PAGE, dcp, widened), (version, dcp, size)
            largest = largest_location(dcp_allocator(r, dsa(size, dcp), size))
            assert largest == dcp_largest_location(size, DSA_PAGE, dcp), (version, dcp, size)


def test_the_cache_holds_every_location_exactly_when_widened() -> None:
    """Widened (0.5.22+), the cache holds every allocator location, at every size and DCP size, with no room to spare
    where the page divides the size; sized from the pool alone it holds them only at DCP 1."""
    for dcp in (1, 2, 3, 4, 8, 16):
        for size in range(4096, 4096 + DSA_PAGE * dcp + 1):
            largest = dcp_largest_location(size, DSA_PAGE, dcp)
            widened = index_locations(size, DSA_PAGE, dcp, True)
            assert widened > largest and (widened == largest + 1 or size % DSA_PAGE)
            assert (index_locations(size, DSA_PAGE, dcp, False) > largest) == (dcp == 1)


def _groups(tmp_path: Path, target: str, *extra: str) -> tuple[int, dict[str, dict]]:
    report = tmp_path / "r.json"
    args = ["run", "--target", target, "--profile", "ci", "--max-examples", "20", "--quiet", "--json", str(report)]
    code = main([*args, "--cases", str(tmp_path / "c"), "--pin", f"page_size={DSA_PAGE}", *extra])
    (t,) = json.loads(report.read_text())["targets"]
    assert t["tables"][TABLE]["judged"], t["tables"][TABLE]  # judged: an empty list below is a clean verdict
    return code, {f["signature"]: f for f in t["findings"] if f.get("case", {}).get("table") == TABLE}


@pytest.mark.parametrize(
    ("target", "found"), [("reference", False), ("reference@sglang-0.5.18", True), ("reference@sglang-0.5.23", False)]
)
def test_run_finds_the_undersized_cache_and_stays_quiet_on_the_sized_one(
    target: str, found: bool, tmp_path: Path
) -> None:
    _, groups = _groups(tmp_path, target)
    assert list(groups) == ([GROUP] if found else [])
    if found:
        f = groups[GROUP]
        assert f["config"]["attn_dcp_size"] > 1 and f["case"]["data"]["page"] >= 1
        line = launch_line(ServingConfig.from_dict(f["config"]), backend_of(TABLE))
        assert "--attention-backend dsa" in line and "--dcp-size" in line and "MODEL: a DSA model" in line


def test_prove_finds_the_same_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for target, found in (("reference@sglang-0.5.18", True), ("reference", False)):
        main(["prove", "--target", target, "--space", "tiny", "--quiet", "--cases", str(tmp_path / target)])
        out = capsys.readouterr().out
        flat = " ".join(out.split())
        assert f"table {TABLE}: checked 7,680 configurations" in flat  # every residue, both ends, every DCP size
        assert "every pool size in one allocator page from 4,096, 1,048,576, 4,193,280 tokens" in flat
        assert "at DCP 1, 2, 3, 4, 6, 8, 16)" in flat  # every DCP size the space draws
        assert (GROUP in out) == found, out
        assert (f"no configuration of the space reaches past a part of {TABLE}" in out) == (not found)


def test_a_case_of_another_shape_is_bad_input(
    pinned_wheels, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = {"schema": "kvrow-fuzz/case", "schema_version": 1, "kind": "table-case", "target": "reference@sglang-0.5.18",
            "config": dsa(4096, 2).to_dict(), "case": {"table": TABLE, "data": {"page": 64}},
            "property": "write-within-row", "signature": GROUP}  # fmt: skip
    path = tmp_path / "case.json"
    path.write_text(json.dumps(case))
    assert main(["repro", str(path)]) == 1  # the last page of a DCP 2 allocator: stored past the cache
    capsys.readouterr()
    bad_data = [{"page": "64"}, {"page": 64, "extra": 1}, {"page": 65}, {"page": 0}]
    for data in bad_data:
        path.write_text(json.dumps({**case, "case": {"table": TABLE, "data": data}}))
        assert main(["repro", str(path)]) == 2, data
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    # a pool smaller than a page (no allocator page), another pool's kind, another page: on the model and on the
    # release's own code
    small = {**dsa(4096, 2).to_dict(), "max_total_num_tokens": 63}
    swa = {**dsa(4096, 2).to_dict(), "kv_pool": "swa"}
    for cfg in (small, swa, {**dsa(4096, 2).to_dict(), "page_size": 32}):
        path.write_text(json.dumps({**case, "config": cfg, "case": {"table": TABLE, "data": {"page": 1}}}))
        for target in ((), ("--target", "sglang==0.5.18")):
            assert main(["repro", str(path), *target]) == 2, (cfg, target)
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_the_reference_revision_sizes_it_for_dcp() -> None:
    assert REFERENCE.dsa_index_dcp_widened
    assert [v for v, r in RELEASE_REVISIONS.items() if not get_revision(r).dsa_index_dcp_widened] == [
        f"0.5.{n}" for n in range(13, 22)
    ]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from checkout_trees import build_tree
    from test_sglang_runtime import need_triton

    need_triton()
    root = tmp_path_factory.mktemp("dsa-trees")
    planted = build_tree(root / "planted", "0.5.23", plants=("dsa-index-replicated-flag-inverted",))
    return {"own": build_tree(root / "own", "0.5.23"), "planted": planted}


@pytest.mark.parametrize(("tree", "found"), [("own", False), ("planted", True)])
def test_a_checkout_reads_clean_and_its_plant_is_found_on_sglangs_own_pool(
    tree: str, found: bool, trees: dict[str, Path], tmp_path: Path
) -> None:
    """0.5.23's own tree sizes the cache for DCP: clean; the plant (the target pool sized as the draft's replicated
    one) is found by ``run --profile ci``, confirmed on the tree's own pool and allocator."""
    _, groups = _groups(tmp_path, str(trees[tree]), "--pin", "attn_dcp_size=2")
    assert list(groups) == ([GROUP] if found else [])
    for f in groups.values():
        assert f["confirmed"] and f["sglang"].startswith("confirmed on SGLang's own DSATokenToKVPool.__init__")
