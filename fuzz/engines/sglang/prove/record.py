"""What a sweep records of each block: its groups (counted, each with its worst witness) and the min-slack heat.

``attributed`` is the proof's side of the one rule that keeps ``dcp>1``
for DCP's own failures (``allocator_model.regimes.moved_regime``; the
campaigns' side is the verdict pipeline's attribution,
``fuzz.engines.sglang.verdict.ATTRIBUTIONS``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from allocator_model import closed_form as cf
from allocator_model.pools import KVPool, pool_alloc_page
from allocator_model.regimes import REGIMES, moved_regime, regime_codes
from fuzz.findings.kinds import (
    GROWTH_RULE,
    SILENT,
    STALE_READ,
    Outcome,
    Property,
    Signature,
    group_name,
)

from .grid import row_key
from .result import Group, ProveResult
from .witness import Witness, config_witness, witness_finding

# What a write past the row does, by ``closed_form.guard_codes``' index (then drafts' stale reads).
OUTCOMES = tuple(SILENT if guard is None else Outcome.stopped_by(guard.value) for guard in cf.GUARDS) + (STALE_READ,)
STALE = OUTCOMES.index(STALE_READ)


def without_dcp_rows(g: cf.LaunchGrid, rows: cf.DecodeRows) -> torch.Tensor:
    """For each row, the row of the same launch configuration and run-time shape with attn_dcp_size 1 (-1: none).

    The block holds one algorithm at one page size with every DCP size of
    the space, so a configuration's DCP-1 counterpart is a row of it too
    (unless the target raised for it).
    """
    c = rows.config
    keys = row_key(g.num_steps[c], g.topk[c], g.draft_tokens[c], g.candidates[c], rows.num_steps)
    _, key = torch.unique(keys, return_inverse=True)
    single = g.attn_dcp_size[c] == 1
    table = torch.full((int(key.max()) + 1 if len(key) else 0,), -1, dtype=torch.int64)
    table[key[single]] = torch.arange(len(c))[single]
    return table[key]


def attributed(regime: torch.Tensor, counterpart: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """The pipeline's attribution for a block: a DCP row whose DCP-1 counterpart also breaks the property
    takes the counterpart's regime (``dcp>1`` only when DCP is the cause)."""
    other = counterpart.clamp(min=0)
    moved: torch.Tensor = moved_regime(regime, regime[other], (counterpart >= 0) & (counts[other] > 0))
    return moved


def record(
    result: ProveResult,
    regime: torch.Tensor,
    prop: Property,
    counts: torch.Tensor,
    values: torch.Tensor,
    offsets: torch.Tensor,
    witness: Callable[[int], Witness],
    outcomes: torch.Tensor | None = None,
    *,
    kv_pool: KVPool,
) -> None:
    """Rows with ``counts`` > 0 break ``prop``: count them per group, keep each group's worst as its witness.

    A group is a regime on the block's kind of pool, and an outcome (``outcomes`` indexes
    ``OUTCOMES``; None: every row silent).
    """
    bad = counts > 0
    if not bool(bad.any()):
        return
    outcome = torch.zeros_like(regime) if outcomes is None else outcomes
    # The (regime, outcome) pairs present, as one small code each: a bincount, not a sort of the rows.
    present = torch.bincount((regime[bad] * len(OUTCOMES) + outcome[bad]).long(), minlength=1).nonzero().flatten()
    pairs = [divmod(int(k), len(OUTCOMES)) for k in present.tolist()]
    for code, oc in pairs:
        mask = bad & (regime == code) & (outcome == oc)
        sig = Signature(prop, group_name(REGIMES[code].value, kv_pool.variant), OUTCOMES[oc])
        i = int(torch.argmax(torch.where(mask, values, torch.iinfo(cf.INT).min)))
        value = int(values[i])
        grp = result.groups.get(sig)
        if grp is None:
            first_at = int(offsets[mask.nonzero()[0, 0]])
            grp = Group(
                sig, witness_finding(result.target, sig, witness(i), value, first_at), worst=value, first_at=first_at
            )
            result.groups[sig] = grp
        elif grp.worst is None or value > grp.worst:
            grp.worst = value
            grp.witness = witness_finding(result.target, sig, witness(i), value, grp.first_at or 0)
        grp.configurations += int(counts[mask].sum())


def record_heat(result: ProveResult, g: cf.LaunchGrid, rows: cf.DecodeRows, slack: torch.Tensor) -> None:
    """The min slack of the block per attn_dcp_size, into ``result.heat`` at (page_size, attn_dcp_size), and into
    its kind of pool's own heat."""
    dcp = g.attn_dcp_size[rows.config].long()  # an index
    top = torch.iinfo(cf.INT).max
    low = torch.full((int(dcp.max()) + 1,), top, dtype=cf.INT).scatter_reduce(0, dcp, slack, "amin")
    p = int(g.page_size[0])
    for d in (low < top).nonzero().flatten().tolist():
        v = int(low[d])
        result.heat[p, d] = min(v, result.heat.get((p, d), v))
        mine = result.pool_heat.setdefault(g.kv_pool, {})
        mine[p, d] = min(v, mine.get((p, d), v))


def record_configs(
    result: ProveResult, g: cf.LaunchGrid, which: torch.Tensor, prop: Property, errors: dict[int, str] | None = None
) -> None:
    """Whole configurations (every residue, overlap on and off) in one group: raised (per regime), or unproven."""
    if not bool(which.any()):
        return
    i = which.nonzero().flatten()
    page = pool_alloc_page(g.kv_pool, g.page_size[i], g.attn_dcp_size[i])
    regime = regime_codes(g, i, page)
    for code in torch.unique(regime).tolist():
        m = regime == code
        sig = Signature(prop, REGIMES[code].value if prop is Property.SIZING_RAISED else GROWTH_RULE)
        count = 2 * int(page[m].sum())
        result.configurations += count
        grp = result.groups.get(sig)
        if grp is None:
            k = int(i[m.nonzero()[0, 0]])
            error = (errors or {}).get(k)
            grp = Group(sig, witness_finding(result.target, sig, config_witness(g, k, int(page[m][0])), 0, error=error))
            result.groups[sig] = grp
        grp.configurations += count
