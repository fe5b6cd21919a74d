"""The token-to-KV pool allocator, paged at the allocator page P_a, with slot ownership.

``allocator_page_size`` is the DCP branch of SGLang's allocator builder: page
1 without DCP builds the token allocator (P_a = 1); anything else builds the
paged allocator at page_size * attn_dcp_size over attn_dcp_size times more
virtual slots.  The allocator hands out whole pages; a slot is owned by the
request that owns its page.  Page 0 is reserved, so slot 0 (the value of an
unwritten ``req_to_token`` column) is never handed out.

``OwnershipAllocator`` adds the page ownership as a tensor, for the request
lifecycle's checks over whole rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .config import ServingConfig
from .numeric import ceil_to_page
from .pools import pool_alloc_page

FREE = -1  # page_owner_t of a page nobody owns


def allocator_page_size(cfg: ServingConfig) -> int:
    """P_a, the page the allocator is built with: page_size * attn_dcp_size (1 for the token allocator).

    Bare-page kinds (SWA, HiSparse, the unified SWA pools) keep page_size
    under DCP (``pools.pool_alloc_page``).  What sizing believes is the
    allocator's page is a revision toggle (``ModelSizing.alloc_page_size``);
    this is the page the allocator really hands out, whatever sizing believes.
    """
    return pool_alloc_page(cfg.kv_pool, cfg.page_size, cfg.attn_dcp_size)


@dataclass
class FreeProblem:
    """A page freed that the freeing request did not own."""

    page: int
    freed_by: object
    owner: object | None  # None: already free (double free)

    def describe(self) -> str:
        what = "already free (double free)" if self.owner is None else f"owned by request {self.owner}"
        return f"page {self.page} freed by request {self.freed_by} but {what}"


def release_owned(
    page_owner: dict[int, object], slots: torch.Tensor, page_size: int, owner: object
) -> tuple[list[int], list[FreeProblem]]:
    """The pages ``owner`` frees with ``slots`` (page granular; page 0, an unwritten column, is never one), each
    dropped from ``page_owner``, and every page among them it did not hold (another's, or already free).

    Invariant: a page leaves the book only through its holder's free; a foreign page is reported and handed
    back all the same (the allocator frees what it is given), a page already free is only reported.
    """
    freed: list[int] = []
    problems: list[FreeProblem] = []
    for page in torch.unique(slots.to(torch.int64) // page_size).tolist():
        if page == 0:
            continue
        holder = page_owner.get(page)
        if holder != owner:
            problems.append(FreeProblem(page, owner, holder))
            if holder is None:
                continue
        del page_owner[page]
        freed.append(page)
    return freed, problems


class Unrunnable(Exception):
    """The deployment cannot run on the target's own allocator (a page its kernels take no such size of)."""


class TokenToKVPoolAllocator:
    """``num_tokens`` usable slots in pages 1..num_tokens // page_size (page 0 is padding on top)."""

    def __init__(self, num_tokens: int, page_size: int) -> None:
        self.page_size = page_size
        self.num_pages = num_tokens // page_size
        self._next_fresh = 1  # pages [next_fresh, num_pages] were never handed out
        self._free_pages: list[int] = []  # pages handed back, reused last-in-first-out
        self.page_owner: dict[int, object] = {}
        self.problems: list[FreeProblem] = []

    # -- sizes --------------------------------------------------------------

    def available_size(self) -> int:
        return (self.num_pages - self._next_fresh + 1 + len(self._free_pages)) * self.page_size

    def page_of(self, slot: int) -> int:
        return slot // self.page_size

    def owner_of(self, slot: int) -> object | None:
        return self.page_owner.get(slot // self.page_size)

    def owned_pages(self, owner: object) -> list[int]:
        return sorted(p for p, o in self.page_owner.items() if o == owner)

    # -- alloc / free -------------------------------------------------------

    def _take_pages(self, n: int, owner: object) -> Sequence[int] | None:
        """n pages: handed-back ones first (last in, first out), then fresh ones in order.

        All fresh: a ``range`` (one run of pages, whose slots are one run too).
        """
        if n * self.page_size > self.available_size():
            return None
        reused = min(n, len(self._free_pages))
        fresh = range(self._next_fresh, self._next_fresh + n - reused)
        self._next_fresh += len(fresh)
        pages: Sequence[int] = fresh
        if reused:
            pages = self._free_pages[len(self._free_pages) - reused :][::-1] + list(fresh)
            del self._free_pages[len(self._free_pages) - reused :]
        self.page_owner.update(dict.fromkeys(pages, owner))
        return pages

    def alloc_extend(self, owner: object, prefix_len: int, seq_len: int, last_loc: int | None) -> torch.Tensor | None:
        """Slots for token positions [prefix_len, seq_len) of one request; None when out of memory.

        Like SGLang's paged alloc_extend: the rest of the page holding
        ``last_loc`` (the slot of position prefix_len - 1) first, then
        ceil(seq_len / P) - ceil(prefix_len / P) whole new pages.
        """
        p = self.page_size
        n = seq_len - prefix_len
        if n <= 0:
            return torch.empty(0, dtype=torch.int64)
        tail = 0
        if prefix_len % p and last_loc is not None:
            tail = min(ceil_to_page(prefix_len, p) - prefix_len, n)
        new_pages = (ceil_to_page(seq_len, p) - ceil_to_page(prefix_len, p)) // p
        pages = self._take_pages(new_pages, owner)
        if pages is None:
            return None
        parts = []
        if tail and last_loc is not None:
            parts.append(torch.arange(last_loc + 1, last_loc + 1 + tail, dtype=torch.int64))
        if isinstance(pages, range) and pages:  # one run of fresh pages: one run of slots
            parts.append(torch.arange(pages[0] * p, pages[0] * p + n - tail, dtype=torch.int64))
        elif pages:
            base = torch.tensor(list(pages), dtype=torch.int64).repeat_interleave(p) * p
            parts.append((base + torch.arange(p, dtype=torch.int64).repeat(len(pages)))[: n - tail])
        return torch.cat(parts)

    def free(self, slots: torch.Tensor, owner: object) -> list[FreeProblem]:
        """Free the pages holding ``slots`` (page granular, like the paged allocator's free)."""
        freed, problems = release_owned(self.page_owner, slots, self.page_size, owner)
        self._free_pages.extend(freed)
        self.problems.extend(problems)
        return problems


class OwnershipAllocator(TokenToKVPoolAllocator):
    """The paged allocator plus ``page_owner_t``: its page ownership as a tensor (FREE: no owner).

    The tensor is rebuilt from the allocator's own ``page_owner`` after every
    take and free, so checks over whole rows stay vectorised without keeping
    a second, independent notion of who owns what.  Owners are request ids.
    """

    def __init__(self, num_tokens: int, page_size: int) -> None:
        super().__init__(num_tokens, page_size)
        self.page_owner_t = torch.full((self.num_pages + 1,), FREE, dtype=torch.int64)

    def _take_pages(self, n: int, owner: object) -> Sequence[int] | None:
        assert isinstance(owner, int), f"owners of page_owner_t are request ids, got {owner!r}"
        pages = super()._take_pages(n, owner)
        if isinstance(pages, range) and pages:
            self.page_owner_t[pages.start : pages.stop] = owner
        elif pages:
            self.page_owner_t[list(pages)] = owner
        return pages

    def free(self, slots: torch.Tensor, owner: object) -> list[FreeProblem]:
        problems = super().free(slots, owner)
        pages = [p for p in torch.unique(slots.to(torch.int64) // self.page_size).tolist() if 0 < p <= self.num_pages]
        if pages:
            self.page_owner_t[pages] = torch.tensor([self.page_owner.get(p, FREE) for p in pages], dtype=torch.int64)
        return problems

    def size(self) -> int:
        """Every usable slot (page 0 is padding)."""
        return self.num_pages * self.page_size

    def free_page_list(self) -> list[int]:
        """The pages handed back and not yet reused, in reuse order (last first)."""
        return list(self._free_pages)

    def never_used_pages(self) -> range:
        return range(self._next_fresh, self.num_pages + 1)

    def pages_of(self, owner: int) -> list[int]:
        pages: list[int] = (self.page_owner_t == owner).nonzero().flatten().tolist()
        return pages

    def slots_of_pages(self, pages: list[int]) -> list[int]:
        return [p * self.page_size + i for p in pages for i in range(self.page_size)]
