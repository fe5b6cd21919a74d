"""The min-slack heatmap: row width minus worst write end, over page_size x attn_dcp_size, per kind of pool.

One panel per kind of pool with a violation (``--heatmap-pool KIND`` for one
kind's alone), each titled with its pool: a red cell says which deployment's
rows are short, not just that some pool's are.

A PNG drawn with matplotlib (the optional ``plot`` extra: ``require_matplotlib``
says so in one line before any work starts) and the same numbers as a
markdown table beside it.  Red cells are violations (the worst write ends
past the row), blue cells have slack, the darker the further from zero
(symmetric log scale); gray cells have no valid configuration (UNO runs
without DCP, for instance).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from allocator_model.pools import KVPool
from fuzz.common.errors import BadInput
from fuzz.common.files import write_atomically

Heat = dict[tuple[int, int], int]  # (page_size, attn_dcp_size) -> min slack
Axes = tuple[Iterable[int], Iterable[int]]  # (page sizes, dcp sizes) to lay out

MATPLOTLIB_MISSING = "--heatmap needs matplotlib: pip install 'kvrow-fuzz[plot]'"


def require_matplotlib() -> None:
    """BadInput (one line, exit 2) when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise BadInput(MATPLOTLIB_MISSING) from None


def _axes(heat: Heat, axes: Axes | None = None) -> tuple[list[int], list[int]]:
    """(page sizes, dcp sizes): the swept ones if given (cells without a configuration show gray)."""
    if axes is not None:
        return sorted(set(axes[0])), sorted(set(axes[1]))
    return sorted({p for p, _ in heat}), sorted({d for _, d in heat})


def markdown_table(heat: Heat, title: str, axes: Axes | None = None) -> str:
    """The same numbers as a markdown table; violations in bold."""
    pages, dcps = _axes(heat, axes)
    head = (
        f"Min slack (row width - worst write end, columns): {title}. Negative (bold): the worst write "
        f"ends past the row, a violation."
    )
    lines = [
        head,
        "",
        "| attn_dcp_size \\ page_size | " + " | ".join(map(str, pages)) + " |",
        "|---|" + "---:|" * len(pages),
    ]
    for d in dcps:
        cells = []
        for p in pages:
            v = heat.get((p, d))
            cells.append("n/a" if v is None else f"**{v}**" if v < 0 else str(v))
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


Panels = list[tuple[str, Heat]]  # (title, heat): one panel each, top to bottom


def pool_panels(pool_heat: dict[KVPool, Heat], title: str, pool: KVPool | None = None) -> Panels:
    """The panels to draw: ``pool``'s alone when one is asked for, else one per kind of pool with a violation
    (the standard pool alone when none has one), each titled with its pool."""
    if pool is not None:
        return [(f"{title}, kv_pool {pool.value}", pool_heat.get(pool, {}))]
    kinds = [k for k in KVPool if k in pool_heat and any(v < 0 for v in pool_heat[k].values())]
    kinds = kinds or [k for k in (KVPool.STANDARD,) if k in pool_heat] or list(pool_heat)[:1]
    return [(f"{title}, kv_pool {k.value}", pool_heat[k]) for k in kinds]


def render_png(panels: Panels, axes: Axes | None = None) -> bytes:
    """The heatmaps as a PNG, one panel per kind of pool: columns page_size, rows attn_dcp_size, each cell its
    min slack.  Drawn in memory: the file is then written whole or not at all (never a 0-byte PNG)."""
    import io

    from matplotlib.figure import Figure

    pages, dcps = _axes({c: v for _, heat in panels for c, v in heat.items()}, axes)
    width, height = 1.0 + 0.7 * max(4, len(pages)), 1.8 + 0.45 * max(2, len(dcps))
    fig = Figure(figsize=(width, height * len(panels)), layout="constrained")
    for n, (title, heat) in enumerate(panels, 1):
        _panel(fig, fig.add_subplot(len(panels), 1, n), heat, title, pages, dcps)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=100)
    return png.getvalue()


def _panel(fig: Any, ax: Any, heat: Heat, title: str, pages: list[int], dcps: list[int]) -> None:
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import SymLogNorm

    grid = np.full((len(dcps), len(pages)), np.nan)
    for i, d in enumerate(dcps):
        for j, p in enumerate(pages):
            if (p, d) in heat:
                grid[i, j] = heat[p, d]
    reach = max([1] + [abs(v) for v in heat.values()])
    norm = SymLogNorm(linthresh=1, vmin=-reach, vmax=reach, base=10)
    cmap = colormaps["RdBu"].with_extremes(bad="lightgray")
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
    for i, d in enumerate(dcps):
        for j, p in enumerate(pages):
            v = heat.get((p, d))
            dark = v is not None and abs(v) > reach**0.6
            ax.text(
                j,
                i,
                "n/a" if v is None else str(v),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
                fontweight="bold" if v is not None and v < 0 else "normal",
            )
    ax.set_xticks(range(len(pages)), [str(p) for p in pages])
    ax.set_yticks(range(len(dcps)), [str(d) for d in dcps])
    ax.set_xlabel("page_size")
    ax.set_ylabel("attn_dcp_size")
    ax.set_title(
        f"min slack: {title}\nrow width - worst write end, in columns (red: violation; gray: no valid configuration)",
        fontsize=9,
    )
    fig.colorbar(image, ax=ax, label="slack (columns, symmetric log scale)")


def write_heatmap(path: str, panels: Panels, *, axes: Axes | None = None) -> str:
    """Write PATH (PNG, one panel per entry of ``panels``) and PATH with .md (a table each); returns the table's
    path. ``axes``: (page sizes, dcp sizes) to lay out; default: those in the heat."""
    md = os.path.splitext(path)[0] + ".md"
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_atomically(path, render_png(panels, axes))
    write_atomically(md, "\n".join(markdown_table(heat, title, axes) for title, heat in panels))
    return md
