"""Regimes: the configuration class a failure belongs to, most specific cause first.

A bug group is a property and a regime (``write-within-row/dcp>1`` is the
seed bug).  ``regime`` classifies one configuration, ``regime_codes`` many
at once (its tensor twin, registered in ``allocator_model.twins``), and
``moved_regime`` is the one rule that keeps ``dcp>1`` for DCP's own
failures: a DCP case whose DCP-1 counterpart fails too is grouped by the
counterpart's regime (used by the campaigns one case at a time and by the
proof a block at a time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from fuzz.common.compat import StrEnum

from . import algorithms as algo
from .config import ServingConfig
from .numeric import Int, where

if TYPE_CHECKING:
    from .launch_grid import LaunchGrid


class Regime(StrEnum):
    """The configuration class a failure belongs to, most specific cause first (see ``regime``)."""

    ALLOC_PAGE_1 = "alloc-page-1"
    DCP = "dcp>1"
    TREE = "tree"
    ADAPTIVE = "adaptive"
    DFLASH = "dflash"
    PAGED = "paged"


REGIMES: tuple[Regime, ...] = tuple(Regime)
DCP_CODE = REGIMES.index(Regime.DCP)


def regime(cfg: ServingConfig, alloc_page: int) -> Regime:
    """The regime of a configuration whose allocator hands out pages of ``alloc_page`` slots.

    Most specific cause first: the token allocator (page 1), then DCP, the
    spec v2 tree (topk > 1 with draft KV), adaptive spec, DFLASH/DSPARK, and
    any other paged allocator.  ``regime_codes`` below is its tensor twin;
    ``tests/test_twins.py`` holds them equal.
    """
    a = cfg.speculative_algorithm
    if alloc_page == 1:
        return Regime.ALLOC_PAGE_1
    if cfg.attn_dcp_size > 1:
        return Regime.DCP
    if a is not None and cfg.topk > 1 and algo.has_draft_kv(a):
        return Regime.TREE
    if cfg.speculative_adaptive:
        return Regime.ADAPTIVE
    if a in algo.DFLASH_FAMILY:
        return Regime.DFLASH
    return Regime.PAGED


def regime_codes(g: LaunchGrid, config: torch.Tensor, alloc_page: torch.Tensor) -> torch.Tensor:
    """``regime`` of many configurations at once: its tensor twin, as indices into ``REGIMES``.

    ``config`` indexes the launch configurations of ``g`` (one algorithm);
    ``alloc_page`` is each one's allocator page.  The same order of causes
    as the scalar ``regime`` (the twin test holds them equal on every
    configuration of prove's ``tiny`` space).
    """
    a = g.algorithm
    code = torch.full_like(config, REGIMES.index(Regime.DFLASH if a in algo.DFLASH_FAMILY else Regime.PAGED))
    code = torch.where(g.adaptive[config], REGIMES.index(Regime.ADAPTIVE), code)
    if a is not None and algo.has_draft_kv(a):
        code = torch.where(g.topk[config] > 1, REGIMES.index(Regime.TREE), code)
    code = torch.where(g.attn_dcp_size[config] > 1, REGIMES.index(Regime.DCP), code)
    return torch.where(alloc_page == 1, REGIMES.index(Regime.ALLOC_PAGE_1), code)


def moved_regime(code: Int, counterpart: Int, counterpart_fails: bool | torch.Tensor) -> Int:
    """The regime code a failure is grouped by: ``dcp>1`` only when DCP is its cause.

    ``code`` is the case's own regime code, ``counterpart`` the code of the
    same case with attn_dcp_size 1, ``counterpart_fails`` whether that case
    breaks the same property.  Works on ints and on tensors alike.
    """
    return where((code == DCP_CODE) & counterpart_fails, counterpart, code)
