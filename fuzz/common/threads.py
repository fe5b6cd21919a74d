"""One torch thread: for the whole process (a command, a test worker), or for the duration of a block.

The tensors here are small (a pool of a few rows, a step's batch under
triton's interpreter) or swept in blocks; a second torch thread only
spin-waits, and on a shared machine (a CI runner, parallel test workers, a
command's ``--jobs`` workers) its spinning makes the work several times
slower.  The program's parallelism is its processes, never torch's threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


def one_torch_thread_per_process() -> None:
    """Torch runs on one thread in this process from now on (imports torch: call it where torch is needed)."""
    import torch

    torch.set_num_threads(1)


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch runs on one thread inside the block (a library entry point: its caller's setting is restored)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
