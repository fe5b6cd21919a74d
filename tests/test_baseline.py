"""``--baseline``: known root causes pass, a new one fails naming only itself, an entry no cause makes is fixed.

On the write-path fixture's 0.5.23 tree (``tests/checkout_trees.py``): its two known causes (#33579, the unified
Mamba rows) recorded by ``baseline write``; a DFLASH reserve plant in the sizing file is a new cause in a pool and
property the baseline already has (write-within-row on the standard pool); the tree with #33579 fixed reports that
entry as fixed. Proofs over the tiny space keep it to seconds.
"""

from __future__ import annotations

import json

import pytest
from checkout_trees import build_tree

from fuzz.cli import main
from fuzz.findings import baseline


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("trees")
    return {
        "tree": build_tree(root / "tree", "0.5.23"),
        "planted": build_tree(root / "planted", "0.5.23", plants=("dflash-reserve-r",)),
        "fixed": build_tree(root / "fixed", "0.5.23", fixed=("page-1-headroom",)),
    }


def prove(tree, *extra, tmp_path):
    return main(["prove", "--target", str(tree), "--space", "tiny", "--quiet", "--cases", str(tmp_path / "c"), *extra])


def test_known_causes_pass_a_new_one_fails_alone_and_a_fixed_entry_is_reported(pinned_wheels, trees, tmp_path, capsys):
    base = tmp_path / "base.json"
    write = ["baseline", "write", str(base), "--target", str(trees["tree"]), "--quiet", "--max-examples", "20"]
    assert main([*write, "--write-path", "model"]) == 0
    doc = json.loads(base.read_text())
    entries = {(e["function"], e["path"]) for e in doc["entries"]}
    assert ("get_req_to_token_extra_context_len", "python/sglang/srt/mem_cache/allocation_sizing.py") in entries
    assert (
        "KVCacheConfigurator._init_unified_mamba_pools",
        "python/sglang/srt/mem_cache/kv_cache_configurator.py",
    ) in entries
    assert not any(ch.isdigit() for e in doc["entries"] for ch in e["function"])  # no line numbers
    capsys.readouterr()

    assert prove(trees["tree"], "--baseline", str(base), tmp_path=tmp_path) == 0
    out = capsys.readouterr().out
    assert "0 new root cause(s), 2 known" in out

    assert prove(trees["planted"], "--baseline", str(base), "--json", str(tmp_path / "p.json"), tmp_path=tmp_path) == 1
    out = capsys.readouterr().out
    new = [line for line in out.splitlines() if line.startswith("  NEW: ")]
    assert len(new) == 1 and "alloc_reserve_per_decode" in new[0], out
    (entry,) = json.loads((tmp_path / "p.json").read_text())["targets"]
    assert entry["baseline"]["new"] == ["alloc_reserve_per_decode"]

    assert prove(trees["fixed"], "--baseline", str(base), tmp_path=tmp_path) == 0
    out = capsys.readouterr().out
    assert "fixed: write-within-row in get_req_to_token_extra_context_len" in out
    assert prove(trees["fixed"], "--baseline", str(base), "--baseline-strict", tmp_path=tmp_path) == 1


@pytest.mark.parametrize(
    "content, message",
    [
        ("[]", "not a kvrow-fuzz baseline"),
        ('{"schema": "kvrow-fuzz/baseline", "schema_version": true, "target": "t", "entries": []}', "version 1"),
        (
            '{"schema": "kvrow-fuzz/baseline", "schema_version": 1, "target": "t", "entries": '
            '[{"property": "write-within-row", "function": "f", "path": "../../etc/passwd"}]}',
            "relative repository path",
        ),
        (
            '{"schema": "kvrow-fuzz/baseline", "schema_version": 1, "target": "t", "entries": '
            '[{"property": "import os", "function": "f", "path": "p"}]}',
            "unknown property",
        ),
    ],
)
def test_a_file_that_is_not_a_baseline_is_one_line_and_exit_2(content, message, tmp_path, capsys):
    path = tmp_path / "b.json"
    path.write_text(content)
    assert main(["prove", "--target", "reference", "--space", "tiny", "--baseline", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_strict_needs_a_baseline(capsys):
    assert main(["run", "--target", "reference", "--baseline-strict"]) == 2
    assert "--baseline-strict needs --baseline" in capsys.readouterr().err


def test_a_written_baseline_reads_back_and_matches_the_published_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    from fuzz.causes import root_causes
    from fuzz.prove.request import request
    from fuzz.prove.sweep import prove as sweep
    from fuzz.targets import resolve_target

    target = resolve_target("reference@sglang-0.5.23")
    causes = root_causes(target, [g.witness for g in sweep(target, request(target, "tiny")).sorted_groups()])
    doc = baseline.document(target.spec, causes)
    schema = json.loads((Path(baseline.__file__).parent / "baseline.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert baseline.parse(doc, "doc") == frozenset().union(*(baseline.entries_of(c) for c in causes))
