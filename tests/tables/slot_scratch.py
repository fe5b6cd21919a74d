"""A test-only table, shape 4: a per-slot 3-D scratch, and a commit that maps the accepted steps back.

The Mamba pools' speculative scratch: ``[slots, steps, state]``, slot k a
request's intermediate states, one per draft token its verify step runs;
the commit reads the accepted steps' states and writes the last one into
the request's row of the state pool.  Planted (``scratch_steps``): the steps
are sized from the chain (``speculative_num_steps + 1``) while a tree's
verify step runs every draft token, so slot k's writes land in slot k + 1
(``write-within-row``) and the commit reads accepted steps past the slot
(``read-within-row``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st
from shape_configs import draft_tokens, drawn, group, ints

from allocator_model.config import ServingConfig
from fuzz.findings.kinds import Property
from fuzz.tables import GUARD, Access, AccessKind, CodeRef, Layout, Span, Table, Width

HERE = "tests/tables/slot_scratch.py"
STATE = 4  # a state's width (the scratch's last dimension)


def scratch_steps(config: ServingConfig) -> int:
    """A slot's steps (planted: the chain's verify length, not the tree's draft tokens)."""
    return (config.speculative_num_steps or 0) + 1


def fixed_scratch_steps(config: ServingConfig) -> int:
    """The corrected slot: a step per draft token."""
    return draft_tokens(config)


def observe(steps: Callable[[ServingConfig], int]) -> Callable[[Any, ServingConfig, Mapping[str, Any]], list[Access]]:
    def verify(target: Any, config: ServingConfig, data: Mapping[str, Any]) -> list[Access]:
        slot, accepted = ints(data, "slot", "accepted")
        slots, ran = config.max_running_requests, draft_tokens(config)
        if not 0 <= slot < slots or not 1 <= accepted <= ran:
            raise ValueError(f"slot {slot} or accepted {accepted} is outside {config.short()}")
        size = steps(config) * STATE
        base, end = slot * size, slot * size + ran * STATE
        bound = (Span(None, base, base + size),)
        spill = []
        if base + size < min(end, slots * size):
            spill.append(Span(None, base + size, min(end, slots * size), f"slot {slot + 1}"))
        if end > slots * size:
            spill.append(Span(None, slots * size, end, GUARD))
        read = Span(None, base, base + accepted * STATE)
        return [
            Access("slot_scratch", f"slot {slot}", AccessKind.WRITE, (Span(None, base, end),), bound, tuple(spill),
                   step=f"verify {ran} draft token(s), a state each"),
            Access("slot_scratch", f"slot {slot}", AccessKind.READ, (read,), bound,
                   step=f"the commit reads the {accepted} accepted step(s)"),
            Access("mamba_state", f"slot {slot}", AccessKind.COMMIT, (Span(slot, 0, STATE),), (Span(slot, 0, STATE),),
                   step="the last accepted state into the request's row of the state pool"),
        ]  # fmt: skip

    return verify


def slot_and_accepted(config: ServingConfig) -> st.SearchStrategy[dict[str, Any]]:
    ran = draft_tokens(config)
    return st.fixed_dictionaries(
        {"slot": st.integers(0, config.max_running_requests - 1), "accepted": st.just(ran) | st.integers(1, ran)}
    )


def table(steps: Callable[[ServingConfig], int]) -> Table:
    return Table(
        name="slot_scratch",
        engine="sglang",
        layout=Layout.SLOT_SCRATCH,
        width=Width(lambda t, c: steps(c) * STATE, lambda c, _: steps(c) * STATE, (CodeRef(HERE, steps.__name__),)),
        writers=(CodeRef(HERE, "observe"),),
        readers=(CodeRef(HERE, "observe"),),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED, Property.READ_WITHIN_ROW),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        cases=drawn(slot_and_accepted),
        observe=observe(steps),
        group=group,
    )


TABLE = table(scratch_steps)
FIXED = table(fixed_scratch_steps)
