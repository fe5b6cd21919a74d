"""One torch thread for the duration of a block.

The tensors here are small (a pool of a few rows) or swept in blocks; a
second torch thread only spin-waits, and on a shared machine (a CI runner,
parallel test workers) its spinning makes the work several times slower.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
