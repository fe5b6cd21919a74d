"""The covering set of the backends' page tables: each mode their CUDA-graph builders run, at the context limit.

``run`` hunts it first (``Table.cover``), so every checked backend x mode is reached before Hypothesis samples.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from allocator_model.config import ServingConfig
from allocator_model.page_tables import DRAFT_ROWS_ASSERTED, Mode, judged, steps
from allocator_model.revisions import Revision
from allocator_model.scenario import DecodeScenario, max_device_lag, scenario_problem
from allocator_model.scheduler import decode_alloc_bound

# The covering set: each mode a backend's graph tables run, at the limit of a context one page past SGLang's 4096
# default (a whole number of pages: any length past it passes the row; not of the 4096-token grid block: a grid that
# masks by length alone spills), or where the backend's width leaves the least room past it (``cover_offsets``),
# on SGLang's default page and a backend's, at the most overlap lag.
COVER_SPECS: tuple[dict[str, Any], ...] = (
    {},
    {"speculative_algorithm": "EAGLE", "speculative_num_steps": 7, "speculative_eagle_topk": 1,
     "speculative_num_draft_tokens": 8},  # every EAGLE mode, its D past the 4
    {"speculative_algorithm": "EAGLE", "speculative_adaptive": True},  # its candidate step counts
    {"speculative_algorithm": "DFLASH"},  # its block: D = 16
)  # fmt: skip
COVER_PAGES = (1, 64)


def cover(t: Any, target: Any, pins: Mapping[str, Any]) -> list[tuple[ServingConfig, dict[str, Any]]]:
    """The covering set of ``t`` (a ``page_tables.GraphTable``): ``COVER_SPECS`` x ``COVER_PAGES`` x its
    ``cover_offsets``, overlap on, each at the scheduler's bound plus the largest lag (a table of draft steps whose
    builders check its rows, also at the edge of its rows: ``edge_lengths``); a configuration the pins, the backend
    (``t.takes``) or the target's rules refuse, or one the table is not judged on (``page_tables.judged``), is left
    out."""
    revision: Revision = target.revision
    out = []
    for spec, page, offset in itertools.product(COVER_SPECS, COVER_PAGES, t.cover_offsets):
        args = {"context_len": 4096 + (offset or page), "page_size": page, "enable_overlap": True, **spec}
        try:
            cfg = ServingConfig.resolve(**{**args, **pins})
        except ValueError:  # a pin that clashes (ConfigError is one)
            continue
        bound = decode_alloc_bound(cfg, revision)
        if not t.takes(cfg) or not judged(cfg.speculative_algorithm, cfg.topk) or revision.refuses(cfg) or bound < 1:
            continue
        found = [DecodeScenario(cfg, bound, None, None, max_device_lag(cfg))]
        # a table of draft steps whose builders check its rows first: the edge of the check too, at a fixed S (an
        # adaptive launch's step counts are each a bucket of their own, their edges a fixed launch's)
        if t.backend in DRAFT_ROWS_ASSERTED and not cfg.speculative_adaptive:
            found += [DecodeScenario(cfg, n, None, None, 0) for n in edge_lengths(cfg) if 1 <= n <= bound]
        out += [(cfg, s.to_dict()) for s in found if scenario_problem(s, revision) is None]
    return list({json_key(c, d): (c, d) for c, d in out}.values())


def edge_lengths(cfg: ServingConfig) -> tuple[int, ...]:
    """The device lengths at which a multi-step draft's S steps store exactly ``C`` slots a row, and one more: where
    a row sized from the context is just filled, and where the first slot passes it, the longest lengths a check of
    the rows lets through (a check off by a step lets the second through: a silent slot past the row)."""
    steps = cfg.speculative_num_steps or 0
    return (cfg.context_len - steps, cfg.context_len - steps + 1)


def json_key(cfg: ServingConfig, data: Mapping[str, Any]) -> str:
    return json.dumps([cfg.to_dict(), dict(data)], sort_keys=True, default=str)


def modes(spec: Mapping[str, Any]) -> list[tuple[Mode, int | None]]:
    """The modes a covering specification's launch runs (at a context past SGLang's default)."""
    cfg = ServingConfig.resolve(context_len=4100, **spec)
    return list(steps(cfg, cfg.launch_runtime))
