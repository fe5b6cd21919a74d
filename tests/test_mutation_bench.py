"""The mutation benchmark's own parts: the mutator's single-point edits and the verdict file it resumes from."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
SOURCE = (
    "PAGE = 1 + 1\n\n\ndef f(a, b):\n    if a < b:\n        return max(a + 1, (b + 3 - 1) // 3)\n    return a * b\n"
)


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import mutation_results
    import mutator

    return mutator, mutation_results


def test_every_mutant_changes_one_point_of_a_function_and_compiles(bench) -> None:
    mutator, _ = bench
    found = mutator.mutants(SOURCE)
    whats = {m.name.split(" ", 1)[1] for m in found}
    for expected in ("Add -> Sub", "1 -> 0", "1 -> 2", "ceiling -> floor", "drop max, keep the first"):
        assert expected in whats, whats
    assert {"Lt -> LtE", "Mult -> FloorDiv", "drop the right term"} <= whats
    base = ast.unparse(ast.parse(SOURCE))
    for m in found:
        assert m.function == "f" and m.source != base
        compile(m.source, "<mutant>", "exec")
        assert m.source.startswith("PAGE = 1 + 1\n"), m.name  # module-level statements are left alone
    assert len({m.source for m in found}) == len(found)  # no mutant twice
    assert [m.name for m in mutator.mutants(SOURCE)] == [m.name for m in found]  # the same order on every parse


def test_the_verdict_file_resumes_and_never_takes_another_bases_line(bench, tmp_path) -> None:
    mutator, results = bench
    m = mutator.mutants(SOURCE)[0]
    path = tmp_path / "r.jsonl"
    r = results.Results.open(path)
    fields = {"prove small": [], "prove full": [], "run ci": [], "baseline": "{}", "causes": [], "proof counts": {}}
    r.add_base("main", "b1", True, {**fields, "plugin fails": [], "plugin groups": []})
    r.add_base("main", "b0", True, {**fields, "plugin fails": []})  # an earlier version's: no plugin groups
    r.add_mutant("main", "b1", m, False, {"outcome": "equivalent", "equivalence": 2, "seconds": {"prove small": 1.0}})
    with path.open("a") as f:
        f.write('{"kind": "mutant", "base": "b1", "key": "trunc')  # a run killed mid-write
    again = results.Results.open(path)
    key = results.digest(m.source)
    assert again.base("main", "b1", True) is not None and again.base("main", "b1", False) is not None
    assert again.mutant("b1", key, False)["outcome"] == "equivalent"
    assert again.mutant("b1", key, True) is None  # judged without the plugin line: no answer for a run with it
    assert again.mutant("b2", key, False) is None  # another base
    assert again.base("main", "b0", True) is None and again.base("main", "b0", False) is not None
    assert len(again.mutants) == 1


def test_an_earlier_versions_kill_stands_and_its_survivor_is_judged_again(bench, tmp_path) -> None:
    mutator, results = bench
    killed, survived = mutator.mutants(SOURCE)[:2]
    r = results.Results.open(tmp_path / "r.jsonl")
    old = {"outcome": "judged", "proof": ["g/x"], "plugin": {"killed": True}}
    r.add_mutant("main", "b1", killed, True, {**old, "run ci": {"killed": True}})
    r.add_mutant("main", "b1", survived, True, {**old, "run ci": {"killed": False}})
    again = results.Results.open(tmp_path / "r.jsonl")
    record = again.mutant("b1", results.digest(killed.source), True)
    assert record["run ci"]["by"] == "cause" and record["plugin"]["by"] == "test"
    assert again.mutant("b1", results.digest(survived.source), True) is None


def test_a_release_verdict_fails_on_a_miss_a_false_alarm_or_an_unconfirmed_group_outside_the_proof(bench) -> None:
    import mutation_score

    proved = frozenset({"write-within-row/paged"})
    outside = "free-list-unique/paged"
    ok, text = mutation_score.compare("run ci", proved, {"write-within-row/paged": None, outside: True}, 1.0)
    assert ok and "every proved group" in text and f"outside prove's scope: {outside} (confirmed" in text
    ok, text = mutation_score.compare("run ci", proved, {"write-within-row/paged": None, outside: False}, 1.0)
    assert not ok and "NOT confirmed" in text
    ok, text = mutation_score.compare(
        "plugin", proved, {"write-within-row/paged": None, "write-within-row/dcp>1": None}, 1.0
    )
    assert not ok and "FALSE ALARM (a sizing group prove does not find): write-within-row/dcp>1" in text
    ok, text = mutation_score.compare("plugin", proved, {outside: None}, 1.0)
    assert not ok and "MISSED: write-within-row/paged" in text


def test_a_mutant_that_widens_a_group_its_base_breaks_is_not_equivalent(bench, monkeypatch, tmp_path) -> None:
    """Same groups, more configurations or a worse overflow: a new bug (in a function with a known cause, the one
    a baseline keyed by place hid), judged; an earlier version's equivalent (groups alone) is judged again."""
    mutator, results = bench
    import mutation_verdicts

    base = {"write-within-row/alloc-page-1": [40, 3]}
    assert mutation_verdicts.changed(dict(base), base) == []
    assert mutation_verdicts.changed({"write-within-row/alloc-page-1": [41, 3]}, base) == [
        "write-within-row/alloc-page-1 (41 configurations, worst 3; the base: 40, worst 3)"
    ]
    assert mutation_verdicts.changed({"write-within-row/alloc-page-1": [40, 4]}, base) != []
    assert mutation_verdicts.changed({"write-within-row/alloc-page-1": [39, 3]}, base) == []  # narrower: a fix
    assert mutation_verdicts.changed({}, base) == []  # the known bug fixed: no new bug to find
    assert mutation_verdicts.changed({**base, "write-within-row/dcp>1": [1, 1]}, base) == ["write-within-row/dcp>1"]
    m = mutator.mutants(SOURCE)[0]
    r = results.Results.open(tmp_path / "r.jsonl")
    r.add_mutant("main", "b1", m, True, {"outcome": "equivalent"})  # written by the groups-only criterion
    assert results.Results.open(tmp_path / "r.jsonl").mutant("b1", results.digest(m.source), True) is None


