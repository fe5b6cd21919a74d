"""The CI workflow file is valid YAML and every fuzz command in it is one our command line accepts."""

import os
import re
import shlex
from pathlib import Path

import pytest
import yaml
from documentation import section

from allocator_model.revisions import RELEASE_REVISIONS
from fuzz.cli import build_parser
from fuzz.engines.sglang.fidelity.matrix import load_expectations, parse_releases
from fuzz.engines.sglang.prove.sweep import prove_on
from fuzz.findings.baseline import SAME_WRITE
from fuzz.targets.resolve import resolve_target

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKFLOW = os.path.join(ROOT, ".github", "workflows", "fuzz.yml")
WORKFLOWS = sorted(Path(ROOT, ".github", "workflows").glob("*.yml"))


def workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


# How a step runs a fuzz command: the job's own install's ``python -m fuzz``, or ``./kvrow`` (its .venv; not ``test``).
FUZZ_PREFIXES = (("python", "-m", "fuzz"), ("./kvrow",))


def fuzz_commands_by_job():
    """(job name, argv after ``python -m fuzz`` or ``./kvrow``) of every fuzz command the workflow runs."""
    for name, job in workflow()["jobs"].items():
        for step in job["steps"]:
            for line in step.get("run", "").splitlines():
                line = line.split("|")[0].strip().replace('"$SEED"', "12345").replace('"$SHARD"', "2/3")
                argv = shlex.split(line) if line.startswith(("python -m fuzz ", "./kvrow ")) else []
                prefix = next((p for p in FUZZ_PREFIXES if tuple(argv[: len(p)]) == p), None)
                if prefix is not None and argv[len(prefix)] != "test":
                    yield name, argv[len(prefix) :]


def suite_runs(job: dict) -> list[str]:
    """The lines of a job's steps that run the suite (``./kvrow test``, or pytest itself)."""
    lines = [line.strip() for step in job["steps"] for line in step.get("run", "").splitlines()]
    return [line for line in lines if line.startswith("./kvrow test") or "pytest" in line]


def fuzz_commands():
    return [argv for _, argv in fuzz_commands_by_job()]


def test_workflow_is_valid_yaml_with_both_jobs():
    jobs = workflow()["jobs"]
    assert {"pull-request", "nightly"} <= set(jobs)
    junit = [s for s in jobs["pull-request"]["steps"] if s.get("run") == "./kvrow test"]
    assert [s["env"]["KVROW_JUNIT_DIR"] for s in junit] == ["reports"]  # reports/junit.xml, reports/junit-slow.xml
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


@pytest.mark.slow
def test_each_job_runs_the_matrix_against_expectations_the_model_proves():
    """Both jobs run ``matrix --expect``; the file (a baseline over releases) covers every release the line runs,
    and for each release the properties of its required entries <= the properties the bounded proof finds on the
    release's model revision <= those of its entries: a required entry the model cannot break, or a property it
    breaks that the file does not expect, fails here before it fails CI.
    """
    matrix = [(job, argv) for job, argv in fuzz_commands_by_job() if argv[0] == "matrix"]
    assert sorted(job for job, _ in matrix) == ["nightly", "pull-request"], matrix
    proven: dict[str, set[str]] = {}
    for job, argv in matrix:
        args = build_parser().parse_args(argv)
        assert args.expect, f"the {job} matrix checks no expectations"
        releases = parse_releases(args.releases)
        expected = load_expectations(os.path.join(ROOT, args.expect), releases)  # BadInput: a release not covered
        assert set(expected) == set(releases) and releases, (job, releases)
        for release in releases:
            revision = RELEASE_REVISIONS[release]
            if revision not in proven:
                groups = prove_on(resolve_target(f"reference@{revision}"), "tiny").groups
                proven[revision] = {SAME_WRITE.get(s.prop.value, s.prop.value) for s in groups}
            want = expected[release]
            required, allowed = {e.property for e in want.required}, {e.property for e in want.entries}
            assert required and required <= proven[revision] <= allowed, (job, release, proven[revision])
    assert proven.keys() == set(RELEASE_REVISIONS.values())  # the nightly line runs every modeled release


