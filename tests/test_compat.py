"""fuzz.common.compat: what the tool takes from Python 3.11, and its 3.10 equivalents, behave as 3.11's own.

Imports only the standard library, Hypothesis and ``fuzz.common.compat`` /
``allocator_model.algorithms`` (no torch): the 3.10 check runs this file in an
environment without torch.
"""

from __future__ import annotations

import enum
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from fuzz.common import compat
from fuzz.common.compat import StrEnumBackport

ROOT = Path(__file__).resolve().parents[1]
# The backport everywhere; 3.11's own beside it where there is one: each holds every assertion below.
STR_ENUMS = [StrEnumBackport] + ([enum.StrEnum] if sys.version_info >= (3, 11) else [])  # novermin


def colors(base: type) -> type:
    class Color(base):  # type: ignore[misc,valid-type]
        RED = "red"
        DARK_BLUE = "dark-blue"
        AUTO_NAMED = enum.auto()

    return Color


@pytest.mark.parametrize("base", STR_ENUMS, ids=lambda b: f"{b.__module__}.{b.__name__}")
def test_a_str_enum_member_is_its_value_in_str_format_eq_hash_and_json(base):
    Color = colors(base)
    red = Color.RED
    assert isinstance(red, str) and isinstance(red, enum.Enum) and type(red) is Color
    assert str(red) == "red" and f"{red}" == "red" and "%s" % red == "red"  # noqa: UP031 (logging's way)
    assert format(red, ">5") == "  red" and f"{red:^7}|" == "  red  |" and f"{red!s}" == "red"
    assert repr(red) == "<Color.RED: 'red'>" and f"{red!r}" == "<Color.RED: 'red'>"
    assert red == "red" and "red" == red and red != "RED" and red != Color.DARK_BLUE
    assert hash(red) == hash("red") and {red: 1}["red"] == 1 and {"red": 1}[red] == 1 and "red" in {red}
    assert json.dumps(red) == '"red"' and json.dumps({red: [red, Color.DARK_BLUE]}) == '{"red": ["red", "dark-blue"]}'
    assert Color("red") is red and Color["RED"] is red and Color("dark-blue") is Color.DARK_BLUE
    assert Color.AUTO_NAMED == "auto_named"  # auto(): the name, lower-cased
    assert red.upper() == "RED" and red + "!" == "red!" and sorted([red, Color.DARK_BLUE]) == ["dark-blue", "red"]
    assert [m.value for m in Color] == ["red", "dark-blue", "auto_named"]
    with pytest.raises(ValueError):
        Color("blue")


@pytest.mark.parametrize("base", STR_ENUMS, ids=lambda b: f"{b.__module__}.{b.__name__}")
def test_a_str_enum_refuses_a_value_that_is_not_a_string(base):
    with pytest.raises(TypeError, match="is not a string"):

        class Bad(base):  # type: ignore[misc,valid-type]
            X = 1


def test_str_enum_is_the_standard_librarys_from_3_11_and_the_backport_on_3_10():
    if sys.version_info >= (3, 11):
        assert compat.StrEnum is enum.StrEnum  # novermin
    else:
        assert compat.StrEnum is StrEnumBackport


def test_the_tools_enums_are_compat_str_enums_and_nothing_takes_enum_str_enum_directly():
    from allocator_model.algorithms import Algorithm

    assert issubclass(Algorithm, compat.StrEnum) and f"{Algorithm.EAGLE}" == "EAGLE"
    direct = re.compile(r"^\s*from enum import .*\bStrEnum\b|\benum\.StrEnum\b", re.M)
    offenders = [
        str(p.relative_to(ROOT))
        for d in ("allocator_model", "strategies", "fuzz", "benchmarks")
        for p in (ROOT / d).rglob("*.py")
        if p.name != "compat.py" and direct.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == [], f"import StrEnum from fuzz.common.compat (Python 3.10): {offenders}"


class Outer:
    def method(self) -> None:
        pass

    class Inner:
        @staticmethod
        def deep() -> None:
            pass


def closure_maker():
    def inner() -> None:
        pass

    return inner


CLOSURE = closure_maker()


@pytest.mark.parametrize(
    "function, qualname",
    [
        (Outer.method, "Outer.method"),
        (Outer.Inner.deep, "Outer.Inner.deep"),
        (CLOSURE, "closure_maker.<locals>.inner"),
        (closure_maker, "closure_maker"),
    ],
)
def test_code_qualname_is_the_functions_qualified_name_by_either_way(function, qualname):
    assert compat.code_qualname(function.__code__) == qualname
    assert compat.referrer_qualname(function.__code__) == qualname  # the 3.10 way, on every Python
    assert compat.referrer_qualname(function.__code__) == qualname  # remembered: the same answer


def test_code_with_no_live_function_is_named_by_its_co_name_on_3_10():
    def gone() -> None:
        pass

    code = gone.__code__
    del gone
    assert compat.referrer_qualname(code) == "gone"
    assert compat.referrer_qualname(compile("x = 1", "<s>", "exec")) == "<module>"


def test_the_group_hypothesis_raises_for_two_failures_is_compat_base_exception_group():
    @settings(database=None, phases=[Phase.explicit], report_multiple_bugs=True)
    @example(0)
    @example(1)
    @given(st.integers())
    def two_bugs(x: int) -> None:
        raise (ValueError if x == 0 else KeyError)(x)

    with pytest.raises(compat.BaseExceptionGroup) as caught:
        two_bugs()
    assert sorted(type(e).__name__ for e in caught.value.exceptions) == ["KeyError", "ValueError"]


def test_lint_and_types_target_requires_pythons_floor():
    """ruff and mypy check for the oldest Python requires-python allows: a 3.11-only name or syntax is an error."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    (floor,) = re.findall(r'^requires-python = ">=3\.(\d+)"', pyproject, re.M)
    assert re.findall(r'^target-version = "py3(\d+)"', pyproject, re.M) == [floor]
    assert re.findall(r'^python_version = "3\.(\d+)"', pyproject, re.M) == [floor] == ["10"]
