"""``--baseline``: known root causes pass, a new one fails naming only itself, an entry no cause makes is fixed.

On the write-path fixture's 0.5.23 tree (``tests/checkout_trees.py``): its two known causes (#33579, the unified
Mamba rows) recorded by ``baseline write``; a DFLASH reserve plant in the sizing file is a new cause in a pool and
property the baseline already has (write-within-row on the standard pool); the tree with #33579 fixed reports that
entry as fixed. Proofs over the tiny space keep it to seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checkout_trees import build_tree
from hermetic import missing_wheel, pinned_wheel

from fuzz.cli import main
from fuzz.engines.sglang.backends import GRAPH_TABLES
from fuzz.findings import baseline


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def trees(tmp_path_factory):
    if pinned_wheel("0.5.23") is None:  # a module fixture runs before pinned_wheels could skip: say why here
        pytest.skip(missing_wheel("0.5.23"))
    root = tmp_path_factory.mktemp("trees")
    return {
        "tree": build_tree(root / "tree", "0.5.23"),
        "planted": build_tree(root / "planted", "0.5.23", plants=("dflash-reserve-r",)),
        "fixed": build_tree(root / "fixed", "0.5.23", fixed=("page-1-headroom",)),
        "fixed-planted": build_tree(
            root / "fixed-planted", "0.5.23", fixed=("page-1-headroom",), plants=("unified-swa-rows-3",)
        ),
    }


@pytest.fixture(scope="session")  # once per worker: see conftest.py
def tree_causes(trees):
    """The unfixed tree's (target, root causes), computed once: what each baseline here is written from."""
    return causes_of(trees["tree"])


def causes_of(tree):
    """The tree's root causes over the tiny space (the sweep's witnesses, not replayed on SGLang's path)."""
    from fuzz.engines import engine_of
    from fuzz.engines.sglang.causes.counterfactual import root_causes
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove
    from fuzz.prove.proof import ProveOptions
    from fuzz.prove.tables import prove_tables
    from fuzz.tables.causes import table_causes
    from fuzz.targets.resolve import resolve_target

    target = resolve_target(str(tree))
    causes = root_causes(target, [g.witness for g in prove(target, request(target, "tiny")).sorted_groups()])
    proofs = prove_tables(target, engine_of(target).prover(target, ProveOptions(space="tiny")))  # the page tables
    return target, causes + table_causes([w for p in proofs for w in p.witnesses], target)


def test_known_causes_pass_a_new_one_fails_alone_and_a_fixed_entry_is_reported(pinned_wheels, trees, tree_causes):
    target, causes = tree_causes
    doc = baseline.document(baseline.portable_target(target), causes)
    assert doc["target"] == "python/sglang/srt/mem_cache/allocation_sizing.py"  # portable: never an absolute path
    rows = [e for e in doc["entries"] if e["table"] == "req_to_token"]
    assert {e.get("known") for e in rows} == {"page-1-headroom", "unified-rows"}  # by fix, not by place
    fa3 = {e["function"] for e in doc["entries"] if e["table"] == "fa3_page_table"}  # a new cause: by its code
    assert fa3 == {"FlashAttentionBackend.__init__", "FlashAttentionBackend.init_cuda_graph_state"}
    trt = {e["function"] for e in doc["entries"] if e["table"] == "trtllm_mha_page_table"}
    assert trt == {"TRTLLMHAAttnBackend.__init__", "TRTLLMHAAttnBackend.init_cuda_graph_state"}
    mla = {e["function"] for e in doc["entries"] if e["table"] == "flashmla_page_table"}
    assert mla == {"FlashMLABackend.init_cuda_graph_state"}
    assert not any(ch.isdigit() for e in doc["entries"] for ch in e.get("function", ""))  # no line numbers
    known = baseline.parse(doc, "the tree's baseline")

    judged = baseline.judge(causes_of(trees["tree"])[1], known)
    assert (len(judged.new), len(judged.known), judged.fixed) == (0, 2 + len(GRAPH_TABLES), [])

    judged = baseline.judge(causes_of(trees["planted"])[1], known)  # the standard pool's reserve: a pool known
    assert [c.key for c in judged.new] == ["alloc_reserve_per_decode"]  # ... and a property known: only it is new

    judged = baseline.judge(causes_of(trees["fixed"])[1], known)
    assert [str(e) for e in judged.fixed] == ["write-within-row of known bug page-1-headroom"]
    # With #33579 fixed the tree's headroom is its release's with that known fix applied (``counterfactual.
    # _applied``), so the other known fixes are tried on top of it: the unified builders' narrow rows at page 1 are
    # unified-rows itself, not a piece of the tree that differs from the reference.
    graph = {f"{name}-width" for name in GRAPH_TABLES}
    assert judged.new == [] and {c.key for c in judged.known} == {"unified-rows", *graph}
    ids = {baseline.identity(c) for c in judged.known}
    assert "req_to_token:known:unified-rows" in ids and any(i.startswith("fa3_page_table:new:") for i in ids)


