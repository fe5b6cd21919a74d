"""A real target's sizing numbers for a whole launch grid, each function run once per path (``tracing``).

``calls.called_columns`` is the plain program: per configuration, build the
``ServingConfig``, call the file's functions through the stand-ins, and
read the headroom, the row rule (``row_alignment``), the guard and the
reserve of each run-time shape.  Here the same surface functions of the
same loaded file (``RealSizing.plain()``: nothing wrapped, nothing
re-implemented) are handed a ``GridView``, a configuration whose varying
fields are traced columns, so each function runs once per path it has over
the block instead of once per configuration.

Sound by construction where tracing follows the code (``tracing``'s
invariant), and checked where it might not:

* a configuration whose traced call raised, returned something that is not
  an integer, or did something tracing cannot follow is called one by one
  (``called_columns``), so its finding and its message are the plain
  program's;
* in every block, one configuration of every path of every traced function
  (and a spread of others) is also called one by one, and every column must
  agree; a block where one does not is called one by one in full and
  counted in ``TraceStats.diverged`` (reported by ``prove``).

``tests/test_prove_traced.py`` holds the two equal on whole spaces.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from allocator_model import closed_form as cf
from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.decode import decode_reserve
from allocator_model.numeric import ceil_to_page
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.prove.tracing import (
    Outcome,
    Run,
    TooManyPaths,
    Unsupported,
    bool_result,
    combine,
    explore,
    integer_result,
    leaf,
    prepared,
    traced_value,
)

from .calls import (
    ROW_COLUMNS,
    SIZING_CONTEXT_LEN,
    CalledRows,
    Columns,
    CountingSizing,
    called_columns,
    finish_rows,
    row_probe_context_len,
    row_rule,
)
from .result import TraceStats
from .traced_growth import traced_growth_kinds

SAMPLE_SPREAD = 16  # configurations per block checked one by one besides one per path

# What a sizing function reads from a ServingConfig that never varies inside a launch grid.
CONSTANT_FIELDS = frozenset(
    {
        "tp_size",
        "max_total_num_tokens",
        "max_running_requests",
        "enable_overlap",
        "kv_pool",
        "speculative_algorithm",
        "spec_on",
    }
)


class GridView:
    """A ``ServingConfig`` of a whole grid: constant fields from one resolved configuration, the rest traced.

    Only what the sizing surface reads; any other field raises ``Unsupported``
    (those configurations are then called one by one).
    """

    def __init__(self, base: ServingConfig, fields: dict[str, Any]) -> None:
        self._base = base
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._fields:
            return self._fields[name]
        if name in CONSTANT_FIELDS:
            return getattr(self._base, name)
        raise Unsupported(f"ServingConfig.{name} of a traced grid")

    def with_context_len(self, context_len: Any) -> GridView:
        return GridView(self._base, {**self._fields, "context_len": context_len})


class GridColumns:
    """The grid's columns at some rows (a configuration each, or a run-time shape each), ready to trace.

    Each column is read once: a column every row agrees on is handed over as
    a plain value (``tracing.leaf``), the rest as int64 tensors.
    """

    def __init__(self, g: cf.LaunchGrid, idx: Tensor, steps: Tensor, drafts: Tensor, base: ServingConfig) -> None:
        self.g = g
        self.base = base
        self.spec = g.algorithm is not None
        columns = {"page_size": g.page_size[idx], "attn_dcp_size": g.attn_dcp_size[idx]}
        if self.spec:
            columns.update(
                speculative_num_steps=g.num_steps[idx],
                speculative_eagle_topk=g.topk[idx],
                speculative_num_draft_tokens=g.draft_tokens[idx],
                speculative_adaptive=g.adaptive[idx],
                max_speculative_num_draft_tokens=g.max_draft_tokens[idx],
                runtime_steps=steps,
                runtime_drafts=drafts,
            )
        self._columns = {k: prepared(v) for k, v in columns.items()}

    def _leaf(self, name: str, run: Run) -> Any:
        return traced_value(self._columns[name], run)

    def view(self, run: Run, context_len: Tensor | int = SIZING_CONTEXT_LEN) -> GridView:
        fields: dict[str, Any] = {
            "context_len": context_len if isinstance(context_len, int) else leaf(context_len, run),
            "page_size": self._leaf("page_size", run),
            "attn_dcp_size": self._leaf("attn_dcp_size", run),
        }
        if not self.spec:
            for name in (
                "speculative_num_steps",
                "speculative_eagle_topk",
                "speculative_num_draft_tokens",
                "speculative_adaptive",
                "max_speculative_num_draft_tokens",
                "launch_runtime",
            ):
                fields[name] = getattr(self.base, name)
            fields["topk"] = 1
            return GridView(self.base, fields)
        steps, drafts = self._leaf("speculative_num_steps", run), self._leaf("speculative_num_draft_tokens", run)
        topk = self._leaf("speculative_eagle_topk", run)
        fields.update(
            speculative_num_steps=steps,
            speculative_eagle_topk=topk,
            topk=topk,
            speculative_num_draft_tokens=drafts,
            speculative_adaptive=self._leaf("speculative_adaptive", run),
            max_speculative_num_draft_tokens=self._leaf("max_speculative_num_draft_tokens", run),
            launch_runtime=SpecRuntime(steps, drafts),
        )
        return GridView(self.base, fields)

    def runtime(self, run: Run) -> SpecRuntime | None:
        """The run-time shape of each row (None without speculation)."""
        if not self.spec:
            return None
        return SpecRuntime(self._leaf("runtime_steps", run), self._leaf("runtime_drafts", run))


def traced_rows(target: SGLangTarget, sizing: CountingSizing, g: cf.LaunchGrid, stats: TraceStats) -> CalledRows:
    """``calls.called_rows`` of the block, the file's functions run once per path (module docstring).

    Progress is counted per block by the sweep (a traced block takes seconds, not minutes).
    """
    raw = target.sizing.plain()
    n = len(g)
    stats.blocks += 1
    if raw is None or n == 0:
        return _called_block(target, sizing, g, stats)
    try:
        (cols, odd, untraced), sample = _traced_columns(raw, sizing, g, stats)
    except TooManyPaths:
        return _called_block(target, sizing, g, stats)
    if not _agrees(_called_subset(sizing, g, sample), cols, odd, sample, untraced):
        stats.diverged.append(_block_name(g))
        return _called_block(target, sizing, g, stats)
    called = _called_subset(sizing, g, untraced)
    stats.configs_called += int(untraced.numel())
    stats.configs_traced += n - int(untraced.numel())
    growth = functools.partial(traced_growth_kinds, stats=stats, block=_block_name(g))  # (``traced_growth``)
    return finish_rows(target, sizing, g, *_merge(cols, odd, untraced, called), growth=growth)


def _block_name(g: cf.LaunchGrid) -> str:
    return f"{g.kv_pool.value}/{g.algorithm or 'none'}/page {int(g.page_size[0])}"


def _called_block(target: SGLangTarget, sizing: CountingSizing, g: cf.LaunchGrid, stats: TraceStats) -> CalledRows:
    stats.configs_called += len(g)
    return finish_rows(target, sizing, g, *called_columns(sizing, g))


def _traced_columns(
    raw: Any, sizing: CountingSizing, g: cf.LaunchGrid, stats: TraceStats
) -> tuple[tuple[dict[str, Tensor], Tensor, Tensor], Tensor]:
    """((columns of the traced configurations, their odd-row flags, the untraced configurations), sample).

    Mirrors ``calls.called_columns`` step for step: the headroom, the row
    rule from the row width at two context lengths, the guard at the row's
    end, the reserve of every run-time shape.  A configuration is untraced
    when any of its calls did not return on a path tracing follows.
    """
    n = len(g)
    base = ServingConfig.resolve(context_len=SIZING_CONTEXT_LEN, **g.config_kwargs(0))
    launch = GridColumns(g, torch.arange(n), g.num_steps, g.draft_tokens, base)
    samples: list[Tensor] = [torch.linspace(0, n - 1, min(n, SAMPLE_SPREAD)).round().to(cf.INT)]

    def traced(
        name: str, fn: Callable[[Run], Any], domain: Tensor, accept: Callable[[Any], bool], rows: Tensor | None = None
    ) -> Outcome:
        """``fn`` over ``domain``'s rows (configurations, or run-time shapes of configurations ``rows``)."""
        paths = explore(fn, domain)
        sizing.count(name, len(paths))
        stats.paths += len(paths)
        for p in paths:
            first = p.mask.nonzero()[:1].flatten()
            samples.append(first if rows is None else rows[first])
        return combine(paths, len(domain), accept)

    ok = torch.ones(n, dtype=torch.bool)
    head = traced(
        "req_to_token_extra_context_len",
        lambda run: raw.req_to_token_extra_context_len(launch.view(run)),
        ok,
        integer_result,
    )
    ok = ok & head.ok
    extra0 = head.values
    # calls.row_alignment over the grid: the row width at the probe length and one past it (``row_rule``).
    context_len = row_probe_context_len(g.page_size, g.attn_dcp_size, extra0)
    widths = []
    for c in (context_len, context_len + 1):

        def row_width(run: Run, c: Tensor = c) -> Any:
            return raw.req_to_token_row_width(launch.view(run, c))

        w = traced("req_to_token_row_width", row_width, ok, integer_result)
        ok = ok & w.ok
        widths.append(w.values - c)
    alloc_page = traced(
        "allocator_page_size", lambda run: raw.allocator_page_size(launch.view(run)), ok, integer_result
    )
    ok = ok & alloc_page.ok
    page = torch.where(alloc_page.ok, alloc_page.values, torch.ones_like(alloc_page.values))  # failed: dropped below
    align, extra, odd = row_rule(extra0, widths[0], widths[1], page)
    width = ceil_to_page(SIZING_CONTEXT_LEN + extra, align)
    guard = traced(
        "row_guard_fires",
        lambda run: raw.row_guard_fires(launch.view(run), leaf(width + 1, run), leaf(width, run)),
        ok,
        bool_result,
    )
    ok = ok & guard.ok
    idx, steps, drafts = cf.runtime_shapes(g)
    shapes = GridColumns(g, idx, steps, drafts, base)
    reserve = traced(
        "alloc_reserve_per_decode",
        lambda run: decode_reserve(shapes.view(run), shapes.runtime(run), raw),  # type: ignore[arg-type]
        ok[idx],
        integer_result,
        rows=idx,
    )
    failed = torch.zeros(n, dtype=torch.bool)
    failed[idx[ok[idx] & ~reserve.ok]] = True
    ok = ok & ~failed
    keep = (ok & ~odd)[idx]
    spec = g.algorithm is not None
    cols = {
        "config": idx[keep],
        "steps": (steps if spec else torch.zeros_like(steps))[keep],
        "drafts": (drafts if spec else torch.zeros_like(drafts))[keep],
        "page": page[idx][keep],
        "reserve": reserve.values[keep],
        "extra": extra[idx][keep],
        "row_align": align[idx][keep],
        "guarded": guard.values[idx][keep],
    }
    cols = {k: v.to(cf.INT) for k, v in cols.items()}  # as called_columns builds them
    return (cols, odd & ok, (~ok).nonzero().flatten()), torch.unique(torch.cat(samples))


