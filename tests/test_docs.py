"""The README is a front page and every link of the documentation lands (issue 34).

README.md is at most 350 lines and its first screen shows the command that finds the seed bug and what it
prints; every relative link of README.md and docs/*.md names a file that exists and, with ``#anchor``, a
heading of that file (the anchor as GitHub writes it).  Pages moved or headings reworded break a link here,
not on a reader's screen.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from documentation import DOCS, README, ROOT, pages

FIRST_SCREEN = 60  # lines: what a newcomer sees before scrolling
FRONT_PAGE = 350  # lines at most
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")  # the text may run over lines
FENCE = re.compile(r"^(```|~~~)")


def prose(text: str) -> str:
    """``text`` without its code: fenced and indented blocks and inline code spans (a ``[x](y)`` there is code)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            continue
        if fenced or line.startswith(("    ", "\t")):
            continue
        out.append(re.sub(r"`[^`\n]*`", "", line))
    return "\n".join(out)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, inline markup and punctuation dropped (letters,
    digits, ``_``, ``-`` and spaces kept), each space a ``-``."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown page; a repeated one gets ``-1``, ``-2``... as GitHub numbers them."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(text).splitlines():
        m = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if m:
            base = slug(m[1])
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path, text: str) -> list[str]:
    """The links of ``path`` that land nowhere: a missing file, or an anchor no heading of its page has."""
    bad = []
    for target in LINK.findall(prose(text)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ... not ours to check offline
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no file {dest}")
        elif anchor and (not dest.is_file() or anchor not in anchors(dest.read_text())):
            bad.append(f"{target}: no heading #{anchor} in {dest}")
    return bad


@pytest.mark.parametrize("path", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path):
    assert not broken_links(path, path.read_text())


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text('# Other\n\n## What "clean" means, per entry point\n\n## Notes\n\n## Notes\n')
    text = (
        "# Page\n\n[ok](other.md#what-clean-means-per-entry-point) [ok](other.md#notes-1) [ok](#page)"
        " [gone](missing.md) [no heading](other.md#nowhere) [here](#nowhere) [web](https://example.com/x#y)\n"
        "[over two\nlines](other.md#gone)\n"
        "    [code](block.md)\n`[span](span.md)`\n"
    )
    page.write_text(text)
    assert [b.split(":")[0] for b in broken_links(page, text)] == [
        "missing.md",
        "other.md#nowhere",
        "#nowhere",
        "other.md#gone",
    ]


def test_the_readme_is_a_front_page_that_shows_the_seed_bug_on_its_first_screen():
    lines = README.read_text().splitlines()
    assert len(lines) <= FRONT_PAGE, len(lines)
    screen = "\n".join(lines[:FIRST_SCREEN])
    assert "\n    ./kvrow run      #" in screen and "\n    ./kvrow test     #" in screen  # the quick start's two
    assert "\n    ./kvrow run --target reference@sglang-0.5.18 --profile ci\n" in screen  # the seed bug's command
    assert "<!-- sample: run-0.5.18: " in screen and "<!-- /sample -->" in screen  # and what it prints
    assert "COUNTEREXAMPLE write-within-row/dcp>1 on reference@sglang-0.5.18" in screen


def test_the_readme_says_what_clean_means_and_links_every_topic_page():
    text = README.read_text()
    assert "](docs/ci.md#what-clean-means-per-entry-point)" in prose(text)
    linked = {m.partition("#")[0] for m in LINK.findall(prose(text))}
    topics = {p.relative_to(ROOT).as_posix() for p in pages() if p != README}
    assert topics <= linked, topics - linked
