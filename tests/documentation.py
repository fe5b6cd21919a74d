"""The project's documentation as the tests read it: README.md (the front page) and the topic pages docs/*.md.

A test that holds documented text to behaviour reads the page that states it (``page``), or one of its sections
(``section``); one that only needs some page to say a thing reads them all (``all_text``).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """README.md, then docs/*.md in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page(name: str) -> str:
    """The text of ``docs/NAME`` (``README.md``: the front page)."""
    return (README if name == "README.md" else DOCS / name).read_text()


def section(name: str, heading: str) -> str:
    """The text of page ``name`` under the heading line ``heading`` (``## ...``), to the next heading of its level
    or above; KeyError when the page has no such heading."""
    text = page(name)
    m = re.search(rf"^{re.escape(heading)}\n", text, re.M)
    if not m:
        raise KeyError(f"docs/{name} has no heading {heading!r}")
    level = len(heading) - len(heading.lstrip("#"))
    end = re.search(rf"^#{{1,{level}}} ", text[m.end() :], re.M)
    return text[m.end() : m.end() + end.start()] if end else text[m.end() :]


def all_text() -> str:
    """Every page's text, README first."""
    return "\n".join(path.read_text() for path in pages())
