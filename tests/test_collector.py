"""The tool's own process collects cycles less often (``fuzz.common.collector``); a higher or disabled threshold
a user set stays."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fuzz.cli import main
from fuzz.common.collector import YOUNG_THRESHOLD, collect_less_often


@pytest.fixture
def threshold() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.parametrize(
    "before, after",
    [((700, 10, 10), (YOUNG_THRESHOLD, 10, 10)), ((50_000, 5, 5), (50_000, 5, 5)), ((0, 10, 10), (0, 10, 10))],
    ids=["default-raised", "higher-kept", "disabled-kept"],
)
def test_only_a_lower_threshold_is_raised(threshold: None, before: tuple[int, ...], after: tuple[int, ...]) -> None:
    gc.set_threshold(*before)
    collect_less_often()
    assert gc.get_threshold() == after


def test_a_command_runs_with_the_raised_threshold(threshold: None, capsys: pytest.CaptureFixture[str]) -> None:
    gc.set_threshold(700, 10, 10)
    assert main(["targets"]) == 0
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD
