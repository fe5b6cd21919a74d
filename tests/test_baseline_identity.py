"""A baseline entry is a root cause's identity, not a place, and suppresses only on the target it names (issue 33).

The digest (``fuzz.causes.identity``) survives what changes no behaviour and changes with what does; a new cause
in a function with a known one is new; a baseline of another target or release is one line and exit 2; every
reader (run, prove, the plugin, the Atheris entry, matrix --expect) reads it through ``baseline.load_for``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.causes.identity import digest
from fuzz.cli import main
from fuzz.engines.sglang.backends import GRAPH_TABLES
from fuzz.findings import baseline
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.kinds import Signature

ROOT = Path(__file__).resolve().parent.parent
SIZING = "python/sglang/srt/mem_cache/allocation_sizing.py"

# A function of the headroom's shape (our own text, not SGLang's), and edits of it.
SOURCE = '''
def page():
    return 64

def reserve():
    """The reserve."""
    return 2 * page()

def headroom() -> int:
    """Row headroom."""
    # a comment
    extra = 4 + (drafts() or 0)
    page_size = page()
    if page_size > 1:
        extra = max(extra, reserve() + page_size - 1)
    return extra
'''
SAME = {
    "a comment": SOURCE.replace("    # a comment\n", "    # another comment\n    # and one more\n"),
    "a docstring": SOURCE.replace('"""Row headroom."""', '"""The row headroom past the context."""'),
    "a reformat": SOURCE.replace(
        "extra = max(extra, reserve() + page_size - 1)",
        "extra = max(\n            extra,\n            reserve() + page_size - 1,\n        )",
    ),
    "a renamed local": SOURCE.replace("page_size", "ps"),
}
CHANGED = {
    "a constant": SOURCE.replace("+ page_size - 1)", "+ page_size - 2)"),
    "halved": SOURCE.replace("reserve() + page_size - 1)", "(reserve() + page_size - 1) // 2)"),
    "an operator": SOURCE.replace("if page_size > 1:", "if page_size >= 1:"),
    "a called name": SOURCE.replace("extra = max(", "extra = min("),
    "a helper it calls": SOURCE.replace("return 2 * page()", "return 3 * page()"),
    "a helper's helper": SOURCE.replace("return 64", "return 32"),
}


@pytest.mark.parametrize("what", SAME)
def test_the_digest_survives_what_changes_no_behaviour(what):
    assert SAME[what] != SOURCE
    assert digest(SAME[what], "headroom") == digest(SOURCE, "headroom") is not None


@pytest.mark.parametrize("what", CHANGED)
def test_the_digest_changes_with_behaviour(what):
    assert digest(CHANGED[what], "headroom") != digest(SOURCE, "headroom")


def test_a_model_revision_is_part_of_the_digest_and_an_unreadable_function_has_none():
    from allocator_model.revisions import REFERENCE, REVISIONS
    from fuzz.engines.sglang.digests import revision_fields

    old = REVISIONS["sglang-0.5.18"]
    assert digest(SOURCE, "headroom", revision_fields(old)) != digest(SOURCE, "headroom", revision_fields(REFERENCE))
    assert digest(SOURCE, "missing") is None and digest("def (:", "headroom") is None


def piece(key="req_to_token_extra_context_len", function="get_req_to_token_extra_context_len", d="0123456789abcdef"):
    c = Cause(
        key, CauseKind.PIECE, "new", "t", variants=[Signature.parse("write-within-row/paged")], table="req_to_token"
    )
    c.code, c.digests = [(SIZING, function)], {(SIZING, function): d}
    return c


def test_a_new_cause_in_a_known_function_is_new():
    """The old key (property, function, path) knew every cause of a function; the identity knows one."""
    known = frozenset(baseline.entries_of(piece()))
    assert baseline.is_known(piece(), known)
    assert not baseline.is_known(piece(d="fedcba9876543210"), known)  # the function's code changed
    assert not baseline.is_known(piece(key="alloc_reserve_per_decode"), known)  # another term differs
    unreadable = piece()
    unreadable.digests = {(SIZING, "get_req_to_token_extra_context_len"): None}
    assert baseline.entries_of(unreadable) == set() and not baseline.is_known(unreadable, known)
    k = Cause(
        "page-1-headroom",
        CauseKind.KNOWN,
        "#33579",
        "t",
        variants=[Signature.parse("write-within-row/alloc-page-1")],
        table="req_to_token",
    )
    assert baseline.entries_of(k) == {baseline.Entry("write-within-row", "req_to_token", known="page-1-headroom")}


def test_sarif_fingerprints_follow_the_identity():
    from fuzz.findings.sarif import CAUSE_FINGERPRINT, cause_fingerprint
    from fuzz.targets.resolve import resolve_target

    target = resolve_target("reference@sglang-0.5.23")
    f = type("F", (), {"target": target.spec, "signature": Signature.parse("write-within-row/paged")})()
    a, b = cause_fingerprint(f, target, piece()), cause_fingerprint(f, target, piece(d="fedcba9876543210"))
    assert a != b and set(a) == {CAUSE_FINGERPRINT}
    assert a[CAUSE_FINGERPRINT].startswith("reference@sglang-0.5.23|req_to_token:new:req_to_token_extra_context_len@")


# -- scope: a baseline suppresses only on the target (and release) it names -------------------------------------


def model_baseline(tmp_path, revision="sglang-0.5.23", target=None):
    """A baseline of the model revision's causes over the tiny space (a second or two): its sizing's and its
    checked tables' (the backends' page tables)."""
    from fuzz.engines import engine_of
    from fuzz.engines.sglang.causes.counterfactual import root_causes
    from fuzz.engines.sglang.prove.request import request
    from fuzz.engines.sglang.prove.sweep import prove
    from fuzz.prove.proof import ProveOptions
    from fuzz.prove.tables import prove_tables
    from fuzz.tables.causes import table_causes
    from fuzz.targets.resolve import resolve_target

    t = resolve_target(f"reference@{revision}")
    causes = root_causes(t, [g.witness for g in prove(t, request(t, "tiny")).sorted_groups()])
    proofs = prove_tables(t, engine_of(t).prover(t, ProveOptions(space="tiny")))
    causes += table_causes([w for p in proofs for w in p.witnesses], t)
    path = tmp_path / f"{revision}.json"
    doc = baseline.document(target or baseline.portable_target(t), causes)
    path.write_text(json.dumps(doc))
    return path, doc


def prove(spec, base, tmp_path, *extra):
    cmd = ["prove", "--target", spec, "--space", "tiny", "--quiet", "--cases", str(tmp_path / "cases")]
    return main([*cmd, "--baseline", str(base), *extra])


def test_a_baseline_of_one_model_revision_does_not_hide_anothers_causes(tmp_path, capsys):
    base, doc = model_baseline(tmp_path)
    assert prove("reference@sglang-0.5.23", base, tmp_path) == 0
    assert f"0 new root cause(s), {2 + len(GRAPH_TABLES)} known" in capsys.readouterr().out
    assert prove("reference@sglang-0.5.18", base, tmp_path) == 2  # another target: not covered
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "covers reference@sglang-0.5.23, not reference@sglang-0.5.18" in err
    retargeted = tmp_path / "retargeted.json"  # 0.5.23's causes, named for 0.5.18: its extra causes stay new
    retargeted.write_text(json.dumps({**doc, "target": "reference@sglang-0.5.18"}))
    assert prove("reference@sglang-0.5.18", retargeted, tmp_path) == 1
    out = capsys.readouterr().out
    assert "NEW: #35424" in out and "NEW: #35265" in out and "known: #33579" in out


def test_a_baseline_of_every_property_and_function_does_not_make_a_revision_clean(tmp_path, capsys):
    """The old key let such a file know everything; a version 1 file is refused with its upgrade, and a version 2
    file can only name causes, each of which must be the one the run finds."""
    import allocator_model.sizing as sizing
    from fuzz.findings.kinds import Property

    functions = sorted(
        n for n, v in vars(sizing).items() if n[:1].islower() and getattr(v, "__module__", "") == sizing.__name__
    )
    every = [
        {"property": p.value, "function": f, "path": "allocator_model/sizing.py"} for p in Property for f in functions
    ]
    v1 = tmp_path / "every-v1.json"
    doc = {"schema": "kvrow-fuzz/baseline", "schema_version": 1, "target": "reference@sglang-0.5.18", "entries": every}
    v1.write_text(json.dumps(doc))
    assert prove("reference@sglang-0.5.18", v1, tmp_path) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"kvrow-fuzz baseline upgrade {v1}" in err
    v2 = tmp_path / "every-v2.json"
    pieces = [
        {**e, "table": "req_to_token", "term": f.lower(), "digest": "0" * 16} for e in every for f in [e["function"]]
    ]
    v2.write_text(json.dumps({**doc, "schema_version": 2, "entries": pieces}))
    assert prove("reference@sglang-0.5.18", v2, tmp_path) == 1
    assert "0 known" in capsys.readouterr().out


def release_doc(target, *entries, **extra):
    return {"schema": "kvrow-fuzz/baseline", "schema_version": 2, "target": target, "entries": list(entries), **extra}


KNOWN = {"property": "write-within-row", "table": "req_to_token", "known": "page-1-headroom"}


@pytest.mark.parametrize(
    "doc",
    [
        release_doc("sglang==0.5.19", KNOWN),
        release_doc("sglang==0.5.13", KNOWN),
        release_doc("sglang", {**KNOWN, "releases": ["0.5.19"]}, releases=["0.5.19"]),
        release_doc("reference@sglang-0.5.18", KNOWN),
        release_doc("python/sglang/srt/mem_cache/allocation_sizing.py", KNOWN),
    ],
    ids=["0.5.19", "0.5.13", "releases-0.5.19", "the-model", "a-checkout"],
)
def test_a_baseline_of_another_release_or_target_does_not_suppress_0_5_18(doc, pinned_wheels, tmp_path, capsys):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    cmd = ["run", "--target", "sglang==0.5.18", "--max-examples", "5", "--quiet", "--cases", str(tmp_path)]
    assert main([*cmd, "--baseline", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not sglang==0.5.18" in err, err


def test_a_document_over_releases_covers_each_of_its_releases():
    doc = release_doc("sglang", {**KNOWN, "releases": ["0.5.18"]}, releases=["0.5.18", "0.5.19"])
    known = baseline.read(doc, "d")
    entry = baseline.Entry("write-within-row", "req_to_token", known="page-1-headroom")
    assert known.scope("sglang==0.5.18", "0.5.18") == baseline.Expected(frozenset({entry}))
    assert known.scope("sglang==0.5.19", "0.5.19") == baseline.Expected()
    assert known.scope("sglang==0.5.20", "0.5.20") is None and known.scope("reference", None) is None


# -- the schema: PEP 440 releases, the table, version 1 upgraded ------------------------------------------------


def schema():
    return json.loads((ROOT / "fuzz" / "findings" / "baseline.schema.json").read_text())


def test_any_pep_440_release_and_the_table_are_read_as_the_schema_says():
    jsonschema = pytest.importorskip("jsonschema")
    doc = release_doc(
        "sglang", {**KNOWN, "releases": ["0.5.0rc2", "0.5.12.post1"]}, releases=["0.5.0rc2", "0.5.12.post1", "0.5.12"]
    )
    jsonschema.validate(doc, schema())
    assert baseline.read(doc, "d").releases == ("0.5.0rc2", "0.5.12", "0.5.12.post1")  # ordered as versions
    undeclared = {**KNOWN, "table": "token_to_kv"}  # a name no engine declares: the schema cannot know, the reader does
    jsonschema.validate(release_doc("sglang==0.5.18", undeclared), schema())
    declared = "dsa_index_key_cache, fa3_page_table, flashinfer_draft_kv_indices, flashinfer_mla_draft_kv_indices, "
    declared += "flashmla_page_table, req_to_token"
    with pytest.raises(baseline.BaselineError, match=f"table must be one of {declared}"):
        baseline.read(release_doc("sglang==0.5.18", undeclared), "d")
    for bad in ({**KNOWN, "table": "Req-To-Token"}, {k: v for k, v in KNOWN.items() if k != "table"}):
        with pytest.raises(baseline.BaselineError):
            baseline.read(release_doc("sglang==0.5.18", bad), "d")
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(release_doc("sglang==0.5.18", bad), schema())


def test_baseline_upgrade_rewrites_a_v1_file_by_root_cause(tmp_path, monkeypatch, capsys):
    """Each cause whose version 1 entries the file listed is recorded by its identity; the rest is dropped."""
    from fuzz.ci import baseline as command

    known = Cause(
        "page-1-headroom",
        CauseKind.KNOWN,
        "#33579",
        "t",
        variants=[Signature.parse("write-within-row/paged")],
        table="req_to_token",
    )
    known.code = [(SIZING, "get_req_to_token_extra_context_len")]
    found = {"sglang==0.5.18": [known, piece(key="alloc_reserve_per_decode", function="get_alloc_reserve_per_decode")]}
    monkeypatch.setattr(command, "causes_of", lambda spec, args: (spec, found[spec]))
    v1 = {
        "schema": "kvrow-fuzz/baseline",
        "schema_version": 1,
        "target": "sglang==0.5.18",
        "entries": [
            {"property": "write-within-row", "function": "get_req_to_token_extra_context_len", "path": SIZING},
            {"property": "write-within-row", "function": "gone", "path": SIZING},
        ],
    }
    path = tmp_path / "b.json"
    path.write_text(json.dumps(v1))
    assert main(["baseline", "upgrade", str(path)]) == 0
    doc = json.loads(path.read_text())
    pytest.importorskip("jsonschema").validate(doc, schema())
    assert doc["schema_version"] == 2 and doc["entries"] == [KNOWN]  # the new piece was never known: not kept
    assert "dropped: write-within-row in gone" in capsys.readouterr().out


def test_the_shipped_matrix_baseline_is_version_2():
    doc = json.loads((ROOT / ".github" / "matrix-expected.json").read_text())
    assert doc["schema_version"] == 2
    pytest.importorskip("jsonschema").validate(doc, schema())


# -- hostile input: one line, exit 2 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(release_doc("reference", {**KNOWN, "property": ["write-within-row"]})),
        json.dumps(release_doc("reference", {**KNOWN, "property": {"a": 1}})),
        json.dumps(release_doc("", KNOWN)),
        '{"schema": "kvrow-fuzz/baseline", "schema_version": 2, "target": "reference", "entries": [], "entries": '
        + json.dumps([KNOWN])
        + "}",
    ],
    ids=["a-list-property", "a-dict-property", "an-empty-target", "a-duplicate-entries-key"],
)
def test_a_hostile_baseline_is_one_line_and_exit_2(content, tmp_path, capsys):
    path = tmp_path / "b.json"
    path.write_text(content)
    assert main(["prove", "--target", "reference", "--space", "tiny", "--quiet", "--baseline", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_an_empty_baseline_name_is_exit_2_not_no_baseline(capsys):
    assert main(["run", "--target", "reference", "--max-examples", "5", "--quiet", "--baseline", ""]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_bad_kvrow_baseline_is_one_usage_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(release_doc("sglang==0.5.19", KNOWN)))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--pyargs", "fuzz.properties"]
        + ["--kvrow-baseline", str(bad), "--kvrow-max-examples", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "--kvrow-baseline" in line]
    assert len(errors) == 1 and "not reference" in errors[0], proc.stdout + proc.stderr


def test_the_atheris_entry_refuses_a_baseline_of_another_target(tmp_path):
    from fuzz.common.errors import BadInput
    from fuzz.oss.target import entry_from_strings

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(release_doc("reference@sglang-0.5.18", KNOWN)))
    with pytest.raises(BadInput, match="covers reference@sglang-0.5.18, not reference@sglang-0.5.23"):
        entry_from_strings("reference@sglang-0.5.23", None, str(tmp_path / "c"), None, str(bad), quiet=True)
