"""Issue 33's acceptance: on the 0.5.23 checkout tree, with the baseline written from the unplanted tree, a new bug in
the function that holds a known one (#33579's get_req_to_token_extra_context_len) fails run, prove, the plugin line
and the Atheris entry, named; a comment, a reformat and a renamed local there keep it clean.

Real-release campaigns: the slow tier (``--run-slow``), cheap settings (the tiny space, 5 examples, the model's
write path).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from checkout_trees import build_tree, sizing_file
from hermetic import missing_wheel, pinned_wheel

from fuzz.cli import main

pytestmark = pytest.mark.slow

FUNCTION = "get_req_to_token_extra_context_len"
HEADROOM = "            extra = max(extra, get_alloc_reserve_per_decode() + page_size - 1)\n"
PLANTS = {
    "off-by-one": (HEADROOM, HEADROOM.replace("page_size - 1)", "page_size - 2)")),
    "halved-headroom": (
        HEADROOM,
        HEADROOM.replace("max(extra, get_alloc", "max(extra, (get_alloc").replace("- 1)", "- 1) // 2)"),
    ),
}
HARMLESS = {
    "a-comment": (HEADROOM, "            # (a reviewer's note)\n" + HEADROOM),
    "a-reformat": (
        HEADROOM,
        HEADROOM.replace("max(extra, ", "max(\n                extra,\n                ").replace(
            ")\n", ",\n            )\n"
        ),
    ),
    "a-renamed-local": (
        "    extra = 4 + (max_speculative_num_draft_tokens() or 0)\n",
        "    headroom = 4 + (max_speculative_num_draft_tokens() or 0)\n",
    ),
}


def edited(root: Path, name: str, old: str, new: str) -> Path:
    """The 0.5.23 tree with one substitution in get_req_to_token_extra_context_len (a copy, not a hard link)."""
    tree = build_tree(root / name, "0.5.23")
    path = sizing_file(tree)
    text = path.read_text()
    start = text.index(f"def {FUNCTION}(")
    end = text.index("\ndef ", start + 1) if "\ndef " in text[start + 1 :] else len(text)
    body = text[start:end]
    assert body.count(old) == 1, f"{name}: the wheel moved {old!r}"
    if name == "a-renamed-local":  # every use of the local, in this function only
        new_body = body.replace("extra", "headroom").replace("headroom_max_context", "extra_max_context")
        new_body = new_body.replace(f"def get_req_to_token_{'headroom'}_context_len", f"def {FUNCTION}")
    else:
        new_body = body.replace(old, new)
    path.unlink()  # the base tree's file is hard-linked: never write through it
    path.write_text(text[:start] + new_body + text[end:])
    return tree


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def planted(tmp_path_factory):
    if pinned_wheel("0.5.23") is None:
        pytest.skip(missing_wheel("0.5.23"))
    root = tmp_path_factory.mktemp("planted")
    trees = {"tree": build_tree(root / "tree", "0.5.23")}
    trees.update({n: edited(root, n, *edit) for n, edit in {**PLANTS, **HARMLESS}.items()})
    base = root / "bl.json"
    write = ["baseline", "write", str(base), "--target", str(trees["tree"]), "--max-examples", "5"]
    assert main([*write, "--write-path", "model", "--quiet"]) == 0
    return trees, base


def run(spec, base, tmp_path, capsys):
    cmd = ["run", "--target", str(spec), "--max-examples", "5", "--write-path", "model", "--quiet"]
    code = main([*cmd, "--cases", str(tmp_path), "--baseline", str(base)])
    return code, capsys.readouterr().out


def prove(spec, base, tmp_path, capsys):
    cmd = ["prove", "--target", str(spec), "--space", "tiny", "--quiet", "--cases", str(tmp_path)]
    code = main([*cmd, "--baseline", str(base)])
    return code, capsys.readouterr().out


NEW = "NEW: new: req_to_token_extra_context_len"


@pytest.mark.parametrize("plant", PLANTS)
def test_run_and_prove_fail_on_a_new_cause_in_a_known_function(plant, planted, pinned_wheels, tmp_path, capsys):
    trees, base = planted
    for command in (run, prove):
        code, out = command(trees[plant], base, tmp_path, capsys)
        assert code == 1 and NEW in out and "known: #33579" in out, (command.__name__, out[-2000:])


@pytest.mark.parametrize("edit", HARMLESS)
def test_a_comment_a_reformat_and_a_renamed_local_keep_33579_known(edit, planted, pinned_wheels, tmp_path, capsys):
    trees, base = planted
    code, out = prove(trees[edit], base, tmp_path, capsys)
    assert code == 0 and "0 new root cause(s)" in out and "known: #33579" in out, out[-2000:]


@pytest.mark.parametrize("plant", PLANTS)
def test_the_plugin_line_fails_on_the_new_cause(plant, planted, pinned_wheels, tmp_path):
    trees, base = planted
    test = "fuzz.properties.test_kvrow_decode::test_the_sizing_holds_over_the_bounded_space"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--pyargs", test, "-p", "no:xdist"]
        + [f"--kvrow-target={trees[plant]}", f"--kvrow-baseline={base}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-2000:]


@pytest.mark.parametrize("plant", PLANTS)
def test_the_atheris_entry_does_not_pass_the_new_cause(plant, planted, pinned_wheels, tmp_path):
    """The entry's baseline (KVROW_FUZZ_BASELINE's reading) judges a witness of the new cause new, #33579's known."""
    from fuzz.causes.known import KnownCauses
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove as sweep
    from fuzz.oss.target import entry_from_strings

    trees, base = planted
    entry = entry_from_strings(str(trees[plant]), "write-within-row", str(tmp_path / "c"), None, str(base), quiet=True)
    assert entry.baseline
    witnesses = [g.witness for g in sweep(entry.target, request(entry.target, "tiny")).sorted_groups()]
    knows = KnownCauses(entry.target, entry.baseline)
    verdicts = {str(w.signature): knows(w) for w in witnesses if w.violation.prop.value == "write-within-row"}
    assert verdicts["write-within-row/alloc-page-1"] is True  # #33579: known
    assert not all(verdicts.values()), verdicts  # the plant's groups are not


def test_the_written_baseline_is_portable(planted):
    _, base = planted
    doc = json.loads(base.read_text())
    assert doc["target"] == "python/sglang/srt/mem_cache/allocation_sizing.py" and doc["schema_version"] == 2
