"""kvrow-fuzz installs into SGLang's own environment (issue 35): no requirement of ours excludes what SGLang pins.

The pytest plugin runs inside SGLang's environment, on SGLang's torch and triton: pip must keep them.  Each pinned
release's wheel (``tests/pinned-releases.txt``, read offline from the wheel cache) names its requirements in its
METADATA; where one pins a package we require (``==``: 0.5.23 pins ``torch==2.14.1``), that version must satisfy
our requirement on it: ``pyproject.toml``'s dependencies and its ``writepath`` extra (issue 35: ``torch<=2.13.0``
refused 0.5.23's torch, and pip's resolver said so).  SGLang pins no triton: its torch does, in torch's own
METADATA (``TORCH_TRITON``); the extra must accept the triton of each torch a pinned release pins, where known.

``constraints.txt`` is this repository's CI pin set (``./kvrow``, the action and the workflows install with
``-c constraints.txt``), never an adopter's: it pins torch 2.13.0 and triton 3.9.0, which SGLang 0.5.23's
environment does not have (held below, so the pages that say so stay true).
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from hermetic import PINNED_RELEASES
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

# torch (the CUDA build SGLang's environment installs) -> its METADATA's requirement on triton
# (``Requires-Dist: triton~=3.8.0; platform_system == "Linux" and python_version < "3.15"`` in torch 2.14.1's wheel).
TORCH_TRITON = {"2.14.1": "~=3.8.0"}
# Where SGLang runs: Linux, x86-64, Python 3.11 (its wheels' tag), no extra asked.
SGLANG_PLATFORM = {
    **default_environment(),
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "extra": "",
}


def our_requirements() -> list[Requirement]:
    """pyproject.toml's dependencies and the writepath extra (read as text: 3.10 has no tomllib)."""
    text = (ROOT / "pyproject.toml").read_text()
    found = []
    for name in ("dependencies", "writepath"):
        block = re.search(rf"^{name} = \[(.*?)\]$", text, re.M | re.S)
        assert block, name
        found += [Requirement(r) for r in re.findall(r'^\s*"([^"]+)"', block[1], re.M)]
    return [r for r in found if r.marker is None or r.marker.evaluate(SGLANG_PLATFORM)]


def sglang_pins(release: str, cache: Path) -> dict[str, Version]:
    """The packages the release's wheel pins exactly (``==``), for SGLang's platform, no extra."""
    (wheel,) = cache.glob(f"sglang-{release}-*.whl")
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(f"sglang-{release}.dist-info/METADATA").decode()
    pins = {}
    for line in re.findall(r"^Requires-Dist: (.+)$", metadata, re.M):
        req = Requirement(line)
        specs = list(req.specifier)
        if (
            (req.marker is None or req.marker.evaluate(SGLANG_PLATFORM))
            and len(specs) == 1
            and specs[0].operator == "=="
        ):
            pins[canonicalize_name(req.name)] = Version(specs[0].version)
    return pins


def test_our_requirements_are_read_whole():
    names = {canonicalize_name(r.name) for r in our_requirements()}
    assert {"torch", "triton", "hypothesis", "numpy", "packaging", "pytest"} <= names


@pytest.mark.parametrize("release", PINNED_RELEASES)
def test_no_requirement_of_ours_excludes_what_an_sglang_release_pins(release, pinned_wheels):
    pins = sglang_pins(release, pinned_wheels)
    assert "torch" in pins, sorted(pins)  # every pinned release pins its torch: the check has its subject
    for req in our_requirements():
        pinned = pins.get(canonicalize_name(req.name))
        if pinned is not None:
            assert req.specifier.contains(pinned, prereleases=True), f"{req} refuses sglang=={release}'s {pinned}"
    triton = TORCH_TRITON.get(str(pins["torch"]))
    if triton is not None:  # the extra accepts the triton the release's torch brings (its lowest, at least)
        (ours,) = [r for r in our_requirements() if r.name == "triton"]
        lowest = Version(triton.removeprefix("~="))
        assert ours.specifier.contains(lowest), f"{ours} refuses torch {pins['torch']}'s triton{triton}"


def test_the_check_refuses_the_cap_that_refused_0_5_23(pinned_wheels):
    """The negative control: the requirement pyproject.toml had before (issue 35) fails the same check."""
    pinned = sglang_pins("0.5.23", pinned_wheels)["torch"]
    assert not Requirement("torch>=2.4,<=2.13.0").specifier.contains(pinned)
    assert not Requirement("triton==3.9.0").specifier.contains(Version(TORCH_TRITON[str(pinned)].removeprefix("~=")))


def test_constraints_are_this_repositorys_ci_pins_not_an_adopters():
    """``constraints.txt`` pins what CI tests with; the pages say it is not for SGLang's environment."""
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "constraints.txt").read_text(), re.M))
    assert pins["torch"] == "2.13.0" and pins["triton"] == "3.9.0"
    said = " ".join((ROOT / "docs" / "command-line.md").read_text().split())
    assert "Never install there with `-c constraints.txt`" in said