def test_nightly_is_a_matrix_of_shards_merged_into_one_report_and_one_database():
    """Issue 13: the nightly campaigns run as shards 1..N (each on every core), then one job merges them:
    one report per command, case files one per group, one summary, one example database."""
    jobs = workflow()["jobs"]
    nightly, merge = jobs["nightly"], jobs["nightly-merge"]
    shards = nightly["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and len(shards) > 1
    assert nightly["env"]["SHARDS"] == len(shards)
    sharded = [argv for job, argv in fuzz_commands_by_job() if job == "nightly" and argv[0] != "matrix"]
    assert sorted(argv[0] for argv in sharded) == ["lifecycle", "prove", "run"]
    for argv in sharded:
        args = build_parser().parse_args(argv)
        assert args.shard is not None and args.json, argv
        if argv[0] != "prove":
            assert args.jobs is None and args.profile == "nightly" and args.seed is not None  # nightly: every core
    seed_step = next(s["run"] for s in nightly["steps"] if "SEED=" in s.get("run", ""))
    assert "github.run_id" in seed_step and "random" not in seed_step  # the same seed in every shard
    restore = [s for s in nightly["steps"] if s.get("uses", "").startswith("actions/cache/restore")]
    assert [s["with"]["path"] for s in restore] == [".hypothesis"]  # shards only read; the merge job saves
    assert not any(
        s.get("uses", "").startswith("actions/cache@") and s["with"]["path"] == ".hypothesis" for s in nightly["steps"]
    )
    upload = next(s for s in nightly["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert ".hypothesis/" in upload["with"]["path"] and upload["with"]["include-hidden-files"] is True
    assert "matrix.shard" in upload["with"]["name"]
    assert merge["needs"] == "nightly" and "always()" in merge["if"]
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["pattern"] == "nightly-shard-*"
    merging = [argv for job, argv in fuzz_commands_by_job() if job == "nightly-merge"]
    assert merging and all(argv[0] == "merge" for argv in merging)
    script = " ".join(s.get("run", "") for s in merge["steps"])
    assert "for command in run lifecycle prove" in script and "--cases-out" in script
    assert "GITHUB_STEP_SUMMARY" in script and "cp -Rn" in script
    save = [s for s in merge["steps"] if s.get("uses", "").startswith("actions/cache/save")]
    assert [s["with"]["path"] for s in save] == [".hypothesis"]


def test_the_nightly_runs_the_network_tier():
    """Issue 22: the real wheels (and the citations checked against them) run every night, not never."""
    with open(WORKFLOW) as f:
        jobs = yaml.safe_load(f)["jobs"]
    runs = [s.get("run", "") for s in jobs["network-tests"]["steps"]]
    assert any("--run-network" in r and "-m network" in r for r in runs)
    assert "schedule" in jobs["network-tests"]["if"]


def test_every_suite_run_is_kvrow_test_and_the_pull_request_runs_both_tiers_with_the_pinned_wheels():
    """Issue 33: a workflow's suite is ``./kvrow test`` (what .ci/run and the README run), never pytest by hand: the
    pinned wheels are fetched, so the write-path tests run, and the pull-request job's bare ``./kvrow test`` runs
    the default tier then the slow tier; ``.venv`` is made on the matrix's Python (``PYTHON``), not ./kvrow's pick;
    the wheel cache follows the pinned list."""
    for path in WORKFLOWS:
        for name, job in (yaml.safe_load(path.read_text())["jobs"] or {}).items():
            for line in suite_runs(job):
                assert line.startswith("./kvrow test"), (path.name, name, line)
    jobs = workflow()["jobs"]
    tests = jobs["pull-request"]
    assert suite_runs(tests) == ["./kvrow test"]  # no ARGS: both tiers (kvrow's usage)
    assert tests["env"]["PYTHON"] == "python${{ matrix.python }}"
    assert tests["env"]["KVROW_FUZZ_REAL_WHEELS"] == "${{ github.workspace }}/../kvrow-fuzz-cache/wheels"
    (cache,) = [s for s in tests["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert "if" not in cache and cache["with"]["path"] + "/wheels" == tests["env"]["KVROW_FUZZ_REAL_WHEELS"]
    assert "hashFiles('tests/pinned-releases.txt')" in cache["with"]["key"]
    assert not any("pip install" in s.get("run", "") for s in tests["steps"])  # ./kvrow makes its own .venv
    assert (Path(ROOT, ".ci", "run").read_text().splitlines()[-1]) == "exec ./kvrow test"


def ci_section() -> str:
    """docs/ci.md's "This repository's own workflows" (the README's "For the CI user" before issue 34)."""
    return section("ci.md", "## This repository's own workflows")


def readme_jobs() -> dict[str, str]:
    """Each job the CI section describes (a ``- **NAME**`` bullet) -> its bullet's text."""
    bullets = re.finditer(r"^- \*\*([\w-]+)\*\*(.*?)(?=^- \*\*|^\S|\Z)", ci_section(), re.M | re.S)
    return {m[1]: " ".join(m[2].split()) for m in bullets}


def test_the_readme_describes_every_job_of_every_workflow_and_no_other():
    section = ci_section()
    jobs: dict[str, dict] = {}
    for path in WORKFLOWS:
        assert f"`.github/workflows/{path.name}`" in section, path.name
        doc = yaml.safe_load(path.read_text())
        for job in doc["jobs"]:
            assert job not in jobs, f"job {job} in two workflows"
        jobs.update(doc["jobs"])
        triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads the key ``on`` as True
        for cron in (t["cron"] for t in triggers.get("schedule", [])):
            assert f"cron `{cron}`" in section, (path.name, cron)
    described = re.findall(r"^- \*\*([\w-]+)\*\*", section, re.M)
    assert sorted(described) == sorted(jobs) and len(described) == len(set(described)), described


def test_the_readme_says_what_each_job_runs():
    """Every fuzz command and pytest tier a job of fuzz.yml runs is named in its bullet."""
    described = readme_jobs()
    for job, argv in fuzz_commands_by_job():
        assert re.search(rf"\b{argv[0]}\b", described[job]), (job, argv[0])
    for name, job in workflow()["jobs"].items():
        for line in suite_runs(job):
            for marker in re.findall(r"(-m \w+)", line):
                assert marker in described[name], (name, marker)
            if line == "./kvrow test":
                assert "`./kvrow test`" in described[name] and "--run-slow -m slow" in described[name], name


def test_the_suite_runs_on_every_python_requires_python_allows_up_to_3_12():
    """SGLang supports 3.10 to 3.12: the pull-request job runs the suite on each Python from requires-python's floor
    to 3.12, the classifiers name the same ones, and every other job stays on one Python (3.11)."""
    from packaging.specifiers import SpecifierSet

    pyproject = Path(ROOT, "pyproject.toml").read_text()
    (requires,) = re.findall(r'^requires-python = "([^"]+)"', pyproject, re.M)
    wanted = [f"3.{minor}" for minor in range(6, 13) if f"3.{minor}" in SpecifierSet(requires)]
    assert wanted[0] == "3.10" and wanted[-1] == "3.12", requires
    assert re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject) == wanted
    jobs = workflow()["jobs"]
    tests = jobs["pull-request"]
    assert tests["strategy"]["matrix"]["python"] == wanted and tests["strategy"]["fail-fast"] is False
    for name, job in jobs.items():
        (setup,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python")]
        assert setup["with"]["python-version"] == ("${{ matrix.python }}" if job is tests else "3.11"), name
    suite = [s for s in tests["steps"] if s.get("run", "").startswith("./kvrow test")]
    assert suite and all("if" not in s for s in suite)  # the suite on every Python of the matrix
    upload = next(s for s in tests["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert "matrix.python" in upload["with"]["name"]  # one artifact per Python: upload-artifact@v4 refuses a name twice
