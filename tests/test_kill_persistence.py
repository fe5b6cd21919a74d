"""Nothing found is lost to a kill: case files reach disk as groups are met, and an interrupted matrix keeps its rows.

A nightly run killed by its runner (SIGKILL: no handler runs) must leave
every group it had met as a complete case file that replays, and a report
saying it was interrupted.  The kill here is deterministic: raised at the
first example after the search meets its first group, in the middle of
the round (before Hypothesis has shrunk it), as a BaseException that no
code of ours catches, which is all SIGKILL leaves.  Before the fix, case
files of searched groups were written only when the round ended.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from allocator_model.config import ServingConfig
from allocator_model.scenario import DecodeScenario
from fuzz.campaign.driver import CampaignResult, Progress, Tracker
from fuzz.cli import main
from fuzz.engines.sglang.decode.check import check_scenario, decode_finding
from fuzz.engines.sglang.decode.engine import DecodeHunt
from fuzz.engines.sglang.fidelity import matrix
from fuzz.findings import casefile
from fuzz.findings.regression import regression_files
from fuzz.findings.schemas import validate
from fuzz.tables.hunt import TableHunt
from fuzz.targets.resolve import resolve_target


class Killed(BaseException):
    """What SIGKILL leaves: the process stops where it is; no handler, no ``except Exception`` runs."""


def test_a_kill_mid_round_leaves_each_met_group_as_a_case_file_that_replays(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KVROW_FUZZ_DATABASE", str(tmp_path / "db"))
    monkeypatch.setattr(DecodeHunt, "cover", lambda self, tracker, progress: iter(()))  # the search alone
    monkeypatch.setattr(TableHunt, "cover", lambda self, tracker, progress: iter(()))  # FA3's page table's too
    met: list[str] = []
    report, tick = Tracker.fail, Progress.tick

    def reporting(self, f):
        met.append(str(f.signature))
        report(self, f)

    def ticking(self, groups):
        if met:
            raise Killed  # the first example after a group is met: Hypothesis has not shrunk it yet
        tick(self, groups)

    monkeypatch.setattr(Tracker, "fail", reporting)
    monkeypatch.setattr(Progress, "tick", ticking)
    # One process: the kill is raised by this process's patched Progress (nightly would spawn a worker per core).
    argv = ["run", "--target", "reference@sglang-0.5.23", "--profile", "nightly", "--seed", "7", "--jobs", "1"]
    with pytest.raises(Killed):
        main([*argv, "--max-examples", "40", "--quiet", "--cases", "cases", "--json", "report.json"])
    capsys.readouterr()
    monkeypatch.setattr(Progress, "tick", tick)
    monkeypatch.setattr(Tracker, "fail", report)

    (group,) = met  # killed at the example after it: nothing else was met, nothing was shrunk
    (name,) = os.listdir(tmp_path / "cases")
    case = json.loads((tmp_path / "cases" / name).read_text())
    assert case["signature"] == group and case["target"] == "reference@sglang-0.5.23"
    assert main(["repro", os.path.join("cases", name)]) == 1
    assert f"FAILS {group}" in capsys.readouterr().out
    report_doc = json.loads((tmp_path / "report.json").read_text())
    validate("report", report_doc)
    (entry,) = report_doc["targets"]
    assert entry["status"] == "counterexample" and entry["interrupted"] is True
    assert [f["signature"] for f in entry["findings"]] == met


def found_before(spec: str) -> CampaignResult:
    """A finished campaign on ``spec`` with one real finding (the 0.5.18 DCP case of fuzz/regressions), at once."""
    (path,) = [p for p in regression_files() if p.endswith("reference-sglang-0.5.18--write-within-row-dcp-1.json")]
    doc = casefile.load_document(path)
    target = resolve_target(spec)
    scenario = DecodeScenario.from_dict(ServingConfig.from_dict(doc["config"]), doc["case"])
    _, found = check_scenario(target, scenario)
    return CampaignResult(spec, examples=1, findings=[decode_finding(spec, found[0], scenario)])


def interrupt_at(release: str, during_campaign: bool, monkeypatch) -> None:
    """Ctrl-C (a real SIGINT to this process) when ``release``'s campaign starts, or at its first example.

    The releases before it finish at once with one finding each (a real campaign takes tens of seconds).
    """
    job, tick = matrix._campaign_job, Progress.tick

    def campaign_job(spec, *args):
        if spec < f"sglang=={release}":
            return found_before(spec)
        if spec == f"sglang=={release}":
            if during_campaign:

                def signalling(self, groups):
                    monkeypatch.setattr(Progress, "tick", tick)
                    os.kill(os.getpid(), signal.SIGINT)  # deferred: taken at the next example
                    tick(self, groups)

                monkeypatch.setattr(Progress, "tick", signalling)
            else:
                os.kill(os.getpid(), signal.SIGINT)  # between a fidelity check and a campaign: at once
        return job(spec, *args)

    monkeypatch.setattr(matrix, "_campaign_job", campaign_job)


@pytest.mark.parametrize("during_campaign", [False, True], ids=["between-steps", "during-a-campaign"])
@pytest.mark.parametrize(
    "release, status, finished", [("0.5.18", 130, []), ("0.5.19", 1, ["0.5.18"])], ids=["first", "second"]
)
def test_ctrl_c_in_matrix_keeps_the_finished_releases(
    tmp_path, monkeypatch, capsys, release, status, finished, during_campaign
):
    out = tmp_path / "m"
    interrupt_at(release, during_campaign, monkeypatch)
    argv = ["matrix", "--releases", "0.5.18,0.5.19,0.5.20", "--jobs", "1", "--fidelity-configs", "0"]
    try:
        got = main([*argv, "--max-examples", "20", "--out", str(out), "--quiet"])
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    stdout, stderr = capsys.readouterr()
    assert got == status, stdout + stderr
    assert "Traceback" not in stderr
    assert f"interrupted: {len(finished)} of 3 releases done" in stdout
    report = json.loads((out / "matrix.json").read_text())
    validate("report", report)
    assert [t["release"] for t in report["targets"]] == finished and report["complete"] is False
    cases = sorted(os.listdir(out / "cases")) if (out / "cases").exists() else []
    assert {c.split("--")[0] for c in cases} == {f"sglang-{r}" for r in finished}
    if finished:
        (entry,) = report["targets"]
        assert entry["status"] == "counterexample" and len(entry["findings"]) == 1
        assert cases == ["sglang-0.5.18--write-within-row-dcp-1.json"]
