"""What the toy engine declares when it is loaded: its names, its one checked table, its kind of case.

Declared through the core's registries only (``fuzz.findings.kinds``,
``fuzz.tables``), as any engine's are: the core names none of them.
"""

from __future__ import annotations

from fuzz.findings.kinds import Names, Property, declare_case_type, declare_names
from fuzz.tables import CodeRef, Layout, Table, Width, declare_table

from .allocator import HERE, TABLE_NAME, fixed_row_width
from .config import ToyConfig

NAME = "toy"  # the engine's name: the registry's key and every toy target's ``Target.engine``
PAGED, UNPAGED = "paged", "page-1"  # the bug groups: where the allocator rounds a reserve, and where it does not


def group(config: ToyConfig) -> str:
    """The group a configuration falls in: a break of the row is a rounding bug only where there is a rounding."""
    return PAGED if config.page_size > 1 else UNPAGED


NAMES = declare_names(
    NAME, Names(groups=frozenset({PAGED, UNPAGED}), variants=frozenset(), guards=frozenset(), mismatch_groups=())
)

TABLE = declare_table(
    Table(
        name=TABLE_NAME,
        engine=NAME,
        layout=Layout.ROWS,
        width=Width(
            of=lambda target, config: int(target.sizing(config)),  # the target's own width function
            model=lambda config, _semantics: fixed_row_width(config),  # the reference: what a row must hold
            code=(CodeRef(HERE, "row_width"), CodeRef(HERE, "fixed_row_width")),
        ),
        writers=(CodeRef(HERE, "ToyAllocator.decode_step"),),
        readers=(),
        properties=(Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED),
        same_write={Property.NEIGHBOUR_ROWS_UNTOUCHED: Property.WRITE_WITHIN_ROW},
        group=group,  # no ``cases``/``observe``: the engine hunts it itself (not the generic table hunt)
    )
)

# One decode step of one request: its row and its length (the configuration is the case file's own).
TOY_STEP = declare_case_type(
    "toy-step", NAME, frozenset({"row", "seq_len"}), f"{__package__}.engine:replay_step", named_apart=False
)
