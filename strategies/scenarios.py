"""Decode scenarios near the context limit, valid under a target's scheduler rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario

from . import space
from .configs import DrawChooser


@st.composite
def decode_scenarios(draw: st.DrawFn, revision: Revision, pins: Mapping[str, Any] | None = None) -> DecodeScenario:
    scenario = space.decode_scenario(DrawChooser(draw), revision, near_limit=True, pins=pins)
    if scenario is None:
        reject()  # only pinned fields can clash with drawn ones
    return scenario
