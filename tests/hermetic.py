"""The test wheel cache and the offline pip environment (used by ``tests/conftest.py`` and by tests).

A module of its own: test modules cannot import ``conftest`` reliably (pytest
drops the name from ``sys.modules`` between the root's and ``tests/``'s).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from allocator_model.revisions import RELEASE_REVISIONS
from fuzz.engines.sglang.real.wheels import COMMON_MODULE, SIZING_MODULE

SHAPES_DIR = Path(__file__).parent / "sglang_shapes"
# API shape (a file of tests/sglang_shapes/) -> the releases that shipped it, and the generation
# fuzz/engines/sglang/real/loader.py detects in it.
SHAPES: dict[str, tuple[str, ...]] = {
    "common_0_5_13": ("0.5.13",),
    "common": ("0.5.14", "0.5.15"),
    "server_args": ("0.5.16", "0.5.17"),
    "accessors": ("0.5.18",),
    "alloc_page": ("0.5.19",),
    "uno": ("0.5.20", "0.5.21", "0.5.22", "0.5.23"),
}
GENERATIONS = {
    "common_0_5_13": "server-args",
    "common": "server-args",
    "server_args": "server-args",
    "accessors": "accessors",
    "alloc_page": "alloc-page",
    "uno": "uno",
}
# Where a shape's wheel keeps it: mem_cache/common.py before 0.5.16, allocation_sizing.py after.
MEMBERS = {"common_0_5_13": COMMON_MODULE, "common": COMMON_MODULE}
WHEEL_TAG = "cp311-cp311-manylinux_2_34_x86_64"  # the real wheels' tag
NETWORK_ENV = "KVROW_FUZZ_NETWORK"
# Environment that would let pip reach an index, or read a configuration naming one.
PIP_SETTINGS = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_TRUSTED_HOST", "PIP_PROXY")


def shape_of(release: str) -> str:
    """The API shape a release's sizing module has (StopIteration: a modeled release without one)."""
    return next(shape for shape, releases in SHAPES.items() if release in releases)


def shape_source(shape: str) -> str:
    return (SHAPES_DIR / f"{shape}.py").read_text()


def wheel_name(release: str) -> str:
    return f"sglang-{release}-{WHEEL_TAG}.whl"


def build_wheel(directory: Path, release: str) -> Path:
    """A wheel of sglang==release as the loader reads it: the sizing module at its path, dist-info beside it."""
    path = directory / wheel_name(release)
    dist_info = f"sglang-{release}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        shape = shape_of(release)
        z.writestr(MEMBERS.get(shape, SIZING_MODULE), shape_source(shape))
        z.writestr(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: sglang\nVersion: {release}\n")
        z.writestr(f"{dist_info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: kvrow-fuzz tests\nTag: {WHEEL_TAG}\n")
        z.writestr(f"{dist_info}/RECORD", "")
    return path


def build_wheel_cache(directory: Path) -> Path:
    """One test wheel per modeled release, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for release in RELEASE_REVISIONS:
        build_wheel(directory, release)
    return directory


def offline_pip_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with no pip index, no find-links, no pip configuration file: pip can reach nothing."""
    clean = {k: v for k, v in env.items() if k not in PIP_SETTINGS}
    return {**clean, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"}


# The releases whose real wheels ``./kvrow test`` fetches at set-up for the write-path tests: the one list of them,
# a data file the script reads too (``read_pinned`` is its rule).  Tests of any other release's real wheel are
# marked network, or skip saying how to fetch it by hand.
PINNED_FILE = Path(__file__).parent / "pinned-releases.txt"


def read_pinned(text: str) -> tuple[str, ...]:
    """The releases of a pinned-releases file, in order: one a line, ``#`` to the line's end a comment, blank lines
    skipped; ``kvrow`` reads the file by the same rule (``sed 's/#.*//'``, then words), so the two cannot differ.
    """
    return tuple(word for line in text.splitlines() for word in line.split("#", 1)[0].split())


PINNED_RELEASES = read_pinned(PINNED_FILE.read_text())
REAL_WHEELS_ENV = "KVROW_FUZZ_REAL_WHEELS"
_ENV_AT_START = dict(os.environ)


def real_wheel_dir() -> Path:
    """Where the real wheels are: ``$KVROW_FUZZ_REAL_WHEELS`` (set by ``./kvrow test``), else the user's wheel cache."""
    explicit = _ENV_AT_START.get(REAL_WHEELS_ENV)
    if explicit:
        return Path(explicit).expanduser()
    base = _ENV_AT_START.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kvrow-fuzz" / "wheels"


def pinned_wheel(release: str) -> Path | None:
    """The real wheel of ``release`` where ``./kvrow test`` put it (None: not there)."""
    found = sorted(real_wheel_dir().glob(f"sglang-{release}-*.whl"))
    return found[0] if found else None


def missing_wheel(release: str, where: Path | str | None = None) -> str:
    """Why a test of ``release``'s real wheel skips: where it looked, and how the wheel gets there (true for every
    release: ``./kvrow test`` fetches the pinned ones only, and a test never fetches anything)."""
    where = real_wheel_dir() if where is None else where
    by_hand = f"pip download sglang=={release} --no-deps -d {where}"
    if release in PINNED_RELEASES:
        return f"no sglang=={release} wheel in {where} (pinned: ./kvrow test fetches it at set-up; or {by_hand})"
    return f"no sglang=={release} wheel in {where} (not pinned: ./kvrow test does not fetch it; {by_hand})"


def require_wheel(release: str) -> Path:
    """The real wheel of ``release`` (``pinned_wheel``), or the test skips saying why (``missing_wheel``)."""
    wheel = pinned_wheel(release)
    if wheel is None:
        pytest.skip(missing_wheel(release))
    return wheel


def repro_words(line: str) -> list[str]:
    """A printed repro line's words after the program (``repro CASE [--target SPEC]``), however this installation
    spells the program (``fuzz.common.program.shell_command``: one word or ``PYTHON -m fuzz``)."""
    import shlex

    from fuzz.common.program import shell_command

    words = shlex.split(line)
    program = shlex.split(shell_command())
    assert words[: len(program)] == program, (line, program)
    return words[len(program) :]


def unbroken(text: str) -> str:
    """Printed text with each shell continuation (`` \\`` at a line's end, the next line indented) joined back: a
    repro or launch line broken at the width reads as the one line it pastes as."""
    import re

    return re.sub(r" \\\n[ \t]+", " ", text)
