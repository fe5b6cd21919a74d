"""The CI workflow file is valid YAML and every fuzz command in it is one our command line accepts."""

import os
import shlex

import yaml

from fuzz.cli import build_parser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKFLOW = os.path.join(ROOT, ".github", "workflows", "fuzz.yml")


def workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


def fuzz_commands():
    for job in workflow()["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                line = line.split("|")[0].strip()
                if line.startswith("python -m fuzz "):
                    yield shlex.split(line.replace('"$SEED"', "12345"))[3:]


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


def test_the_matrix_expectations_cover_the_pinned_releases():
    import json

    with open(os.path.join(ROOT, ".github", "matrix-expected.json")) as f:
        expected = json.load(f)
    for argv in fuzz_commands():
        if argv[0] == "matrix" and "--releases" in argv:
            for release in argv[argv.index("--releases") + 1].split(","):
                assert expected[release]["required"], release
