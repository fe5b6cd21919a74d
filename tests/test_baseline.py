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


def causes_of(tree):
    """The tree's root causes over the tiny space (the sweep's witnesses, not replayed on SGLang's path)."""
    from fuzz.causes import root_causes
    from fuzz.prove.request import request
    from fuzz.prove.sweep import prove
    from fuzz.targets import resolve_target

    target = resolve_target(str(tree))
    return target, root_causes(target, [g.witness for g in prove(target, request(target, "tiny")).sorted_groups()])


def test_known_causes_pass_a_new_one_fails_alone_and_a_fixed_entry_is_reported(pinned_wheels, trees):
    target, causes = causes_of(trees["tree"])
    doc = baseline.document(target.spec, causes)
    entries = {(e["function"], e["path"]) for e in doc["entries"]}
    assert ("get_req_to_token_extra_context_len", "python/sglang/srt/mem_cache/allocation_sizing.py") in entries
    builder = ("KVCacheConfigurator._init_unified_mamba_pools", "python/sglang/srt/mem_cache/kv_cache_configurator.py")
    assert builder in entries
    assert not any(ch.isdigit() for e in doc["entries"] for ch in e["function"])  # no line numbers
    known = baseline.parse(doc, "the tree's baseline")

    judged = baseline.judge(causes_of(trees["tree"])[1], known)
    assert (len(judged.new), len(judged.known), judged.fixed) == (0, 2, [])

    judged = baseline.judge(causes_of(trees["planted"])[1], known)  # the standard pool's reserve: a pool known
    assert [c.key for c in judged.new] == ["alloc_reserve_per_decode"]  # ... and a property known: only it is new

    judged = baseline.judge(causes_of(trees["fixed"])[1], known)
    assert not judged.new
    assert [str(e) for e in judged.fixed] == [
        "write-within-row in get_req_to_token_extra_context_len (python/sglang/srt/mem_cache/allocation_sizing.py)"
    ]


def test_the_commands_exit_on_new_causes_only_and_strict_on_fixed_ones(tmp_path, capsys):
    base = tmp_path / "base.json"
    write = ["baseline", "write", str(base), "--target", "reference@sglang-0.5.23", "--max-examples", "5"]
    assert main([*write, "--quiet", "--write-path", "model"]) == 0
    assert "2 root cause(s)" in capsys.readouterr().out
    prove = ["prove", "--target", "reference@sglang-0.5.23", "--space", "tiny", "--quiet", "--cases", str(tmp_path)]
    assert main([*prove, "--baseline", str(base), "--json", str(tmp_path / "r.json")]) == 0
    assert "0 new root cause(s), 2 known" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["targets"][0]["baseline"]["new"] == []
    assert (
        main(
            [
                "prove",
                "--target",
                "reference@sglang-0.5.18",
                "--space",
                "tiny",
                "--quiet",
                "--cases",
                str(tmp_path),
                "--baseline",
                str(base),
            ]
        )
        == 1
    )  # 0.5.18's #35424 and #35265 are not in it
    doc = json.loads(base.read_text())
    doc["entries"].append({"property": "write-within-row", "function": "gone", "path": "python/sglang/x.py"})
    base.write_text(json.dumps(doc))
    assert main([*prove, "--baseline", str(base)]) == 0
    assert "fixed: write-within-row in gone (python/sglang/x.py)" in capsys.readouterr().out
    assert main([*prove, "--baseline", str(base), "--baseline-strict"]) == 1
    assert (
        main(
            [
                "run",
                "--target",
                "reference@sglang-0.5.23",
                "--max-examples",
                "5",
                "--quiet",
                "--cases",
                str(tmp_path),
                "--baseline",
                str(base),
            ]
        )
        == 0
    )


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


def test_the_plugins_properties_pass_a_known_cause_and_fail_a_new_one(pinned_wheels, trees):
    from allocator_model.scenario import DecodeScenario
    from fuzz.properties.test_kvrow_decode import new_only

    target, causes = causes_of(trees["tree"])
    known = baseline.parse(baseline.document(target.spec, causes), "the tree's baseline")
    f = next(c for c in causes if c.key == "unified-rows")
    (case,) = [w for w in _witnesses(target) if w.signature == f.variants[0]]
    scenario = DecodeScenario.from_dict(case.config, case.case)
    assert new_only(target, known, [case.violation], scenario) == []  # known: the property test passes
    assert new_only(target, frozenset(), [case.violation], scenario) == [case.violation]  # no baseline: it fails
    assert new_only(target, None, [case.violation], scenario) == [case.violation]


def _witnesses(target):
    from fuzz.prove.request import request
    from fuzz.prove.sweep import prove

    return [g.witness for g in prove(target, request(target, "tiny")).sorted_groups()]