def test_a_plant_in_a_known_bugs_code_is_new_on_the_fixed_tree(pinned_wheels, trees, tree_causes):
    """The alias lets through only the code the known bug was found in: one column less in the unified Mamba+SWA
    builder's row (its digest changes) is new, beside #33579's fix, under the unfixed tree's baseline."""
    target, causes = tree_causes
    known = baseline.parse(baseline.document(baseline.portable_target(target), causes), "the tree's baseline")
    judged = baseline.judge(causes_of(trees["fixed-planted"])[1], known)
    assert [(c.key, c.code) for c in judged.new] == [
        (
            "req_to_token_row_width",
            [
                (
                    "python/sglang/srt/mem_cache/kv_cache_configurator.py",
                    "KVCacheConfigurator._init_unified_mamba_swa_pools",
                )
            ],
        )
    ]
    assert baseline.identity(judged.new[0]).startswith("req_to_token:new:req_to_token_row_width@")


def test_prove_on_the_fixed_tree_passes_with_the_unfixed_trees_baseline(pinned_wheels, trees, tree_causes, tmp_path):
    """What a maintainer fixing #33579 runs: the gate passes (unified-rows known, #33579 reported fixed)."""
    target, causes = tree_causes
    written = tmp_path / "bl.json"
    written.write_text(baseline.text(baseline.portable_target(target), causes))
    cmd = ["prove", "--target", str(trees["fixed"]), "--space", "tiny", "--quiet", "--cases", str(tmp_path)]
    assert main([*cmd, "--baseline", str(written), "--json", str(tmp_path / "r.json")]) == 0
    judged = json.loads((tmp_path / "r.json").read_text())["targets"][0]["baseline"]
    assert judged["new"] == [] and "unified-rows" in judged["known"]
    assert judged["fixed"] == ["write-within-row of known bug page-1-headroom"]
    doc = json.loads(written.read_text())  # the aliases travel in the file, as the schema says, and read back
    pytest.importorskip("jsonschema").validate(doc, json.loads(SCHEMA_PATH.read_text()))
    (rows,) = [e for e in doc["entries"] if e.get("known") == "unified-rows"]
    assert {a["function"] for a in rows["as_new"]} >= {"KVCacheConfigurator._init_unified_mamba_swa_pools"}
    read = {e.known: e.as_new for e in baseline.load(str(written)).entries}
    assert [(p, f, t, d) for p, f, t, d in read["unified-rows"]] == [
        (a["path"], a["function"], a["term"], a["digest"]) for a in rows["as_new"]
    ]


