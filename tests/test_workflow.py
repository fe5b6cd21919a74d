"""The CI workflow file is valid YAML and every fuzz command in it is one our command line accepts."""

import os
import shlex

import yaml

from allocator_model.revisions import RELEASE_REVISIONS
from fuzz.cli import build_parser
from fuzz.fidelity.matrix import load_expectations, parse_releases
from fuzz.prove.sweep import prove
from fuzz.targets import resolve_target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKFLOW = os.path.join(ROOT, ".github", "workflows", "fuzz.yml")


def workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


def fuzz_commands_by_job():
    """(job name, argv after ``python -m fuzz``) of every fuzz command the workflow runs."""
    for name, job in workflow()["jobs"].items():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                line = line.split("|")[0].strip()
                if line.startswith("python -m fuzz "):
                    yield name, shlex.split(line.replace('"$SEED"', "12345"))[3:]


def fuzz_commands():
    return [argv for _, argv in fuzz_commands_by_job()]


def test_workflow_is_valid_yaml_with_both_jobs():
    jobs = workflow()["jobs"]
    assert {"pull-request", "nightly"} <= set(jobs)
    assert any("--junitxml" in s.get("run", "") for s in jobs["pull-request"]["steps"])
    nightly = " ".join(s.get("run", "") for s in jobs["nightly"]["steps"])
    assert "--profile nightly" in nightly and "--seed" in nightly and "GITHUB_STEP_SUMMARY" in nightly
    assert any(
        s.get("uses", "").startswith("actions/cache") and s["with"]["path"] == ".hypothesis"
        for s in jobs["nightly"]["steps"]
    )


def test_every_fuzz_command_parses():
    commands = list(fuzz_commands())
    assert len(commands) >= 5
    for argv in commands:
        build_parser().parse_args(argv)  # raises BadInput (exit 2) on an option we do not have


def test_each_job_runs_the_matrix_against_expectations_the_model_proves():
    """Both jobs run ``matrix --expect``; the file covers every release the line runs, and for each release

    required <= the groups the bounded proof finds on the release's model revision <= required + allowed:
    a required group the model cannot produce, or one it produces that the file does not allow, fails here
    before it fails CI.
    """
    matrix = [(job, argv) for job, argv in fuzz_commands_by_job() if argv[0] == "matrix"]
    assert sorted(job for job, _ in matrix) == ["nightly", "pull-request"], matrix
    proven: dict[str, set[str]] = {}
    for job, argv in matrix:
        args = build_parser().parse_args(argv)
        assert args.expect, f"the {job} matrix checks no expectations"
        releases = parse_releases(args.releases)
        expected = load_expectations(os.path.join(ROOT, args.expect), releases)  # BadInput: a release without entry
        assert set(expected) == set(releases) and releases, (job, releases)
        for release in releases:
            revision = RELEASE_REVISIONS[release]
            if revision not in proven:
                proven[revision] = {str(s) for s in prove(resolve_target(f"reference@{revision}"), "tiny").groups}
            required, allowed = expected[release]["required"], expected[release]["allowed"]
            assert required and required <= proven[revision] <= required | allowed, (job, release, proven[revision])
    assert proven.keys() == set(RELEASE_REVISIONS.values())  # the nightly line runs every modeled release
