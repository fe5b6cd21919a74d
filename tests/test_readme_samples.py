"""The README's sample output is what the commands print (``docs/sample_output.py``), and its tables line up.

A sample that differs (a change of the output, or a block edited by hand) fails here: run
``python docs/sample_output.py`` and commit the README it rewrites.  The costly samples (whole campaigns, the
full proof, a real release's wheel) are the slow tier's.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIX = "the README's samples are not the commands' output: run `python docs/sample_output.py` (diff below)\n"


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


def regenerated(names: list[str]) -> dict[str, str]:
    with so.session() as s:
        return {name: s.block(so.BY_NAME[name]) for name in names}


@pytest.fixture(scope="module")
def cheap_blocks() -> dict[str, str]:
    return regenerated(CHEAP)


def test_every_block_is_a_sample_and_every_sample_has_its_block():
    assert sorted(so.blocks(README.read_text())) == sorted(so.BY_NAME)
    assert CHEAP and SLOW


def test_the_cheap_samples_are_the_commands_output(cheap_blocks):
    text = README.read_text()
    new = so.rewrite(text, cheap_blocks)
    assert new == text, FIX + so.diff(text, new)


@pytest.mark.slow
def test_the_costly_samples_are_the_commands_output(pinned_wheels):
    """A whole campaign on the reference, the full proof, and 0.5.23's run on its real wheel (read offline)."""
    text = README.read_text()
    new = so.rewrite(text, regenerated(SLOW))
    assert new == text, FIX + so.diff(text, new)


def test_a_sample_edited_by_hand_fails_the_check(cheap_blocks, tmp_path, capsys):
    text = README.read_text()
    start, end = so.blocks(text)["repro-0.5.18"]
    block = text[start:end]
    line = next(x for x in block.splitlines() if "FAILS " in x)
    edited = text[:start] + block.replace(line, line.replace("FAILS", "PASSES"), 1) + text[end:]
    assert so.rewrite(edited, cheap_blocks) == text  # regenerating puts the output back
    assert f"-{line.replace('FAILS', 'PASSES')}\n+{line}\n" in so.diff(edited, text)

    readme = tmp_path / "README.md"
    start, end = so.blocks(text)["targets"]
    readme.write_text(text[:start] + text[start:end].replace("safe everywhere", "safe nearly everywhere") + text[end:])
    assert so.main(["--check", "--only", "targets", "--readme", str(readme)]) == 1
    out = capsys.readouterr().out
    assert "-    reference  " in out and "safe nearly everywhere" in out and "+    reference  " in out
    assert so.main(["--only", "targets", "--readme", str(readme)]) == 0  # rewritten: now current
    assert so.main(["--check", "--only", "targets", "--readme", str(readme)]) == 0
    assert readme.read_text() == text


def test_a_block_without_its_end_or_of_no_sample_is_an_error(tmp_path, capsys):
    text = README.read_text()
    for bad in (text.replace(so.CLOSE, "", 1), text + "\n<!-- sample: no-such-sample -->\n<!-- /sample -->\n"):
        readme = tmp_path / "README.md"
        readme.write_text(bad)
        assert so.main(["--check", "--readme", str(readme)]) == 2
        assert "sample_output: error: " in capsys.readouterr().err


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


def test_the_readme_tables_line_up():
    text = README.read_text()
    assert so.align_tables(text) == text, "a table's pipes do not line up: run `python docs/sample_output.py`"
    assert so.align_tables("| a | b |\n|---|---|\n| long cell | `x|y` |") == (
        "| a         | b     |\n|-----------|-------|\n| long cell | `x|y` |"
    )
