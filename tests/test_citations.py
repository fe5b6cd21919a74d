"""The citations of SGLang's source (``allocator_model.citations``) hold together, and hold in the wheels.

Hermetic: every ``[cite: KEY]`` in the product code names a key of
``CITATIONS``, every key is cited somewhere, every ``Cite`` is well formed,
the table's module imports nothing heavy, and the product code keeps no bare
``X.Y.Z file.py NNN`` line citation (the table holds anchors, never lines).

``network``: every cite's anchor is found in the release's real wheel in the
user's cache (``real_wheel_cache``); a release whose wheel is not cached is
skipped, saying so (nothing is downloaded here).
"""

from __future__ import annotations

import ast
import re
import zipfile
from pathlib import Path

import pytest

from allocator_model.citations import CITATIONS, CITE_PATTERN, Cite
from allocator_model.revisions import RELEASE_REVISIONS

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "allocator_model" / "citations"  # a package: Cite and the members in base.py, the facts beside
# Where ``[cite: KEY]`` may appear: the product code.
PRODUCT = ("allocator_model", "strategies", "fuzz")
# Where every SGLang line citation has been moved into the table: the whole product.
CONVERTED = PRODUCT

CITE = re.compile(CITE_PATTERN)
ANY_CITE = re.compile(r"\[cite:[^\]]*\]?")  # anything that looks like a citation, well formed or not
PLACEHOLDER = "[cite: KEY]"  # the scheme's own name for a citation, in prose that explains it
KEY = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# A bare line citation: ``file.py 123``, ``file.py:12-14``, ``file.py`` lines 5-9, ``0.5.18 915-917``,
# ``0.5.14: 186``, ``line 3246``, or a bare range ``2795-2988``.  A number followed by ``.digit`` is a
# release (``file.py``, 0.5.20+), not a line.
BARE_CITATION = re.compile(
    r"\.py`{0,2}(?::|,?\s+(?:lines?\s+)?)\d+(?!\.\d)"
    r"|\b\d+\.\d+\.\d+:?\s+(?:lines?\s+)?\d{2,}(?!\.\d)"
    r"|\blines?\s+\d{2,}\b"
    r"|\b\d{2,}-\d{2,}\b"
)
# Lines that match BARE_CITATION and stay: (path, a substring of the line, why).  None does now: the line numbers
# that are data (``releases.Where``; the release records, JSON beside ``fuzz.engines.sglang.records``) are not of a
# form the pattern takes.
ALLOWED_BARE: tuple[tuple[str, str, str], ...] = ()


def python_files(*dirs: str) -> list[Path]:
    return sorted(
        p for d in dirs for p in (ROOT / d).rglob("*.py") if TABLE not in p.parents and "__pycache__" not in p.parts
    )


def cited_keys() -> dict[str, list[str]]:
    """Every key the product code cites, with where (``path:line``)."""
    found: dict[str, list[str]] = {}
    for path in python_files(*PRODUCT):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for key in CITE.findall(line):
                found.setdefault(key, []).append(f"{path.relative_to(ROOT)}:{n}")
    return found


def test_every_citation_names_a_fact_of_the_table():
    unknown = {key: where for key, where in cited_keys().items() if key not in CITATIONS}
    assert not unknown, f"[cite: KEY] with no entry in allocator_model.citations.CITATIONS: {unknown}"


def test_every_citation_is_written_whole_on_one_line():
    """``[cite: KEY]`` exactly: not split across lines, no other spacing or case (the two checks above see it)."""
    malformed = []
    for path in python_files(*PRODUCT):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in ANY_CITE.finditer(line):
                if m.group(0) != PLACEHOLDER and not CITE.fullmatch(m.group(0)):
                    malformed.append(f"{path.relative_to(ROOT)}:{n}: {m.group(0)!r}")
    assert not malformed, malformed


def test_every_fact_of_the_table_is_cited():
    dead = sorted(set(CITATIONS) - set(cited_keys()))
    assert not dead, f"entries of CITATIONS no [cite: KEY] in the product code names: {dead}"


@pytest.mark.parametrize("key", sorted(CITATIONS))
def test_every_cite_is_well_formed(key):
    cites = CITATIONS[key]
    assert KEY.fullmatch(key), f"{key!r} is not kebab-case"
    assert isinstance(cites, tuple) and cites, f"{key}: no Cite"
    releases = [c.release for c in cites]
    assert len(set(releases)) == len(releases), f"{key}: one Cite per release (one home per fact per release)"
    for c in cites:
        assert isinstance(c, Cite)
        assert c.release in RELEASE_REVISIONS or c.release == "main", f"{key}: unknown release {c.release!r}"
        assert c.member.startswith("sglang/") and c.member.endswith(".py") and ".." not in c.member, c
        assert isinstance(c.nth, int) and c.nth >= 1 and isinstance(c.whole, bool), c
        assert c.text and c.text.strip() == c.text and "\n" not in c.text, f"{key}: text {c.text!r}"
        assert len(c.text) <= 80, f"{key}: text is a short substring, not SGLang's source: {c.text!r}"


