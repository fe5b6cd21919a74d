"""The documentation's sample output is what the commands print (``docs/sample_output.py``), and its tables line up.

A sample lives in README.md or one of docs/*.md, the page whose text it illustrates, once.  A sample that differs
(a change of the output, or a block edited by hand) fails here: run ``python docs/sample_output.py`` and commit the
pages it rewrites.  The costly samples (whole campaigns, the full proof, a real release's wheel) are the slow tier's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = "run `python docs/sample_output.py`"
FIX = f"the pages' samples are not the commands' output: {RUN} (diff below)\n"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sample_output", ROOT / "docs" / "sample_output.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    return module


so = _script()
CHEAP = [s.name for s in so.SAMPLES if not s.slow]
SLOW = [s.name for s in so.SAMPLES if s.slow]


def pages() -> dict[Path, str]:
    """README.md and docs/*.md, each with its text."""
    return {path: path.read_text() for path in so.documents()}


def page_of(name: str) -> Path:
    """The file that holds sample ``name``'s block."""
    return so.placed(pages())[name]


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def cheap_blocks() -> dict[str, str]:
    return so.regenerated(CHEAP)


def assert_current(new_blocks: dict[str, str]) -> None:
    for path, text in pages().items():
        new = so.rewrite(text, new_blocks)
        assert new == text, FIX + so.diff(text, new, str(path.relative_to(ROOT)))


def test_every_block_is_a_sample_and_every_sample_has_its_block_in_one_page():
    where = so.placed(pages())
    assert sorted(where) == sorted(so.BY_NAME)
    assert CHEAP and SLOW
    assert so.README in so.documents() and len(set(where.values())) > 1  # the samples follow their pages


def test_the_cheap_samples_are_the_commands_output(cheap_blocks):
    assert_current(cheap_blocks)


@pytest.mark.slow
@pytest.mark.long
def test_the_costly_samples_are_the_commands_output(pinned_wheels):
    """A whole campaign on the reference, the full proof, and 0.5.23's run on its real wheel (read offline): in one
    session, whose commands share what the first one loaded."""
    assert_current(so.regenerated(SLOW))


def test_a_sample_edited_by_hand_fails_the_check(cheap_blocks, tmp_path, capsys):
    text = page_of("repro-0.5.18").read_text()
    start, end = so.blocks(text)["repro-0.5.18"]
    block = text[start:end]
    line = next(x for x in block.splitlines() if "FAILS " in x)
    edited = text[:start] + block.replace(line, line.replace("FAILS", "PASSES"), 1) + text[end:]
    assert so.rewrite(edited, cheap_blocks) == text  # regenerating puts the output back
    assert f"-{line.replace('FAILS', 'PASSES')}\n+{line}\n" in so.diff(edited, text)

    text = page_of("targets").read_text()
    page = tmp_path / "page.md"
    start, end = so.blocks(text)["targets"]
    page.write_text(text[:start] + text[start:end].replace("safe everywhere", "safe nearly everywhere") + text[end:])
    for option in ("--readme", "--file"):  # --readme: the option's old name
        assert so.main(["--check", "--only", "targets", option, str(page)]) == 1
        out = capsys.readouterr().out
        assert "-    reference  " in out and "safe nearly everywhere" in out and "+    reference  " in out
    assert so.main(["--only", "targets", "--file", str(page)]) == 0  # rewritten: now current
    assert so.main(["--check", "--only", "targets", "--file", str(page)]) == 0
    assert page.read_text() == text


def test_a_block_without_its_end_or_of_no_sample_is_an_error(tmp_path, capsys):
    text = page_of("targets").read_text()
    for bad in (text.replace(so.CLOSE, "", 1), text + "\n<!-- sample: no-such-sample -->\n<!-- /sample -->\n"):
        page = tmp_path / "page.md"
        page.write_text(bad)
        assert so.main(["--check", "--file", str(page)]) == 2
        assert "sample_output: error: " in capsys.readouterr().err


def test_a_sample_in_two_pages_or_in_none_is_an_error(tmp_path, capsys):
    """One sample, one block: a copy in a second page, or a sample no page holds, is exit 2 before any command."""
    text = page_of("targets").read_text()
    start, end = so.blocks(text)["targets"]
    first, second, empty = tmp_path / "first.md", tmp_path / "second.md", tmp_path / "empty.md"
    first.write_text(text)
    second.write_text("# another page\n\n" + text[start:end] + "\n")
    empty.write_text("# no sample here\n")
    assert so.main(["--check", "--only", "targets", "--file", str(first), "--file", str(second)]) == 2
    assert "sample targets: a block in " in capsys.readouterr().err
    assert so.main(["--check", "--only", "targets", "--file", str(empty)]) == 2
    assert "no block for targets in " in capsys.readouterr().err
    assert so.main(["--check", "--file", str(second)]) == 2  # every sample, and this page holds one
    assert "no block for " in capsys.readouterr().err
    with pytest.raises(ValueError, match="a block in"):
        so.placed({first: text, second: second.read_text()})


def test_timings_paths_and_the_wheel_cache_are_normalised(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("KVROW_FUZZ_CACHE", str(cache))
    out = "\n".join(
        [
            f"proved: (80,161,280 configurations, 0.6s, 17 group(s)); cases in {tmp_path}/fuzz-cases (cache: {cache})",
            "",
            "target                           status                        examples  seconds  found",
            "reference@sglang-0.5.18          counterexample                    2022    105.6  4 root cause(s)",
            "reference                        clean                             2535      3.8  -",
        ]
    )
    assert so.normalise(out, str(tmp_path)).splitlines() == [
        "proved: (80,161,280 configurations, …s, 17 group(s)); cases in fuzz-cases (cache: ~/.cache/kvrow-fuzz/wheels)",
        "",
        "target                           status                        examples  seconds  found",
        "reference@sglang-0.5.18          counterexample                    2022        …  4 root cause(s)",
        "reference                        clean                             2535        …  -",
    ]


def test_the_tables_of_every_page_line_up():
    for path, text in pages().items():
        assert so.align_tables(text) == text, f"{path}: a table's pipes do not line up: {RUN}"
    assert so.align_tables("| a | b |\n|---|---|\n| long cell | `x|y` |") == (
        "| a         | b     |\n|-----------|-------|\n| long cell | `x|y` |"
    )