def _called_subset(sizing: CountingSizing, g: cf.LaunchGrid, which: Tensor) -> Columns:
    """``called_columns`` of the configurations ``which`` (sorted indices into ``g``), re-indexed to ``g``."""
    cols, raised, odd, errors = called_columns(sizing, g.select(which))
    cols = {**cols, "config": which[cols["config"]] if len(cols["config"]) else cols["config"]}
    return cols, raised, odd, {int(which[k]): v for k, v in errors.items()}


def _agrees(check: Columns, cols: dict[str, Tensor], odd: Tensor, sample: Tensor, untraced: Tensor) -> bool:
    """Whether the plain calls of ``sample`` give what tracing gave at every sample configuration it traced.

    (A sample configuration tracing handed over is called one by one anyway.)
    """
    ccols, craised, codd, _ = check
    traced = ~torch.isin(sample, untraced)
    t = sample[traced]
    if bool(craised[traced].any()) or not bool((codd[traced] == odd[t]).all()):
        return False
    mine, theirs = torch.isin(cols["config"], t), torch.isin(ccols["config"], t)
    for k in ROW_COLUMNS:
        a, b = ccols[k][theirs], cols[k][mine]
        if a.shape != b.shape or not bool((a == b.to(a.dtype)).all()):
            return False
    return True


def _merge(cols: dict[str, Tensor], odd: Tensor, untraced: Tensor, called: Columns) -> Columns:
    """The traced columns with the ``untraced`` configurations' plain calls in, rows in configuration order."""
    ccols, craised, codd, cerrors = called
    raised = torch.zeros_like(odd)
    odd = odd.clone()
    if untraced.numel():
        raised[untraced] = craised
        odd[untraced] = codd
    merged = {k: torch.cat([cols[k], ccols[k].to(cols[k].dtype)]) for k in ROW_COLUMNS}
    order = torch.argsort(merged["config"], stable=True)
    return {k: v[order] for k, v in merged.items()}, raised, odd, cerrors
