"""Decode scenarios near the context limit, valid under a target's scheduler rules."""

from __future__ import annotations

from hypothesis import strategies as st

from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario

from . import space
from .configs import DrawChooser


@st.composite
def decode_scenarios(draw, revision: Revision) -> DecodeScenario:
    return space.decode_scenario(DrawChooser(draw), revision, near_limit=True)
