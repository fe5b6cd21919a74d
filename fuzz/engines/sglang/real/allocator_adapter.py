"""The release's own allocator class behind the request lifecycle's page-ownership bookkeeping.

``lifecycle`` on a real target whose write path is SGLang's own allocates
and frees through the release's ``PagedTokenToKVPoolAllocator`` (page > 1:
its ``alloc_extend``, the triton ``alloc_extend_kernel`` under the
interpreter) or ``TokenToKVPoolAllocator`` (page 1: its ``alloc``), and its
``free``: which pages a request gets, what a free hands back, the free list
(``free_pages``, ``release_pages``) and ``available_size()`` are SGLang's
own, so a leak, a double free or a corrupt free list is SGLang's.  The
ownership of each page (who was handed it) is the harness's record on top
(``OwnershipAllocator``'s ``page_owner``), which the invariants read.  A
pool whose own allocator class does not load gets the release's paged
allocator at that pool's page (the run says so).
"""

from __future__ import annotations

from typing import Any

import torch

from allocator_model.allocator import FREE, FreeProblem, OwnershipAllocator, Unrunnable, release_owned
from allocator_model.config import ServingConfig


def takes_page(page_size: int) -> bool:
    """Whether the release's allocator runs at ``page_size``: a power of 2, as ``alloc_extend_kernel``'s
    ``tl.arange(0, page_size)`` needs (on a GPU as under the interpreter)."""
    return page_size > 0 and not page_size & (page_size - 1)


class SGLangAllocator(OwnershipAllocator):
    """``OwnershipAllocator``'s interface, its allocation and freeing done by the release's own class."""

    def __init__(self, runtime: Any, cfg: ServingConfig, num_tokens: int, page_size: int) -> None:
        if not takes_page(page_size):
            raise Unrunnable(f"sglang {runtime.version}'s allocator kernel takes power-of-2 pages, not {page_size}")
        super().__init__(num_tokens, page_size)
        self.runtime, self.cfg = runtime, cfg
        self.real = runtime.allocator(cfg, self.num_pages * page_size, page=page_size)

    def _bound(self, what: str) -> Any:
        return self.runtime.bound(self.cfg, self.cfg.launch_runtime, f"{what} on sglang {self.runtime.version}")

    def available_size(self) -> int:
        return int(self.real.available_size())

    def alloc_extend(self, owner: object, prefix_len: int, seq_len: int, last_loc: int | None) -> torch.Tensor | None:
        """Slots for positions [prefix_len, seq_len) from SGLang's allocator; the pages it hands out: ``owner``'s."""
        n = seq_len - prefix_len
        if n <= 0:
            return torch.empty(0, dtype=torch.int64)
        with self._bound("alloc_extend"):
            if self.page_size == 1:
                out = self.real.alloc(n)
            else:
                pre, seq = torch.tensor([prefix_len]), torch.tensor([seq_len])
                last = torch.tensor([-1 if last_loc is None else last_loc])
                out = self.real.alloc_extend(pre, pre, seq, seq, last, n)
        if out is None:
            return None
        out = out.to(torch.int64)
        pages = torch.unique(out // self.page_size).tolist()
        fresh = [p for p in pages if p not in self.page_owner]
        self.page_owner.update(dict.fromkeys(fresh, owner))
        if fresh:
            self.page_owner_t[fresh] = int(owner)  # type: ignore[call-overload]
        return out

    def free(self, slots: torch.Tensor, owner: object) -> list[FreeProblem]:
        """What SGLang's ``free`` does with ``slots`` (page granular), and who the harness says held them."""
        problems: list[FreeProblem] = []
        if slots.numel():
            freed, problems = release_owned(self.page_owner, slots, self.page_size, owner)
            if freed:
                self.page_owner_t[freed] = FREE
            real = slots[slots // self.page_size > 0].to(torch.int64)  # page 0 is padding, never handed out
            if real.numel():
                with self._bound("free"):
                    self.real.free(real)
        self.problems.extend(problems)
        return problems

    def free_page_list(self) -> list[int]:
        """SGLang's own free list: ``free_pages`` then ``release_pages`` where the class keeps them."""
        out: list[int] = []
        for name in ("free_pages", "release_pages"):
            pages = self.real.__dict__.get(name)
            if isinstance(pages, torch.Tensor):
                out += pages.tolist()
        return out

    def never_used_pages(self) -> range:
        return range(0)  # SGLang's free list holds the never-used pages too