def test_the_commands_exit_on_new_causes_only_and_strict_on_fixed_ones(tmp_path, capsys):
    base = tmp_path / "base.json"
    write = ["baseline", "write", str(base), "--target", "reference@sglang-0.5.23", "--max-examples", "5"]
    assert main([*write, "--quiet", "--write-path", "model"]) == 0
    assert (
        f"{2 + len(GRAPH_TABLES)} root cause(s)" in capsys.readouterr().out
    )  # the page tables' by their covering sets
    prove = ["prove", "--target", "reference@sglang-0.5.23", "--space", "tiny", "--quiet", "--cases", str(tmp_path)]
    assert main([*prove, "--baseline", str(base), "--json", str(tmp_path / "r.json")]) == 0
    assert f"0 new root cause(s), {2 + len(GRAPH_TABLES)} known" in capsys.readouterr().out
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
        == 2
    )  # a baseline of 0.5.23 does not cover 0.5.18 (test_baseline_identity: retargeted, its #35424 and #35265 fail)
    doc = json.loads(base.read_text())
    doc["entries"].append({"property": "write-within-row", "table": "req_to_token", "known": "gone"})
    base.write_text(json.dumps(doc))
    assert main([*prove, "--baseline", str(base)]) == 0
    assert "fixed: write-within-row of known bug gone" in capsys.readouterr().out
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
        ('{"schema": "kvrow-fuzz/baseline", "schema_version": true, "target": "t", "entries": []}', "version 2"),
        (
            '{"schema": "kvrow-fuzz/baseline", "schema_version": 2, "target": "t", "entries": '
            '[{"property": "write-within-row", "table": "req_to_token", "function": "f", "path": "../../etc/passwd", '
            '"term": "t", "digest": "0123456789abcdef"}]}',
            "relative repository path",
        ),
        (
            '{"schema": "kvrow-fuzz/baseline", "schema_version": 2, "target": "t", "entries": '
            '[{"property": "import os", "table": "req_to_token", "known": "k"}]}',
            "unknown property",
        ),
        (
            '{"schema": "kvrow-fuzz/baseline", "schema_version": 1, "target": "t", "entries": '
            '[{"property": "write-within-row", "function": "f", "path": "p"}]}',
            "upgrade it: kvrow-fuzz baseline upgrade",
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

    from fuzz.engines.sglang.causes.counterfactual import root_causes
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove as sweep
    from fuzz.targets.resolve import resolve_target

    target = resolve_target("reference@sglang-0.5.23")
    causes = root_causes(target, [g.witness for g in sweep(target, request(target, "tiny")).sorted_groups()])
    doc = baseline.document(baseline.portable_target(target), causes)
    schema = json.loads((Path(baseline.__file__).parent / "baseline.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert baseline.parse(doc, "doc") == frozenset().union(*(baseline.entries_of(c) for c in causes))


def test_the_plugins_properties_pass_a_known_cause_and_fail_a_new_one(pinned_wheels, tree_causes):
    from allocator_model.scenario import DecodeScenario
    from fuzz.engines.sglang.decode.check import DecodeCase
    from fuzz.verdict import PIPELINE

    target, causes = tree_causes
    known = baseline.parse(baseline.document(baseline.portable_target(target), causes), "the tree's baseline")
    f = next(c for c in causes if c.key == "unified-rows")
    (case,) = [w for w in _witnesses(target) if w.signature == f.variants[0]]
    decode = DecodeCase(DecodeScenario.from_dict(case.config, case.case))

    def new(entries):  # what the plugin's property test fails on (``holds``)
        verdict = PIPELINE.case(target, decode, (case.violation.prop,), confirm=False, baseline=entries)
        return [f.signature for f in verdict.new]

    assert new(known) == []  # known: the property test passes
    assert new(frozenset()) == [case.signature]  # an empty baseline: it fails
    assert new(None) == [case.signature]  # no baseline: it fails


def _witnesses(target):
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove

    return [g.witness for g in prove(target, request(target, "tiny")).sorted_groups()]


# -- the one format: releases and required (matrix --expect), read as the schema says --------------------------

SCHEMA_PATH = Path(baseline.__file__).parent / "baseline.schema.json"
SIZING = "python/sglang/srt/mem_cache/allocation_sizing.py"


TERM, DIGEST = "req_to_token_extra_context_len", "0123456789abcdef"


def v2(*entries, target="sglang==0.5.18", **extra):
    doc = {"schema": "kvrow-fuzz/baseline", "schema_version": 2, "target": target, "entries": list(entries)}
    return {**doc, **extra}


def item(function, **extra):
    """A new cause's entry in ``function``."""
    return {
        "property": "write-within-row",
        "table": "req_to_token",
        "function": function,
        "path": SIZING,
        "term": TERM,
        "digest": DIGEST,
        **extra,
    }


KNOWN_ENTRY = {"property": "write-within-row", "table": "req_to_token", "known": "unified-rows"}
ALIAS = {"function": "C.build", "path": SIZING, "term": "req_to_token_row_width", "digest": DIGEST}


def entry(function):
    return baseline.Entry("write-within-row", "req_to_token", "", function, SIZING, TERM, DIGEST)


def test_a_file_without_the_optional_fields_covers_its_targets_release():
    """Its entries are known wherever --baseline reads it, expected on its target's release, none required."""
    jsonschema = pytest.importorskip("jsonschema")
    doc = v2(item("get_alloc_len_per_decode"), item("get_req_to_token_extra_context_len"))
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    known = baseline.read(doc, "v2")
    assert baseline.parse(doc, "v2") == known.entries and len(known.entries) == 2
    assert known.releases == ("0.5.18",) and known.expected("0.5.18").entries == known.entries
    assert known.expected("0.5.18").required == frozenset() and not known.covers("0.5.19")
    assert baseline.read(v2(item("f"), target="reference@sglang-0.5.18"), "model").releases == ()


def test_releases_and_required_say_where_an_entry_is_expected_and_must_be_found():
    doc = v2(
        item("a", releases=["0.5.19"], required=True),
        item("a", releases=["0.5.18"]),  # the same key, allowed only, elsewhere
        item("b"),  # every release the document covers
        target="sglang",
        releases=["0.5.18", "0.5.19"],
        description="what this file is",
    )
    pytest.importorskip("jsonschema").validate(doc, json.loads(SCHEMA_PATH.read_text()))
    known = baseline.read(doc, "doc")
    a, b = (entry(f) for f in "ab")
    assert known.expected("0.5.18") == baseline.Expected(frozenset({a, b}), frozenset())
    assert known.expected("0.5.19") == baseline.Expected(frozenset({a, b}), frozenset({a}))
    assert known.entries == {a, b} and known.releases == ("0.5.18", "0.5.19")
    no_list = {k: v for k, v in doc.items() if k != "releases"}  # covered: the target's and the entries' releases
    assert baseline.read(no_list, "doc").releases == ("0.5.18", "0.5.19")


def test_a_releases_document_reads_back_and_follows_the_schema():
    a, b = (entry(f) for f in "ab")
    found = {"0.5.9": {a: True}, "0.5.10": {a: False, b: True}}  # ordered as versions, not as text
    doc = baseline.releases_document("sglang", found, "how it was written")
    pytest.importorskip("jsonschema").validate(doc, json.loads(SCHEMA_PATH.read_text()))
    assert doc["releases"] == ["0.5.9", "0.5.10"]
    assert [(e["function"], e["releases"], e["required"]) for e in doc["entries"]] == [
        ("a", ["0.5.9"], True),
        ("a", ["0.5.10"], False),
        ("b", ["0.5.10"], True),
    ]
    known = baseline.read(json.loads(baseline.dumps(doc)), "doc")
    assert known.expected("0.5.10") == baseline.Expected(frozenset({a, b}), frozenset({b}))
    assert known.expected("0.5.9") == baseline.Expected(frozenset({a}), frozenset({a}))


SHAPE = "must have property, table and either known or function, path, term, digest"
BAD = [
    (v2(item("f", releases="0.5.18")), "releases must be a list of 1 to 256 releases"),
    (v2(item("f", releases=["0.5.18", "0.5.18"])), "a release is listed twice"),
    (v2(item("f", releases=["0.5.x"])), "is not a release"),
    (v2(item("f", releases=["0.5.18"] * 300)), "a list of 1 to 256"),
    (v2(item("f", required=1)), "required must be true or false"),
    (v2(item("f"), releases=[]), "releases must be a list of 1 to 256"),
    (v2(item("f"), description="x" * 2001), "description must be a text of at most 2000"),
    (v2(item("f"), extra=1), "not a kvrow-fuzz baseline"),
    (v2(item("f", line=3)), SHAPE),
    (v2(item("f", as_new=[])), SHAPE),  # aliases are a known entry's
    (v2(dict(KNOWN_ENTRY, as_new={})), "as_new must be a list of at most 64"),
    (v2(dict(KNOWN_ENTRY, as_new=[ALIAS] * 65)), "as_new must be a list of at most 64"),
    (v2(dict(KNOWN_ENTRY, as_new=[{**ALIAS, "line": 3}])), "each must have exactly function, path, term, digest"),
    (v2(dict(KNOWN_ENTRY, as_new=[{**ALIAS, "path": "../x.py"}])), "path must be a relative repository path"),
    (v2(dict(KNOWN_ENTRY, as_new=[{**ALIAS, "digest": "12"}])), "digest must be 16 hexadecimal digits"),
]


@pytest.mark.parametrize("doc, message", BAD, ids=[f"{i}-{m[:40]}" for i, (_, m) in enumerate(BAD)])
def test_the_parser_and_the_schema_refuse_the_same_bad_fields(doc, message):
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(baseline.BaselineError, match=message) as raised:
        baseline.read(doc, "bad.json")
    assert str(raised.value).startswith("bad.json") and "\n" not in str(raised.value)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))


def test_the_parser_refuses_what_the_schema_cannot_say():
    """An entry's release outside the document's (a typo), a release with a newline after it."""
    with pytest.raises(baseline.BaselineError, match="release 0.5.19 is not one of the document's releases"):
        baseline.read(v2(item("f", releases=["0.5.19"]), releases=["0.5.18"]), "bad.json")
    with pytest.raises(baseline.BaselineError, match="is not a release"):
        baseline.read(v2(item("f", releases=["0.5.18\n"])), "bad.json")


def test_baseline_write_releases_merges_each_release_and_the_allowed_baseline(tmp_path, monkeypatch, capsys):
    """One entry per cause with its releases, required where the campaign found it, --allow's entries allowed."""
    from fuzz.ci import baseline as command
    from fuzz.findings.cause import Cause, CauseKind
    from fuzz.findings.kinds import Signature

    def cause(function, group="dcp>1"):
        c = Cause(
            TERM,
            CauseKind.PIECE,
            "new",
            function,
            variants=[Signature.parse(f"write-within-row/{group}")],
            table="req_to_token",
        )
        c.code, c.digests = [(SIZING, function)], {(SIZING, function): DIGEST}
        return c

    found = {"0.5.18": [cause("a"), cause("b")], "0.5.19": [cause("a", "paged")], "0.5.20": []}
    monkeypatch.setattr(command, "causes_of", lambda spec, args: (spec, found[spec.removeprefix("sglang==")]))
    allow = tmp_path / "more.json"
    allow.write_text(json.dumps(v2(item("a"), item("c"), target="sglang", releases=["0.5.18", "0.5.20", "0.5.23"])))
    out = tmp_path / "base.json"
    args = ["baseline", "write", str(out), "--releases", "0.5.18..0.5.20", "--allow", str(allow)]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    pytest.importorskip("jsonschema").validate(doc, json.loads(SCHEMA_PATH.read_text()))
    assert doc["releases"] == ["0.5.18", "0.5.19", "0.5.20"] and "--allow more.json" in doc["description"]
    assert [(e["function"], e["releases"], e["required"]) for e in doc["entries"]] == [
        ("a", ["0.5.18", "0.5.19"], True),
        ("a", ["0.5.20"], False),
        ("b", ["0.5.18"], True),
        ("c", ["0.5.18", "0.5.20"], False),
    ]
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"[0.5.18] 2 root cause(s) (new: {TERM}, new: {TERM}), 2 entr(ies) required, 1 allowed")
    assert lines[-1] == f"{out}: 3 release(s), 4 entr(ies), 2 required"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--target", "reference", "--allow", "x.json"], "--allow is for --releases"),
        (["--releases", "0.5.18", "--sglang-version", "0.5.18"], "--sglang-version is for --target"),
        (["--releases", "0.6.0..0.6.9"], "--releases: no modeled release in 0.6.0..0.6.9"),
        (["--releases", "0.5.18", "--allow", "missing.json"], "--allow missing.json does not exist"),
        (["--target", "reference", "--releases", "0.5.18"], "not allowed with argument"),
        ([], "write needs one of the arguments --target --releases"),
    ],
)
def test_baseline_write_bad_input_is_one_line_and_exit_2(extra, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["baseline", "write", "b.json", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "b.json").exists()


def test_a_known_bug_is_keyed_by_its_fix_and_an_unexplained_cause_by_nothing():
    """#35265 lives in the DFLASH write path, which no sizing function answers: its entry is its fix's key (so a
    baseline can know it); an unexplained cause makes no entry (it is always new)."""
    from allocator_model.known_bugs import KNOWN_FIXES
    from fuzz.findings.cause import Cause, CauseKind
    from fuzz.findings.kinds import Signature

    dflash = Cause(
        "dflash-page-rounding",
        CauseKind.KNOWN,
        "#35265",
        "t",
        variants=[Signature.parse("write-within-row/dflash")],
        table="req_to_token",
    )
    (e,) = baseline.entries_of(dflash)
    assert (e.known, e.function, e.path) == ("dflash-page-rounding", "", "")
    for fix in KNOWN_FIXES:  # every fix's key is a key a baseline accepts
        known = {"property": "write-within-row", "table": "req_to_token", "known": fix.key}
        assert baseline.read(v2(known), "doc").entries
    assert baseline.is_known(dflash, frozenset({e}))
    unexplained = Cause("unexplained", CauseKind.UNEXPLAINED, "", "t", variants=dflash.variants, table="req_to_token")
    assert baseline.entries_of(unexplained) == set() and not baseline.is_known(unexplained, frozenset({e}))


def test_a_baseline_written_on_a_lone_sizing_file_reads_back_and_names_sglangs_path(tmp_path, monkeypatch, capsys):
    """A lone file (``--target my_sizing.py``) stands for SGLang's ``allocation_sizing.py``: its baseline names
    that repository path, whatever directory it was written from (an absolute ``file://`` path made a baseline
    that ``--baseline`` then refused, and a path under the working directory one that depended on it)."""
    shape = Path(__file__).parent / "sglang_shapes" / "uno.py"  # 0.5.23's shape: #33579 open
    sizing = tmp_path / "work" / "my_sizing.py"
    sizing.parent.mkdir()
    sizing.write_text(shape.read_text())
    written = []
    for where in (tmp_path / "work", tmp_path):  # the file under the working directory, then outside it
        monkeypatch.chdir(where)
        out = tmp_path / f"base-{len(written)}.json"
        cmd = ["baseline", "write", str(out), "--target", f"{sizing}@0.5.23", "--max-examples", "5"]
        assert main([*cmd, "--write-path", "model", "--quiet"]) == 0, capsys.readouterr()
        written.append(baseline.load(str(out)).entries)
    assert written[0] == written[1] and written[0], written
    assert {e.path for e in written[0]} <= {"python/sglang/srt/mem_cache/allocation_sizing.py", ""}
    targets = [json.loads((tmp_path / f"base-{i}.json").read_text())["target"] for i in (0, 1)]
    assert targets == ["my_sizing.py@0.5.23", "work/my_sizing.py@0.5.23"]  # relative to where it ran, never absolute
    prove = ["prove", "--target", f"{sizing}@0.5.23", "--space", "tiny", "--quiet", "--cases", str(tmp_path)]
    assert main([*prove, "--baseline", str(tmp_path / "base-1.json")]) == 0, capsys.readouterr()
    assert "0 new root cause(s)" in capsys.readouterr().out


def test_the_plugins_lifecycle_test_fails_only_on_a_cause_the_baseline_does_not_know():
    """``--kvrow-baseline`` holds for the lifecycle test as for the decode properties (it was ignored there:
    a known cause failed the plugin line)."""
    from hypothesis import settings

    from fuzz.engines.sglang.lifecycle.machine import lifecycle_campaign
    from fuzz.targets.resolve import resolve_target
    from fuzz.verdict import PIPELINE

    target = resolve_target("reference@sglang-0.5.18")
    found = lifecycle_campaign(target, settings(max_examples=30, database=None), steps=30, max_rounds=1).findings
    assert found
    known = frozenset(baseline.made_by(PIPELINE.causes(target, found)))
    assert known and PIPELINE.new(target, found, known) == []
    assert PIPELINE.new(target, found, frozenset()) == found


def test_a_checkout_has_one_portable_name_however_it_is_spelled(pinned_wheels, trees, monkeypatch):
    """The action writes its baseline with ``--target /abs/checkout`` and runs with ``python/sglang`` from inside
    it: every spelling of the checkout names SGLang's repository path of its sizing file, so the two agree."""
    from fuzz.targets.resolve import resolve_target

    tree = trees["tree"]
    sizing = "python/sglang/srt/mem_cache/allocation_sizing.py"
    spellings = [str(tree), f"{tree}/", str(tree / "python" / "sglang"), str(tree / sizing)]
    names = {baseline.portable_target(resolve_target(s)) for s in spellings}
    monkeypatch.chdir(tree)
    names |= {baseline.portable_target(resolve_target(s)) for s in (".", "python/sglang", sizing)}
    assert names == {sizing}


def _row_cause(digest):
    """A new cause in a unified builder's row (what the unified-rows bug reads as with #33579 fixed)."""
    from fuzz.findings.cause import Cause, CauseKind
    from fuzz.findings.kinds import Signature

    c = Cause(
        ALIAS["term"],
        CauseKind.PIECE,
        "new",
        "t",
        variants=[Signature.parse("write-within-row/dcp>1")],
        table="req_to_token",
    )
    c.code, c.digests = [(SIZING, ALIAS["function"])], {(SIZING, ALIAS["function"]): digest}
    return c


def test_a_piece_cause_is_known_by_a_known_entrys_alias_only_with_its_digest():
    known = baseline.read(v2(dict(KNOWN_ENTRY, as_new=[ALIAS])), "doc").entries
    same, other = _row_cause(DIGEST), _row_cause("fedcba9876543210")
    judged = baseline.judge([same], known)
    assert (judged.new, judged.known, judged.fixed) == ([], [same], [])  # the known entry is used, not "fixed"
    assert baseline.identity(same) == "req_to_token:known:unified-rows"  # SARIF: the known bug's alert
    judged = baseline.judge([other], known)
    assert (judged.new, [str(e) for e in judged.fixed]) == ([other], ["write-within-row of known bug unified-rows"])
    assert baseline.identity(other).startswith("req_to_token:new:req_to_token_row_width@")
    for elsewhere in ({**ALIAS, "function": "C.other"}, {**ALIAS, "term": "req_to_token_extra_context_len"}):
        assert baseline.judge([same], baseline.read(v2(dict(KNOWN_ENTRY, as_new=[elsewhere])), "doc").entries).new
    neighbour = dict(KNOWN_ENTRY, property="page-aligned-growth", as_new=[ALIAS])  # another property: not this one
    assert baseline.judge([same], baseline.read(v2(neighbour), "doc").entries).new


def test_a_releases_document_keeps_a_known_entrys_aliases_from_every_release():
    one = baseline.Entry(
        "write-within-row",
        "req_to_token",
        known="unified-rows",
        as_new=((SIZING, "C.a", "req_to_token_row_width", DIGEST),),
    )
    two = baseline.Entry(
        "write-within-row",
        "req_to_token",
        known="unified-rows",
        as_new=((SIZING, "C.b", "req_to_token_row_width", DIGEST),),
    )
    doc = baseline.releases_document("sglang", {"0.5.18": {one: True}, "0.5.19": {two: True}})
    pytest.importorskip("jsonschema").validate(doc, json.loads(SCHEMA_PATH.read_text()))
    (item,) = doc["entries"]
    assert [a["function"] for a in item["as_new"]] == ["C.a", "C.b"] and item["releases"] == ["0.5.18", "0.5.19"]
    (read,) = baseline.read(doc, "doc").entries
    assert [a[1] for a in read.as_new] == ["C.a", "C.b"]