def test_the_table_imports_nothing_of_the_project_and_nothing_heavy():
    imported = set()
    for module in sorted(TABLE.glob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add("." * node.level + (node.module or ""))
    assert imported <= {"__future__", "dataclasses", ".attention", ".base", ".sizing", ".write_path"}, imported


def test_the_converted_directories_keep_no_bare_line_citation():
    """Release, file and line live in the table; prose says ``[cite: KEY]``.  ALLOWED_BARE says why each stays."""
    bare, used = [], set()
    for path in python_files(*CONVERTED):
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not BARE_CITATION.search(line):
                continue
            allowed = [entry for entry in ALLOWED_BARE if entry[0] == rel and entry[1] in line]
            if allowed:
                used.update(allowed)
            else:
                bare.append(f"{rel}:{n}: {line.strip()}")
    assert not bare, "bare SGLang line citations (move them to allocator_model/citations/):\n" + "\n".join(bare)
    stale = [entry[:2] for entry in ALLOWED_BARE if entry not in used]
    assert not stale, f"ALLOWED_BARE entries that match nothing any more: {stale}"


@pytest.mark.parametrize(
    "text, bare",
    [
        ("0.5.23 ``kv_cache_configurator.py`` 2795-2960", True),
        ("(0.5.18 server_args.py 8344-8349)", True),
        ("``speculative/eagle_utils.py:794``", True),
        ("``srt/managers/utils.py`` line 272", True),
        ("0.5.18 915-917: the bonus", True),
        ("(``dflash_info_v2.py:158``; 0.5.14: 186)", True),
        ("(``allocator/unified_mamba.py``, 0.5.20+; before, DCP was refused)", False),
        ("upstream 0.5.13 to 0.5.15 (0.5.16+)", False),
        ("the unified builders size the row 4 + D [cite: unified-mamba-row-extra]", False),
    ],
)
def test_what_counts_as_a_bare_line_citation(text, bare):
    assert bool(BARE_CITATION.search(text)) is bare


# -- the real wheels ---------------------------------------------------------------------------------------


def cites_by_release() -> dict[str, list[tuple[str, Cite]]]:
    out: dict[str, list[tuple[str, Cite]]] = {}
    for key, cites in CITATIONS.items():
        for c in cites:
            out.setdefault(c.release, []).append((key, c))
    return out


def cite_problem(c: Cite, source: str) -> str | None:
    """Why ``c``'s anchor is not in ``source`` (None: it is): fewer than ``nth`` lines hold its text, or a ``whole``
    cite's line starts no statement of several lines."""
    holding = [n for n, line in enumerate(source.splitlines(), 1) if c.text in line]
    if len(holding) < c.nth:
        return f"{len(holding)} line(s) hold it"
    line = holding[c.nth - 1]
    if c.whole and not any(
        isinstance(s, ast.stmt) and s.lineno == line and s.end_lineno != s.lineno for s in ast.walk(ast.parse(source))
    ):
        return f"no statement of several lines starts on line {line}"
    return None


@pytest.mark.parametrize(
    "cite, problem",
    [
        (Cite("0.5.23", "sglang/x.py", "def f("), None),
        (Cite("0.5.23", "sglang/x.py", "def f(", whole=True), None),
        (Cite("0.5.23", "sglang/x.py", "return 1", nth=2), None),
        (Cite("0.5.23", "sglang/x.py", "def g("), "0 line(s) hold it"),
        (Cite("0.5.23", "sglang/x.py", "return 1", nth=3), "2 line(s) hold it"),
        (Cite("0.5.23", "sglang/x.py", "x = 1", whole=True), "no statement of several lines starts on line 1"),
    ],
    ids=["found", "whole", "second", "gone", "fewer", "one-line"],
)
def test_an_anchor_is_found_or_says_why_not(cite, problem):
    source = "x = 1\ndef f(a):\n    return 1\n\n\ndef h():\n    return 1\n"
    assert cite_problem(cite, source) == problem


@pytest.mark.network
@pytest.mark.parametrize("release", sorted(cites_by_release()))
def test_every_cited_line_says_what_the_table_says(release, real_wheel_cache):
    """``member`` of the release's wheel has at least ``nth`` lines holding ``text``; a ``whole`` cite's line starts
    a statement of more than one line."""
    from fuzz.engines.sglang.real.wheels import cache_dir, cached_wheel

    if release == "main":
        pytest.skip("main has no wheel: its citations are checked against a checkout, not here")
    wheel = cached_wheel(release)
    if wheel is None:
        pytest.skip(f"the sglang=={release} wheel is not in {cache_dir()} (this test downloads nothing)")
    wrong = []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for key, c in cites_by_release()[release]:
            if c.member not in names:
                wrong.append(f"{key}: {c}: no such member in {Path(wheel).name}")
                continue
            problem = cite_problem(c, zf.read(c.member).decode("utf-8"))
            if problem:
                wrong.append(f"{key}: {c}: {problem}")
    assert not wrong, "\n".join(wrong)
