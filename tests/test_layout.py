"""The layout rules the README states: module sizes, and the committed allow-list of repeated stretches."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("allocator_model", "strategies", "fuzz", "benchmarks")
# Over 400 lines on purpose: the two slicing readers (the exception).
LARGE_ALLOWED = {"fuzz/engines/sglang/real/allocators.py", "fuzz/engines/sglang/real/builders.py"}


def _product_modules() -> list[Path]:
    return sorted(
        p
        for d in PRODUCT
        for p in (ROOT / d).rglob("*.py")
        if not p.name.startswith("test_") and "__pycache__" not in p.parts
    )


def test_no_product_module_is_over_400_lines_but_the_two_slicing_readers():
    over = {
        str(p.relative_to(ROOT)): n
        for p in _product_modules()
        if (n := len(p.read_text().splitlines())) > 400 and str(p.relative_to(ROOT)) not in LARGE_ALLOWED
    }
    assert not over, over


def _allowed() -> list[tuple[str, str, str]]:
    entries = []
    for line in (ROOT / "duplicates-allowed.txt").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pair, _, reason = line.partition(": ")
        a, _, b = pair.partition(" ~ ")
        entries.append((a, b, reason))
    return entries


@pytest.mark.parametrize("a,b,reason", _allowed(), ids=lambda v: v if "/" in v else "")
def test_every_allowed_duplicate_names_real_files_and_its_reason(a, b, reason):
    assert (ROOT / a).is_file() and (ROOT / b).is_file(), (a, b)
    assert len(reason.split()) >= 5, f"{a} ~ {b}: give the reason the stretch stays repeated"


def test_the_allow_list_is_not_empty_and_names_each_pair_once():
    pairs = [(a, b) for a, b, _ in _allowed()]
    assert pairs and len(pairs) == len(set(pairs))