def test_the_score_fails_on_a_kill_the_baseline_hid_and_lists_a_widened_known_bug_apart(bench, tmp_path, capsys):
    mutator, results = bench
    hidden, widened, killed = mutator.mutants(SOURCE)[:3]
    r = results.Results.open(tmp_path / "r.jsonl")
    entry = {"killed": True, "by": "cause", "named": True}
    r.add_mutant("main", "b1", killed, False, {"outcome": "judged", "proof": ["g/x"], "run ci": entry})
    spared = {"killed": False, "by": None}
    r.add_mutant("main", "b1", widened, False, {"outcome": "judged", "proof": ["g/x (2"], "run ci": spared})
    assert not results.print_score("main", "b1", [killed, widened], r, False)  # a survivor
    r.add_mutant("main", "b1", widened, False, {"outcome": "judged", "run ci": spared, "explained": "#1's"})
    assert results.print_score("main", "b1", [killed, widened], r, False)
    assert "1 widening the known bug only" in capsys.readouterr().out
    hid = {"killed": True, "by": "group", "named": False}
    r.add_mutant("main", "b1", hidden, False, {"outcome": "judged", "proof": ["g/y"], "run ci": hid})
    assert not results.print_score("main", "b1", [killed, widened, hidden], r, False)
    out = capsys.readouterr().out
    assert "without the baseline 2/2, with it 1/2" in out and "HIDDEN BY THE BASELINE" in out, out


def test_a_widened_known_bug_is_explained_only_where_the_fix_leaves_no_more_than_the_fixed_base(
    bench, monkeypatch, tmp_path
) -> None:
    mutator, _ = bench
    import mutation_verdicts

    fix = ("#1", "a + 1", "a + 2")
    assert mutation_verdicts.with_fix("x = a + 1\n", fix) == "x = a + 2\n"
    assert mutation_verdicts.with_fix("x = a + 1 + a + 1\n", fix) is None  # not there once: no fix to apply
    m = next(m for m in mutator.mutants(SOURCE) if "a + 1" in m.source)
    spec = tmp_path / "m1" / "allocation_sizing.py"
    spec.parent.mkdir()
    fixed_base = {"small": {"g/x": [3, 1]}, "full": {"g/x": [5, 1]}}

    class Proved:
        def __init__(self, groups):
            self.groups = groups

    class Group:
        def __init__(self, n, worst):
            self.configurations, self.worst = n, worst

    for found, explained in (
        ({"g/x": Group(3, 1)}, True),
        ({"g/x": Group(4, 1)}, False),
        ({"g/y": Group(1, 1)}, False),
    ):
        monkeypatch.setattr(mutation_verdicts, "prove_result", lambda spec, space, found=found: Proved(found))
        words = mutation_verdicts.explained_by(f"{spec}@0.5.23", m, fix, fixed_base)
        assert (words is not None) is explained, (found, words)
    assert "a + 2" in (tmp_path / "m1" / "with_the_fix.py").read_text()
