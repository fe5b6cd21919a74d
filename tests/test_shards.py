"""Issue 13: ``--jobs N`` (worker processes) and ``--shard I/N`` (machines), and ``merge``.

Cheap by design: the partitions are checked on plain numbers, the prove
shards on a space of a few hundred launch configurations, ``merge`` on
reports written here; one test spawns two workers (the point of it).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from hermetic import repro_words

from allocator_model.pools import KVPool
from fuzz.campaign.parallel import Claims, Fold, Stream, derive_seed, merge_stats, plan_streams, share
from fuzz.cli import main
from fuzz.common.shards import WHOLE, Shard, parse_jobs, parse_shard
from fuzz.engines.sglang.prove.prover import result_entry
from fuzz.engines.sglang.prove.request import request
from fuzz.engines.sglang.prove.space import SPACES
from fuzz.engines.sglang.prove.sweep import prove
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.regression import regression_files
from fuzz.findings.report import Command
from fuzz.findings.repro import repro_command
from fuzz.merge import Part, merge_target
from fuzz.prove.cli import report_entry
from fuzz.targets.resolve import resolve_target

STANDARD = (KVPool.STANDARD,)
# A few hundred launch configurations, still every algorithm and both page classes: milliseconds per sweep.
MICRO = dataclasses.replace(
    SPACES["tiny"],
    name="micro",
    page_sizes=(1, 64),
    dcp_sizes=(1, 2),
    steps=(1, 2),
    topks=(1, 2),
    draft_tokens=(4, 17),
    uno_draft_tokens=(3,),
    adaptive_steps=(0, 1, 3),
)


def test_shard_and_jobs_values() -> None:
    assert parse_shard("2/3") == Shard(2, 3) and str(Shard(2, 3)) == "2/3" and parse_shard("1/1") == WHOLE
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/3/4"):
        with pytest.raises(Exception, match="I/N"):
            parse_shard(bad)
    assert parse_jobs("3") == 3 and parse_jobs("auto") == parse_jobs("0") >= 1
    for bad in ("-1", "two", "100000"):
        with pytest.raises(Exception, match="jobs"):
            parse_jobs(bad)
    assert [i for i in range(10) if Shard(2, 3).takes(i)] == [1, 4, 7]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--target", "reference", "--shard", "0/3"], "I/N"),
        (["run", "--target", "reference", "--jobs", "-2"], "jobs"),
        (["lifecycle", "--target", "reference", "--shard", "2/3", "--profile", "dev"], "--shard needs --seed"),
        (["prove", "--target", "reference", "--shard", "3/2"], "I/N"),
    ],
)
def test_bad_jobs_or_shard_is_one_line_exit_2(argv, message, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("jobs, shards, total", [(1, 1, 200), (2, 1, 201), (2, 3, 1000), (4, 5, 7)])
def test_the_shards_streams_partition_the_campaign(jobs: int, shards: int, total: int) -> None:
    """Every stream of the K = N x jobs runs in exactly one shard; the shares sum to the campaign's examples
    (each stream runs at least one); stream 0 keeps the campaign's seed, the others all differ."""
    plans = [plan_streams(7, total, jobs, Shard(i, shards)) for i in range(1, shards + 1)]
    streams = sorted((s for p in plans for s in p), key=lambda s: s.index)
    k = jobs * shards
    assert [s.index for s in streams] == list(range(k)) and {s.count for s in streams} == {k}
    assert sum(s.max_examples for s in streams) == max(total, k)
    assert streams[0].seed == 7 and len({s.seed for s in streams}) == k
    assert all(Shard(i, shards).takes(s.index) for i, p in enumerate(plans, 1) for s in p)
    assert share(10, 0, 3) == 4 and share(10, 2, 3) == 3 and derive_seed(7, 1) == derive_seed(7, 1) != 7


