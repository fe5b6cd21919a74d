"""The model as a sizing surface: each entry of ``surface`` answered by the formulas of ``sizing``, the model's
write path (``scenario``) and allocator (``allocator``), for one modeled revision.

Apart from ``sizing`` (numbers only) because it reaches the write path and the
allocator, which are built on the sizing functions: nothing in that stack
imports it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .allocator import OwnershipAllocator
from .config import ServingConfig, SpecRuntime
from .pools import pool_alloc_page, unified_row_extra
from .revisions import Revision
from .scenario import DecodeScenario, ScenarioRun, run_scenario
from .sizing import (
    alloc_len_per_decode,
    alloc_page_size,
    alloc_reserve_per_decode,
    headroom_covers_reserve,
    page_aligned_decode_alloc_lens,
    req_to_token_extra_context_len,
)
from .surface import Entry, Surface


class ModelSizing(Surface):
    """The sizing functions of one modeled revision, read against a config: the model's formula of each
    entry of the sizing surface (``allocator_model.surface``, which declares them and serves them as a
    ``Surface``).  Every function takes the launch config, and the per-batch ones the run-time spec shape.
    """

    def __init__(self, revision: Revision):
        self.revision = revision

    def call(self, entry: Entry, *args: Any) -> Any:
        return entry.model(self, *args)

    def allocator_page_size(self, cfg: ServingConfig) -> int:
        """P_a, the page the allocator of ``cfg.kv_pool`` hands out (``pools.pool_alloc_page``).

        What the allocator is built with, not what sizing believes
        (``alloc_page_size``): the decode path rounds with this one.
        """
        return pool_alloc_page(cfg.kv_pool, cfg.page_size, cfg.attn_dcp_size)

    def alloc_page_size(self, cfg: ServingConfig) -> int:
        if self.revision.alloc_page_with_dcp:
            return alloc_page_size(cfg.page_size, cfg.attn_dcp_size)
        return cfg.page_size

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return alloc_len_per_decode(
            cfg.speculative_algorithm,
            rt.num_steps if rt else 0,
            cfg.topk,
            cfg.max_speculative_num_draft_tokens or 0,
            self.alloc_page_size(cfg),
            tree_footprint=self.revision.tree_alloc_len,
        )

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return alloc_reserve_per_decode(self.alloc_len_per_decode(cfg, rt))

    def page_aligned_decode_alloc_lens(
        self, lens: Sequence[tuple[int, int]], reserve: int, page: int
    ) -> tuple[list[int], list[int], int]:
        return page_aligned_decode_alloc_lens(lens, reserve, page, aligned=self.revision.page_aligned_growth)

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        page = self.alloc_page_size(cfg)
        rev = self.revision
        headroom = rev.headroom
        dmax = cfg.max_speculative_num_draft_tokens or 0
        if rev.headroom_from_launch_shape:  # planted: the launch shape's D stands for Dmax
            dmax = cfg.speculative_num_draft_tokens or 0
            reserves = [
                alloc_reserve_per_decode(
                    alloc_len_per_decode(
                        cfg.speculative_algorithm,
                        cfg.launch_runtime.num_steps if cfg.launch_runtime else 0,
                        cfg.topk,
                        dmax,
                        page,
                        tree_footprint=rev.tree_alloc_len,
                    )
                )
            ]
        else:
            # The reference sizes for every run-time shape; upstream reads the launch one.
            runtimes = cfg.runtimes() if headroom.every_runtime else [cfg.launch_runtime]
            reserves = [self.alloc_reserve_per_decode(cfg, rt) for rt in runtimes]
        covered = headroom_covers_reserve(headroom, cfg.speculative_algorithm, page, cfg.topk)
        return req_to_token_extra_context_len(dmax, reserves, page, covered=covered, page_tail=rev.headroom_page_tail)

    def req_to_token_row_width(self, cfg: ServingConfig) -> int:
        """W = C + extra (never page-aligned up to 0.5.23); C + 4 + D for a kind this revision builds narrow.

        Upstream's unified builders size ``extra_max_context_len = 4 + D``
        (``pools``; the launch D, not Dmax); the reference sizes every kind
        with the headroom.
        """
        if cfg.kv_pool in self.revision.narrow_rows:
            return cfg.context_len + unified_row_extra(cfg.speculative_num_draft_tokens or 0)
        return cfg.context_len + self.req_to_token_extra_context_len(cfg)

    def decode_steps(self, scenario: DecodeScenario) -> ScenarioRun:
        """The model's write path over a scenario (``scenario.run_scenario``)."""
        return run_scenario(scenario, self, self.revision)

    def kv_allocator(self, cfg: ServingConfig, num_tokens: int, page_size: int) -> OwnershipAllocator:
        """The model's token-to-KV allocator, with its page-ownership bookkeeping."""
        return OwnershipAllocator(num_tokens, page_size)

    def row_guard_fires(self, cfg: ServingConfig, max_alloc_len: int, row_width: int) -> bool:
        """No modeled revision has a sizing-module guard (SGLang main's ``assert_alloc_within_row_width``)."""
        return False
