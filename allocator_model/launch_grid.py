"""Launch configurations as tensors: one element per configuration of one speculative algorithm.

The grid ``closed_form`` sweeps and ``fuzz.prove`` builds: SGLang's argument
names per field, adaptive candidate step sets as bitmasks, and the
configurations ``server_args`` accepts (``valid_mask``, the tensor twin of
``config._validate`` through ``config.valid_launch_mask``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import torch
from torch import Tensor

from .config import MAX_CANDIDATE_BITS, chain_draft_tokens, valid_launch_mask
from .pools import KVPool

# int32 halves the memory traffic; every value here stays far below 2**31 (pages <= 4096 x reserves).
INT = torch.int32


@dataclass
class LaunchGrid:
    """Launch configurations of one speculative algorithm, one element per configuration.

    Fields use SGLang's names; unused ones (no speculation) hold 0.
    ``candidates`` is the adaptive candidate step set as a bitmask (0: not adaptive).
    """

    algorithm: str | None
    page_size: Tensor
    attn_dcp_size: Tensor
    num_steps: Tensor
    topk: Tensor
    draft_tokens: Tensor
    candidates: Tensor
    kv_pool: KVPool = field(default=KVPool.STANDARD, kw_only=True)  # one deployment kind per grid

    def __len__(self) -> int:
        return int(self.page_size.numel())

    @property
    def adaptive(self) -> Tensor:
        return self.candidates != 0

    def select(self, mask_or_index: Tensor) -> LaunchGrid:
        columns = [getattr(self, f.name)[mask_or_index] for f in fields(self)[1:] if f.name != "kv_pool"]
        return LaunchGrid(self.algorithm, *columns, kv_pool=self.kv_pool)

    @property
    def max_draft_tokens(self) -> Tensor:
        """Dmax: D, or for adaptive spec the largest candidate's D (``ServingConfig.max_speculative_num_draft_tokens``).

        A twin over the bitmask encoding, registered in ``allocator_model.twins``.
        """
        if not bool(self.candidates.any()):
            return self.draft_tokens
        return torch.where(self.adaptive, chain_draft_tokens(highest_bit(self.candidates)), self.draft_tokens)

    def config_kwargs(self, i: int) -> dict[str, Any]:
        """SGLang arguments of configuration i (context length and overlap left to the caller)."""
        kw: dict[str, Any] = dict(page_size=int(self.page_size[i]), attn_dcp_size=int(self.attn_dcp_size[i]))
        if self.kv_pool is not KVPool.STANDARD:
            kw["kv_pool"] = self.kv_pool.value
        if self.algorithm is None:
            return kw
        kw.update(
            speculative_algorithm=self.algorithm,
            speculative_num_steps=int(self.num_steps[i]),
            speculative_eagle_topk=int(self.topk[i]),
            speculative_num_draft_tokens=int(self.draft_tokens[i]),
        )
        cand = int(self.candidates[i])
        if cand:
            kw.update(speculative_adaptive=True, speculative_adaptive_candidate_steps=bits(cand))
        return kw


def bits(mask: int) -> tuple[int, ...]:
    """The candidate steps of a bitmask."""
    return tuple(s for s in range(MAX_CANDIDATE_BITS) if mask >> s & 1)


def bitmask(steps: Iterable[int]) -> int:
    """The bitmask of a set of candidate steps."""
    return sum(1 << s for s in set(steps))


def highest_bit(mask: Tensor) -> Tensor:
    """Index of the highest set bit (-1 for 0): ``int.bit_length() - 1`` per element.

    ``frexp`` writes x = m * 2**e with 0.5 <= m < 1, so e = bit_length(x),
    exactly for every mask below 2**53 (float64 holds it exactly; frexp(0) = (0, 0)).
    """
    if mask.numel() and int(mask.max()) >= 1 << 53:
        raise ValueError("highest_bit: a mask of 2**53 or more does not fit float64 exactly")
    return (torch.frexp(mask.double()).exponent - 1).to(mask.dtype)


def valid_mask(g: LaunchGrid) -> Tensor:
    """server_args validation (``config._validate``, through its twin ``config.valid_launch_mask``) as a mask."""
    return valid_launch_mask(
        g.algorithm, g.page_size, g.attn_dcp_size, g.num_steps, g.topk, g.draft_tokens, g.candidates, g.kv_pool
    )