def test_first_claim_wins_and_the_other_worker_treats_the_group_as_found(tmp_path: Path) -> None:
    a, b = Claims(str(tmp_path)), Claims(str(tmp_path))
    sig = Signature(Property.WRITE_WITHIN_ROW, "dcp>1")
    other = Signature(Property.WRITE_WITHIN_ROW, "alloc-page-1")
    assert not b.elsewhere(sig) and a.owns(sig) and a.owns(sig)
    assert not b.owns(sig) and b.elsewhere(sig) and not a.elsewhere(sig)
    assert b.owns(other) and a.elsewhere(other)


def test_a_workers_campaign_error_makes_the_merged_result_an_error_not_clean() -> None:
    """A worker that ends normally but with the target's error (a CampaignResult.error) is not dropped."""
    from fuzz.campaign.driver import CampaignResult

    streams = plan_streams(1, 100, 2)
    fold = Fold(streams, examples={0: 5, 1: 3}, results={1: CampaignResult("t", error="RuntimeError: target crashed")})
    r = fold.result("t", 1.0, interrupted=False)
    assert r.status.value == "error" and "worker 2 of 2: RuntimeError: target crashed" in (r.error or "")


def test_a_dead_worker_is_an_error_of_the_merged_result() -> None:
    streams = plan_streams(1, 10, 3)
    fold = Fold(streams, examples={0: 4, 1: 3}, errors={2: "died (exit status -9)"})
    r = fold.result("reference", 1.0, interrupted=False)
    assert r.examples == 7 and r.error == "worker 3 of 3: died (exit status -9)" and r.status.value == "error"
    assert r.stats["seeds"] == [s.seed for s in streams] and r.stats["jobs"] == 3
    assert merge_stats([{"steps": 2, "max_x": 1, "kind": "lifecycle"}, {"steps": 3, "max_x": None}]) == {
        "steps": 5,
        "max_x": 1,
        "kind": "lifecycle",
    }
    assert merge_stats([{"max_x": 1}, {"max_x": 4}]) == {"max_x": 4}


def test_three_prove_shards_merge_to_the_unsharded_verdict() -> None:
    """The acceptance test of issue 13: the union of 3 shards (merged as ``merge`` merges their reports)
    has the unsharded sweep's groups, each with its configurations and worst, and its counts."""
    target = resolve_target("reference@sglang-0.5.18")
    whole = report_entry(result_entry(prove(target, request(target, MICRO, kinds=STANDARD))))
    parts = [
        Part(
            f"shard{i}.json",
            Shard(i, 3),
            report_entry(
                result_entry(prove(target, request(target, MICRO, kinds=STANDARD, shard=Shard(i, 3)))), Shard(i, 3)
            ),
        )
        for i in (1, 2, 3)
    ]
    assert all(0 < p.entry["launch_configurations"] < whole["launch_configurations"] for p in parts)
    merged = merge_target(whole["target"], parts, Command.PROVE)
    assert not merged.missing and merged.entry["shards"] == ["1/3", "2/3", "3/3"]
    for key in ("status", "launch_configurations", "decode_shapes", "configurations", "violations", "space"):
        assert merged.entry[key] == whole[key], key
    assert set(whole) <= set(merged.entry)  # every field prove writes is one merge checks and carries over

    def groups(entry):
        return {f["group"]: (f["configurations"], f["worst"]) for f in entry["findings"]}

    assert len(groups(whole)) > 1 and groups(merged.entry) == groups(whole)
    short = merge_target(whole["target"], parts[:2], Command.PROVE)
    assert [str(s) for s in short.missing] == ["3/3"] and short.entry["missing_shards"] == ["3/3"]


def _report(path: Path, command: str, entries: list[dict]) -> str:
    path.write_text(
        json.dumps({"schema": "kvrow-fuzz/report", "schema_version": 1, "command": command, "targets": entries})
    )
    return str(path)


def _finding(sig: str, case: str, **extra) -> dict:
    return {"signature": sig, "repro": f"python -m fuzz repro {case}", **extra}


def _case_text(sig: str, target: str = "reference", **extra) -> str:
    """A valid case file of ``sig`` on ``target`` (a regression case with its signature and target changed)."""
    doc = json.loads(Path(next(p for p in regression_files() if "0.5.18--write-within-row" in p)).read_text())
    doc.update(target=target, signature=sig, property=sig.split("/")[0], **extra)
    return json.dumps(doc) + "\n"


