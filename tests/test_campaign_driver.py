"""The one campaign driver: seeded runs keep the example database, on purpose.

``hypothesis.seed`` alone switches the database off; the driver applies its
settings after the seed, so a nightly run with ``--seed`` (every nightly run
prints one) stores what it found and replays it first the next night.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import settings

from fuzz.campaign.driver import round_settings, run_campaign
from fuzz.cli import main
from fuzz.common.profiles import get_profile
from fuzz.engines.sglang.decode.engine import DecodeHunt
from fuzz.targets.resolve import resolve_target

RUN = [
    "run",
    "--target",
    "reference@sglang-0.5.23",
    "--profile",
    "nightly",
    "--seed",
    "7",
    "--max-examples",
    "40",
    "--quiet",
    "--cases",
    "cases",
]


def first_found(report: str) -> dict[str, int]:
    with open(report) as f:
        data = json.load(f)
    return {f["signature"]: f["found_at"] for t in data["targets"] for f in t["findings"]}


def stored_examples(root: str) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


@pytest.mark.slow
def test_a_seeded_nightly_run_stores_examples_in_the_database(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KVROW_FUZZ_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(RUN + ["--json", "first.json"]) == 1
    database = os.path.join(".hypothesis", "examples", "run", "reference-sglang-0.5.23")
    assert stored_examples(database) > 0, "a seeded nightly run left nothing in the example database"
    capsys.readouterr()


class SearchOnly(DecodeHunt):
    """The decode campaign without its covering set: what Hypothesis alone finds, and when."""

    def cover(self, tracker, progress):
        return []


def search(target, database: str, monkeypatch) -> dict[str, int]:
    monkeypatch.setenv("KVROW_FUZZ_DATABASE", database)
    hyp = settings(get_profile("nightly"), max_examples=40)
    result = run_campaign(target, SearchOnly(target), hyp, seed=7, max_rounds=2)
    return {str(f.signature): f.found_at for f in result.findings}


@pytest.mark.slow
def test_a_seeded_run_replays_what_the_database_holds_first(tmp_path, monkeypatch):
    target = resolve_target("reference@sglang-0.5.23")
    group = "write-within-row/alloc-page-1"
    first = search(target, str(tmp_path / "db"), monkeypatch)
    assert stored_examples(str(tmp_path / "db")) > 0
    # The same seed with the database: the stored failure is replayed before the search would meet it.
    again = search(target, str(tmp_path / "db"), monkeypatch)
    assert again[group] < first[group]
    # Without it (a fresh database), the same seed searches as the first time.
    assert search(target, str(tmp_path / "fresh"), monkeypatch) == first


def test_profiles_without_a_database_store_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KVROW_FUZZ_DATABASE", raising=False)
    monkeypatch.chdir(tmp_path)
    main(
        [
            "run",
            "--target",
            "reference@sglang-0.5.23",
            "--profile",
            "ci",
            "--max-examples",
            "40",
            "--quiet",
            "--cases",
            "cases",
        ]
    )
    assert not os.path.exists(os.path.join(".hypothesis", "examples"))  # (Hypothesis caches constants beside it)
    capsys.readouterr()


@pytest.mark.parametrize("kind", ["run", "lifecycle"])
def test_each_campaign_kind_and_target_has_its_own_database(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("KVROW_FUZZ_DATABASE", str(tmp_path / "db"))
    target = resolve_target("reference@sglang-0.5.23")
    for profile in ("dev", "nightly"):
        s = round_settings(get_profile(profile), target, kind, seed=3)
        assert s.database.path == tmp_path / "db" / kind / "reference-sglang-0.5.23"
        assert not s.derandomize
    assert round_settings(get_profile("ci"), target, kind, seed=None).database is None
