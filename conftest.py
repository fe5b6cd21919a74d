"""pytest setup: our Hypothesis profiles and the ``--target`` option for the property tests in fuzz/.

The suite runs under ``ci`` (deterministic, bounded) unless HYPOTHESIS_PROFILE
or ``--hypothesis-profile`` says otherwise; ``nightly`` is for the long job.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from fuzz.common.profiles import register_profiles

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

_TARGETS: dict = {}


def pytest_addoption(parser):
    group = parser.getgroup("kvrow-fuzz")
    group.addoption(
        "--target",
        action="append",
        default=None,
        metavar="SPEC",
        help="target of the property tests in fuzz/ (repeatable; default: reference). See `python -m fuzz targets`.",
    )


def pytest_configure(config):
    # Resolve --target once, up front: a bad spec is a usage error (exit 4, one line), not N test errors.
    from fuzz.targets import TargetError, resolve_target

    for spec in config.getoption("--target") or []:
        if spec not in _TARGETS:
            try:
                _TARGETS[spec] = resolve_target(spec)
            except TargetError as e:
                raise pytest.UsageError(f"--target: {e}") from None


def pytest_generate_tests(metafunc):
    if "fuzz_target" in metafunc.fixturenames:
        specs = metafunc.config.getoption("--target") or ["reference"]
        metafunc.parametrize("fuzz_target", specs, indirect=True, ids=specs)


@pytest.fixture(scope="session")
def fuzz_target(request):
    from fuzz.targets import resolve_target

    spec = request.param
    if spec not in _TARGETS:  # the default, "reference"
        _TARGETS[spec] = resolve_target(spec)
    return _TARGETS[spec]