def test_merge_dedups_groups_copies_one_case_file_each_and_sums_counts(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for shard in ("a", "b"):
        (tmp_path / shard / "cases").mkdir(parents=True)
        for name, sig in (("g1.json", "write-within-row/dcp>1"), ("g2.json", "page-aligned-growth/dflash")):
            (tmp_path / shard / "cases" / name).write_text(_case_text(sig, reached_by=shard))
    a = _report(
        tmp_path / "a" / "run.json",
        "run",
        [
            {
                "target": "reference",
                "status": "counterexample",
                "seconds": 1,
                "examples": 10,
                "shard": "1/2",
                "steps": 4,
                "seeds": [1],
                "findings": [_finding("write-within-row/dcp>1", "cases/g1.json")],
            }
        ],
    )
    b = _report(
        tmp_path / "b" / "run.json",
        "run",
        [
            {
                "target": "reference",
                "status": "counterexample",
                "seconds": 2,
                "examples": 5,
                "shard": "2/2",
                "steps": 1,
                "seeds": [2],
                "findings": [
                    _finding("write-within-row/dcp>1", "cases/g1.json"),
                    _finding("page-aligned-growth/dflash", "cases/g2.json"),
                ],
            }
        ],
    )
    assert main(["merge", a, b, "--cases-out", "merged", "--json", "merged.json"]) == 1
    doc = json.loads((tmp_path / "merged.json").read_text())
    (t,) = doc["targets"]
    assert (t["examples"], t["steps"], t["seeds"], t["seconds"], t["shards"]) == (15, 5, [1, 2], 3, ["1/2", "2/2"])
    assert [f["signature"] for f in t["findings"]] == ["page-aligned-growth/dflash", "write-within-row/dcp>1"]
    # each copy named by merge (issue 33: a readable name and a digest of the full target and group, never the
    # shard's own file name), its repro line naming it
    copies = {f["signature"]: f["repro"].removeprefix(f"{repro_command()} ") for f in t["findings"]}
    assert sorted(os.listdir("merged")) == sorted(os.path.basename(c) for c in copies.values())
    assert os.path.basename(copies["write-within-row/dcp>1"]).startswith("reference--write-within-row-dcp-1--")
    assert all(os.path.dirname(c) == "merged" for c in copies.values())
    assert json.loads(Path(copies["write-within-row/dcp>1"]).read_text())["reached_by"] == "a"  # the first shard's
    assert "merged run: 1 target(s)" in capsys.readouterr().out
    clean = _report(
        tmp_path / "c.json",
        "run",
        [{"target": "reference", "status": "clean", "seconds": 1, "examples": 3, "shard": "1/1", "findings": []}],
    )
    assert main(["merge", clean, "--cases-out", "merged"]) == 0


def test_merge_refuses_what_is_not_one_campaign(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    entry = {  # a run entry must count its examples too (issue 33: no clean without work)
        "target": "reference",
        "status": "clean",
        "seconds": 1,
        "examples": 3,
        "space": "tiny",
        "method": "m",
        "configurations": 3,
        "findings": [],
    }
    p1 = _report(tmp_path / "p1.json", "prove", [{**entry, "shard": "1/2"}])
    p2 = _report(tmp_path / "p2.json", "prove", [{**entry, "shard": "2/3"}])
    r = _report(tmp_path / "r.json", "run", [{**entry, "shard": "1/2"}])
    (tmp_path / "junk.json").write_text("[1]")
    run_half = _report(tmp_path / "run_half.json", "run", [{**entry, "shard": "1/2"}])
    bad_seconds = _report(tmp_path / "s.json", "run", [{**entry, "seconds": "abc"}])
    bad_examples = _report(tmp_path / "e.json", "run", [{**entry, "examples": "many"}])
    sig = "write-within-row/dcp>1"
    bad_repro = _report(tmp_path / "rp.json", "run", [{**entry, "findings": [{"signature": sig, "repro": 5}]}])
    bad_worst = _report(tmp_path / "w.json", "prove", [{**entry, "findings": [{"signature": sig, "worst": "x"}]}])
    (tmp_path / "hostname.json").write_text("not a case\n")
    not_a_case = _report(tmp_path / "nc.json", "run", [{**entry, "findings": [_finding(sig, "hostname.json")]}])
    (tmp_path / "other.json").write_text(_case_text("page-aligned-growth/dflash"))
    wrong_case = _report(tmp_path / "wc.json", "run", [{**entry, "findings": [_finding(sig, "other.json")]}])
    cases = [
        ([p1], "do not cover the space, missing reference: 2/2"),
        ([run_half], "shards are missing, missing reference: 2/2"),  # a lost shard may hold the finding
        ([bad_seconds], '"seconds" must be a number >= 0'),
        ([bad_examples], '"examples" must be an integer >= 0'),
        ([bad_repro], '"repro" must be text'),
        ([bad_worst], '"worst" must be an integer >= 0'),
        ([not_a_case], "not a case file"),
        ([wrong_case], "not the case file of write-within-row/dcp>1"),
        ([p1, p1], "given twice"),
        ([p1, p2], "different counts"),
        ([p1, r], "different commands"),
        (["junk.json"], "not a kvrow-fuzz report"),
        (["absent.json"], "absent.json"),
    ]
    for reports, message in cases:
        assert main(["merge", *reports, "--cases-out", "out"]) == 2, reports
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, (reports, err)


def test_jobs_2_finds_the_groups_of_jobs_1_one_case_file_each(tmp_path, monkeypatch) -> None:
    """Two spawned workers on a planted revision: the same groups as one process, each group's case file
    written once (first claim wins), one merged report with both streams' seeds."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVROW_FUZZ_DATABASE", str(tmp_path / "db"))
    common = ["run", "--target", "reference@sglang-0.5.18", "--profile", "ci", "--max-examples", "4", "--quiet"]
    common += ["--pin", "speculative_algorithm=DFLASH", "--pin", "page_size=64"]
    assert main([*common, "--cases", "one", "--json", "one.json"]) == 1
    assert main([*common, "--jobs", "2", "--cases", "two", "--json", "two.json"]) == 1

    def groups(path: str) -> list[str]:
        (t,) = json.loads(Path(path).read_text())["targets"]
        return [f["signature"] for f in t["findings"]]

    assert groups("one.json") and groups("two.json") == groups("one.json")
    assert sorted(os.listdir("two")) == sorted(os.listdir("one"))  # one case file per group
    (t,) = json.loads(Path("two.json").read_text())["targets"]
    assert t["jobs"] == 2 and len(set(t["seeds"])) == 2 and t["examples"] > 0
    assert all(f["repro"] and os.path.isfile(repro_words(f["repro"])[1]) for f in t["findings"])
    assert isinstance(Stream(0, 1, 7, 1).cover_part, tuple)


def test_p25_a_proof_with_a_shard_missing_that_found_something_exits_1_and_names_the_gap(
    tmp_path, monkeypatch, capsys
) -> None:
    """What the README states: the findings stand (exit 1), the missing shard is named on stderr; with nothing
    found the same merge is exit 2 (the other test above): a lost shard may hold a finding, never "clean"."""
    monkeypatch.chdir(tmp_path)
    sig = "write-within-row/alloc-page-1"
    (tmp_path / "c.json").write_text(_case_text(sig, target="reference@sglang-0.5.18"))
    entry = {"target": "reference@sglang-0.5.18", "status": "counterexample", "seconds": 1, "space": "tiny"}
    entry |= {"method": "m", "configurations": 3, "shard": "1/2", "findings": [_finding(sig, "c.json", worst=1)]}
    p1 = _report(tmp_path / "p1.json", "prove", [entry])
    assert main(["merge", p1, "--cases-out", "out"]) == 1
    captured = capsys.readouterr()
    assert "missing reference@sglang-0.5.18: 2/2" in captured.err and len(captured.err.strip().splitlines()) == 1
    assert "missing shards: 2/2" in captured.out
