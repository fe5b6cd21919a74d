"""Hypothesis profiles: ``ci`` (deterministic, bounded), ``dev``, ``nightly`` (random, large, remembered).

Registered with an explicit parent: under ``CI=true`` Hypothesis loads its
own ``ci`` profile by itself, and a profile registered without a parent
would inherit derandomize=True from it, so "nightly" would replay the same
inputs every night.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from .defaults import PROFILES

JOBS_EVERY_CORE = ("nightly",)  # profiles whose campaigns default to a worker per core (``--jobs``)
DEFAULT_DATABASE = os.path.join(".hypothesis", "examples")

_QUIET = dict(deadline=None, verbosity=Verbosity.quiet, suppress_health_check=[HealthCheck.too_slow])


def database_dir() -> str:
    """Where the example database lives: $KVROW_FUZZ_DATABASE, else .hypothesis/examples (what CI caches)."""
    return os.environ.get("KVROW_FUZZ_DATABASE") or DEFAULT_DATABASE


def register_profiles(directory: str | None = None) -> None:
    base = settings.get_profile("default")
    db = DirectoryBasedExampleDatabase(directory or database_dir())
    settings.register_profile(
        "ci", parent=base, derandomize=True, database=None, max_examples=200, print_blob=False, **_QUIET
    )
    settings.register_profile("dev", parent=base, derandomize=False, database=db, max_examples=1000, **_QUIET)
    settings.register_profile(
        "nightly",
        parent=base,
        derandomize=False,
        database=db,
        max_examples=20_000,
        phases=tuple(Phase),
        **_QUIET,
    )


def get_profile(name: str) -> settings:
    if name not in PROFILES:
        raise KeyError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})")
    register_profiles()
    return settings.get_profile(name)


def default_profile_name() -> str:
    """ci under CI, else dev; HYPOTHESIS_PROFILE overrides."""
    name = os.environ.get("HYPOTHESIS_PROFILE")
    if name:
        return name
    return "ci" if os.environ.get("CI") else "dev"
