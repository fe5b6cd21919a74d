"""Decode scenarios near the context limit, valid under a target's scheduler rules."""

from __future__ import annotations

from hypothesis import assume, strategies as st

from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario

from . import space
from .configs import DrawChooser


@st.composite
def decode_scenarios(draw, revision: Revision, pins: dict | None = None) -> DecodeScenario:
    scenario = space.decode_scenario(DrawChooser(draw), revision, near_limit=True, pins=pins)
    assume(scenario is not None)  # only pinned fields can clash with drawn ones
    return scenario
