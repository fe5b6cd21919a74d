"""One parse per source text, shared by readers that only read it (``fuzz.common.pysource``)."""

from __future__ import annotations

import ast

import pytest

from fuzz.common import pysource


def unchanged_since_parsed() -> list[str]:
    """The filenames of kept trees that no longer dump as a fresh parse of their text does (a reader changed one)."""
    return [f for source, f, tree in pysource.kept() if ast.dump(tree) != ast.dump(ast.parse(source, f))]


def test_the_same_text_is_parsed_once_and_another_text_again() -> None:
    first = pysource.parsed("x = 1\n", "a.py")
    assert pysource.parsed("x = 1\n", "a.py") is first
    assert pysource.parsed("x = 2\n", "a.py") is not first
    assert pysource.parsed("x = 1\n", "b.py") is not first  # a tree's nodes carry no filename, a SyntaxError does


def test_what_does_not_parse_raises_every_time() -> None:
    for _ in range(2):
        with pytest.raises(SyntaxError, match="bad.py"):
            pysource.parsed("def (:\n", "bad.py")


def test_only_the_last_trees_are_kept() -> None:
    for i in range(pysource.PARSED_KEPT + 5):
        pysource.parsed(f"x = {i}\n", "many.py")
    kept = [source for source, f, _ in pysource.kept() if f == "many.py"]
    assert len(pysource.kept()) == pysource.PARSED_KEPT and kept[-1] == f"x = {pysource.PARSED_KEPT + 4}\n"


def test_a_reader_that_changed_a_tree_is_seen() -> None:
    tree = pysource.parsed("y = 1\n", "changed.py")
    assert "changed.py" not in unchanged_since_parsed()
    tree.body.append(ast.Pass())
    try:
        assert "changed.py" in unchanged_since_parsed()
    finally:
        tree.body.pop()
