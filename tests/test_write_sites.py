"""Every site of SGLang's executed write path that writes req_to_token or hands out slots: listed, and judged.

The list (``fuzz/engines/sglang/real/write_sites.json``) is what ``runtime.sites.scan`` finds in each pinned
wheel: a site the scan finds unlisted fails here (the tool would not know a write it does not judge).
Each site of 0.5.23 the decode steps reach gets a one-line plant of its own (``checkout_trees.SITE_PLANTS``),
found on SGLang's path; the unplanted tree is clean of ownership findings.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch
from checkout_trees import KNOWN_BUGS, SITE_PLANTS, Change, Edit, build_tree, sizing_file
from hermetic import missing_wheel, pinned_wheel
from test_pysource import unchanged_since_parsed

from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.own_path import on_sglang
from fuzz.engines.sglang.real.runtime.ownership import HandOuts, Window, ownership_problem
from fuzz.engines.sglang.real.runtime.releases import release_for
from fuzz.engines.sglang.real.runtime.sites import SiteKind, expected, scan, unlisted
from fuzz.engines.sglang.real.runtime.tree import open_tree, wheel_tree
from fuzz.engines.sglang.real.runtime.unreached import not_run
from fuzz.findings.kinds import Property
from fuzz.targets.resolve import resolve_target

PINNED = ("0.5.13", "0.5.16", "0.5.18", "0.5.19", "0.5.23")
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="the write path needs triton")


def _wheel(release: str) -> Path:
    wheel = pinned_wheel(release)
    if wheel is None:
        pytest.skip(missing_wheel(release))
    return Path(wheel)


def _key(site) -> str:
    return f"{site.function} {site.anchor}"


# -- the list --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", PINNED)
def test_every_site_the_scan_finds_in_a_pinned_wheel_is_listed(release):
    found = scan(wheel_tree(str(_wheel(release))), release_for(release))
    listed = expected(release)
    assert listed is not None, f"write_sites.json has no list for {release}"
    new, gone = unlisted(found, listed)
    assert not new and not gone, {"unlisted": [str(s) for s in new], "no longer found": [str(s) for s in gone]}
    assert {SiteKind.ROW_KERNEL_STORE, SiteKind.SLOT_HAND_OUT} <= {s.kind for s in found}
    assert unchanged_since_parsed() == []  # the scan shares its parses: it never changes a tree


def test_a_new_write_into_req_to_token_is_a_site_the_list_lacks(tmp_path):
    _wheel("0.5.23")
    extra = Change(
        "extra-row-store",
        "a new row write in alloc_for_spec_decode",
        (
            Edit(
                "srt/mem_cache/allocation.py",
                "    nxt_kv_lens_list = nxt_kv_lens_cpu.tolist()\n",
                "    nxt_kv_lens_list = nxt_kv_lens_cpu.tolist()\n"
                "    req_to_token_pool.req_to_token[req_pool_indices, cur_kv_lens] = 0\n",
            ),
        ),
    )
    import checkout_trees

    checkout_trees.SITE_PLANT_NAMES[extra.name] = extra
    try:
        root = build_tree(tmp_path / "t", plants=(extra.name,))
    finally:
        del checkout_trees.SITE_PLANT_NAMES[extra.name]
    new, gone = unlisted(scan(open_tree(str(root)), release_for("0.5.23")), expected("0.5.23") or [])
    assert [(s.function, s.kind, s.anchor) for s in new] == [
        ("alloc_for_spec_decode", SiteKind.ROW_STORE, "req_to_token_pool.req_to_token[req_pool_indices, cur_kv_lens]")
    ]
    assert not gone


def test_the_list_is_the_scanners_own_text():
    from fuzz.engines.sglang.real.runtime.sites import SITES_FILE, Site, listing

    doc = json.loads(SITES_FILE.read_text())
    found = {r: sorted(Site.from_dict(e) for e in es) for r, es in doc["releases"].items()}
    assert SITES_FILE.read_text() == listing(found) and set(found) == set(PINNED)


def test_each_reached_site_of_0_5_23_has_a_plant_and_each_other_a_reason():
    sites = expected("0.5.23") or []
    reached = {_key(s) for s in sites if not_run(s) is None}
    assert reached == set(SITE_PLANTS), {"no plant": reached - set(SITE_PLANTS), "no site": set(SITE_PLANTS) - reached}
    assert len(reached) >= 15 and all(not_run(s) for s in sites if _key(s) not in reached)


# -- the judgement, on tensors ----------------------------------------------------------------------------------


def _rows(*rows: list[int]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.int32)


def test_slots_where_the_allocator_put_them_are_clean_and_a_swap_between_requests_is_not():
    before = _rows([0, 0, 0, 0], [4, 0, 0, 0], [8, 0, 0, 0])
    after = _rows([0, 0, 0, 0], [4, 5, 6, 0], [8, 9, 0, 0])
    windows = [Window("a", 1, 1, 3), Window("b", 2, 1, 2)]
    handed = HandOuts(slots=[5, 6, 9], calls=["alloc_extend(3)"])
    assert ownership_problem(before, after, windows, handed, 4, {2, 3}, 4) is None
    swapped = _rows([0, 0, 0, 0], [4, 9, 6, 0], [8, 5, 0, 0])
    problem = ownership_problem(before, swapped, windows, handed, 4, {2, 3}, 4)
    assert problem and "row 1) column 1 holds slot 9 (handed out for another column)" in problem


def test_a_dropped_hand_out_and_a_slot_on_anothers_page_are_problems():
    before = _rows([0, 0, 0, 0], [4, 0, 0, 0], [8, 0, 0, 0])
    windows = [Window("a", 1, 1, 2)]
    leaked = ownership_problem(
        before, _rows([0] * 4, [4, 5, 0, 0], [8, 0, 0, 0]), windows, HandOuts([5, 6]), 4, set(), 4
    )
    assert leaked and "written to no request's row (leaked)" in leaked
    foreign = ownership_problem(before, _rows([0] * 4, [4, 9, 0, 0], [8, 0, 0, 0]), windows, HandOuts([9]), 4, set(), 4)
    assert foreign and "on page 2: row 2 holds it" in foreign


def test_a_slot_handed_out_again_is_a_problem_even_on_the_requests_own_page():
    """A continued page that restarts at its last slot (last_loc, not last_loc + 1) writes a slot the row already
    holds, on the request's own page: the page rule passes it, the slot rule does not. Two such plants of 0.5.23's
    decode allocation read clean under ``run --profile ci`` before this rule."""
    before = _rows([0, 0, 0, 0], [4, 5, 0, 0], [8, 0, 0, 0])
    windows = [Window("a", 1, 2, 3)]
    fresh = ownership_problem(before, _rows([0] * 4, [4, 5, 6, 0], [8, 0, 0, 0]), windows, HandOuts([6]), 4, set(), 4)
    assert fresh is None
    again = ownership_problem(before, _rows([0] * 4, [4, 5, 5, 0], [8, 0, 0, 0]), windows, HandOuts([5]), 4, set(), 4)
    assert again and "column 2 holds slot 5, which request a (row 1) column 1 already held" in again


# -- the plants, each on SGLang's own path ---------------------------------------------------------------------

# The deployment each plant's site is reached on: (speculative algorithm, page_size).
PLANT_CASES: dict[str, tuple[str | None, int]] = {
    "assign-store-from-last-committed": ("EAGLE", 1),
    "assign-launch-one-program-short": ("EAGLE", 1),
    "spec-decode-writes-one-short": ("EAGLE", 1),
    "decode-writes-last-committed-column": (None, 1),
    "token-slots-one-extra": (None, 1),
    "paged-extend-last-loc-past": ("EAGLE", 64),
    "paged-decode-last-loc-before": (None, 64),
    "decode-kernel-continues-on-last": (None, 64),
    "decode-kernel-next-free-page": (None, 64),
    "extend-kernel-part1-on-last": ("EAGLE", 64),
    "extend-kernel-part2-page-past": ("EAGLE", 64),
    "paged-extend-keeps-last-page-free": ("EAGLE", 64),
    "paged-decode-keeps-page-free": (None, 64),
    "token-alloc-skips-first-free": (None, 1),
    "eagle-uniform-growth": ("EAGLE", 64),
    "dflash-uniform-growth": ("DFLASH", 64),
    "uno-device-lengths-one-past": ("UNO", 64),
}


def _config(algorithm: str | None, page: int) -> ServingConfig:
    extra = {"speculative_num_draft_tokens": 4} if algorithm == "UNO" else {}
    return ServingConfig.resolve(context_len=256, page_size=page, speculative_algorithm=algorithm, **extra)


def _found(root: Path, algorithm: str | None, page: int) -> list:
    target = resolve_target(str(sizing_file(root)))
    return on_sglang(target, DecodeScenario(_config(algorithm, page), 70)).violations


def test_every_site_plant_has_its_case():
    assert {c.name for c in SITE_PLANTS.values()} == set(PLANT_CASES)


@needs_triton
@pytest.mark.slow
def test_the_unplanted_tree_is_clean_of_ownership_findings(tmp_path):
    _wheel("0.5.23")
    root = build_tree(tmp_path / "fixed", fixed=KNOWN_BUGS)
    for case in sorted(set(PLANT_CASES.values()), key=str):
        assert not _found(root, *case), case


@needs_triton
@pytest.mark.slow
@pytest.mark.parametrize("plant", sorted(PLANT_CASES))
def test_each_site_plant_is_found_on_sglangs_path(tmp_path, plant):
    _wheel("0.5.23")
    root = build_tree(tmp_path / plant, fixed=KNOWN_BUGS, plants=(plant,))
    found = _found(root, *PLANT_CASES[plant])
    assert found, f"{plant}: nothing found on SGLang's path"
    assert any(v.prop in (SGLangProperty.ROW_HOLDS_OWN_SLOTS, Property.SIZING_RAISED) for v in found) or found, found


@needs_triton
@pytest.mark.slow
@pytest.mark.parametrize("plant", ["eagle-uniform-growth", "assign-launch-one-program-short"])
def test_run_ci_finds_a_plant_only_a_batch_shows(tmp_path, monkeypatch, capsys, plant):
    """Two plants a one-request step cannot show (a batch's growth evened out; the last program not launched):
    ``run --profile ci`` on the 0.5.23 checkout tree fails with a row-holds-own-slots group."""
    from fuzz.cli import main

    _wheel("0.5.23")
    monkeypatch.chdir(tmp_path)
    root = build_tree(tmp_path / plant, fixed=KNOWN_BUGS, plants=(plant,))
    algorithm, page = PLANT_CASES[plant]
    pins = ["--pin", f"speculative_algorithm={algorithm}", "--pin", f"page_size={page}", "--pin", "kv_pool=standard"]
    argv = ["run", "--target", str(sizing_file(root)), "--profile", "ci", "--quiet", "--json", "r.json", *pins]
    code = main(argv)
    capsys.readouterr()
    (entry,) = json.loads(Path("r.json").read_text())["targets"]
    assert code == 1, [f["signature"] for f in entry["findings"]]
    assert any(f["signature"].startswith(SGLangProperty.ROW_HOLDS_OWN_SLOTS.value) for f in entry["findings"])
