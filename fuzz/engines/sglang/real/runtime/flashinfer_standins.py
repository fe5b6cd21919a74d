"""FlashInfer's decode wrapper as the draft's step backends use it under CUDA graph: the buffers it is built over,
and its planner's bookkeeping of them, nothing of its kernels.

SGLang builds each draft step's ``BatchDecodeWithPagedKVCacheWrapper(..., use_cuda_graph=True,
paged_kv_indptr_buffer=..., paged_kv_indices_buffer=..., paged_kv_last_page_len_buffer=...)`` over that step's rows
(its row of the multi-step backend's ``cuda_graph_kv_indices`` and of ``kv_indptr``); the decode kernel reads those
buffers.  FlashInfer's planner (flashinfer_python's ``flashinfer/decode.py``, the versions the releases pin): ``plan``
(``begin_forward``) in CUDA-graph mode refuses a batch size other than the one the buffers were built for and indices
longer than the indices buffer (``ValueError``), then copies the indptr, last-page lengths and indices it is handed
into its buffers; ``fast_decode_plan``, which SGLang installs for the replays, makes the same checks and elides those
copies (the buffers are the ones SGLang wrote).  At construction it checks the indptr buffer is one longer than the
last-page lengths'.  Both then schedule the kernel's work on the host, which writes no table: not run here.

The stand-in keeps exactly that bookkeeping.  What it cannot answer faithfully it refuses (``StandInMissing``): a
plan of a wrapper built without CUDA graph, a ``fast_decode_plan`` handed indices or indptr other than its own
buffers (FlashInfer's kernel would read the buffers, not what it was handed), and any other use (a run, an attribute
of FlashInfer's own).
"""

from __future__ import annotations

from typing import Any

import torch

from ..stubs import StandInMissing
from .attention_standins import FlashInferWrapper

DECODE_WRAPPER = "BatchDecodeWithPagedKVCacheWrapper"


class DecodeWrapper(FlashInferWrapper):
    """``flashinfer.BatchDecodeWithPagedKVCacheWrapper``: its CUDA-graph buffers and its planner's bookkeeping."""

    def __init__(
        self,
        *args: Any,
        use_cuda_graph: bool = False,
        paged_kv_indptr_buffer: torch.Tensor | None = None,
        paged_kv_indices_buffer: torch.Tensor | None = None,
        paged_kv_last_page_len_buffer: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> None:
        self.is_cuda_graph_enabled = bool(use_cuda_graph)
        self._paged_kv_indptr_buf = paged_kv_indptr_buffer
        self._paged_kv_indices_buf = paged_kv_indices_buffer
        self._paged_kv_last_page_len_buf = paged_kv_last_page_len_buffer
        self.plans: list[tuple[int, int]] = []  # (batch size, indices) of each plan, in order
        if self.is_cuda_graph_enabled:  # FlashInfer's own checks of the buffers, at construction
            indptr, indices, last = self._buffers()
            if len(indptr) != len(last) + 1:
                raise ValueError("The size of paged_kv_indptr_buffer should be batch_size + 1")

    def _buffers(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        bufs = (self._paged_kv_indptr_buf, self._paged_kv_indices_buf, self._paged_kv_last_page_len_buf)
        if not self.is_cuda_graph_enabled:
            raise StandInMissing(f"flashinfer.{DECODE_WRAPPER}.plan without CUDA-graph buffers: FlashInfer's own")
        if not all(isinstance(b, torch.Tensor) for b in bufs):
            raise ValueError("paged_kv_indptr_buffer, _indices_buffer and _last_page_len_buffer are torch.Tensors")
        return bufs  # type: ignore[return-value]

    def checked(self, indices: torch.Tensor, last_page_len: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Its buffers, after FlashInfer's checks of a plan in CUDA-graph mode: the batch size it was built for, and
        indices its buffer holds (``ValueError``, as FlashInfer raises)."""
        indptr_buf, indices_buf, last_buf = self._buffers()
        if len(last_page_len) != len(last_buf):
            raise ValueError(
                f"The batch size should be fixed in cudagraph mode ({len(last_page_len)} != {len(last_buf)})"
            )
        if len(indices) > len(indices_buf):
            raise ValueError("The size of indices should be less than or equal to the allocated buffer")
        return indptr_buf, indices_buf, last_buf

    def plan(self, indptr: torch.Tensor, indices: torch.Tensor, last_page_len: torch.Tensor, *a: Any, **k: Any) -> None:
        """FlashInfer's ``plan`` in CUDA-graph mode, its buffers' part (module docstring)."""
        indptr_buf, indices_buf, last_buf = self.checked(indices, last_page_len)
        batch_size = len(last_page_len)
        indptr_buf.copy_(indptr)
        last_buf.copy_(last_page_len)
        indices_buf[: len(indices)].copy_(indices)
        self.plans.append((batch_size, len(indices)))

    begin_forward = plan


def fast_decode_plan(
    wrapper: Any, indptr: torch.Tensor, indices: torch.Tensor, last_page_len: torch.Tensor, *a: Any, **k: Any
) -> None:
    """``flashinfer.fast_decode_plan``: the replay's plan, its copies elided (module docstring)."""
    if not isinstance(wrapper, DecodeWrapper):
        raise StandInMissing("flashinfer.fast_decode_plan of a wrapper the stand-ins did not build")
    indptr_buf, indices_buf, _ = wrapper.checked(indices, last_page_len)
    if indices.data_ptr() != indices_buf.data_ptr() or indptr.data_ptr() != indptr_buf.data_ptr():
        raise StandInMissing("flashinfer.fast_decode_plan handed indices or indptr other than its buffers")
    wrapper.plans.append((len(last_page_len), len(indices)))


class MLAWrapper(FlashInferWrapper):
    """``flashinfer.BatchMLAPagedAttentionWrapper`` under CUDA graph: its buffers, its planner's copies into them and
    the host lengths its kernel is planned over (``planned``), nothing of its kernels.

    FlashInfer's ``plan`` in CUDA-graph mode (flashinfer_python 0.6.12-0.6.18's ``mla/_core.py``, 0.7.x's
    ``mla/_batch_mla``: the versions the releases pin) copies the indptrs, the lengths and the indices it is handed
    into the buffers the wrapper was built over, and schedules the kernel's work on the host from the host copies of
    ``kv_indptr`` and ``kv_len_arr``: the kernel reads each request's ``kv_len`` entries of the indices buffer from its
    ``kv_indptr`` (the device indptr and length buffers are written, never read).  Indices longer than their buffer
    raise (``ValueError``).  A source of another shape than its buffer is refused (``StandInMissing``): 0.7.x raises,
    0.6.x's copy broadcasts what it can, and SGLang hands both the buffers' own shapes.  0.7.x also refuses lengths
    that disagree with the indptr; the releases pinning it (0.5.22+) plan the draft's steps with lengths taken from
    the indptr, which always agree, so it is not made here.  The planned module SGLang's
    ``fast_mla_decode_plan`` calls on a replay (``_cached_module.plan`` over the host indptr and lengths) records them
    the same way.  Any other use (a plan without CUDA graph, a run, FlashInfer's own attribute) is refused.
    """

    def __init__(
        self,
        float_workspace_buffer: torch.Tensor | None = None,
        use_cuda_graph: bool = False,
        qo_indptr: torch.Tensor | None = None,
        kv_indptr: torch.Tensor | None = None,
        kv_indices: torch.Tensor | None = None,
        kv_len_arr: torch.Tensor | None = None,
        backend: str = "auto",
    ) -> None:
        self._float_workspace_buffer = float_workspace_buffer
        self._use_cuda_graph = bool(use_cuda_graph)
        self._qo_indptr_buf, self._kv_indptr_buf = qo_indptr, kv_indptr
        self._kv_indices_buf, self._kv_len_arr_buf = kv_indices, kv_len_arr
        self.planned: tuple[list[int], list[int]] | None = None  # (kv_indptr, kv_len) on the host, the last plan's

    def plan(
        self,
        qo_indptr: torch.Tensor,
        kv_indptr: torch.Tensor,
        kv_indices: torch.Tensor,
        kv_len_arr: torch.Tensor,
        *args: Any,
        **kwargs: Any,
    ) -> None:
        """FlashInfer's ``plan`` in CUDA-graph mode, its buffers' part and the host lengths (class docstring)."""
        bufs = (self._qo_indptr_buf, self._kv_indptr_buf, self._kv_indices_buf, self._kv_len_arr_buf)
        if not self._use_cuda_graph:
            raise StandInMissing(f"flashinfer.{MLA_WRAPPER}.plan without CUDA-graph buffers: FlashInfer's own")
        if not all(isinstance(b, torch.Tensor) for b in bufs):
            raise ValueError("the CUDA-graph plan needs its qo_indptr, kv_indptr, kv_indices and kv_len_arr buffers")
        qo_buf, indptr_buf, indices_buf, len_buf = bufs
        for name, src, buf in (("qo_indptr", qo_indptr, qo_buf), ("kv_indptr", kv_indptr, indptr_buf),
                               ("kv_len_arr", kv_len_arr, len_buf)):  # fmt: skip
            if tuple(src.shape) != tuple(buf.shape):  # type: ignore[union-attr]
                shapes = f"{tuple(src.shape)}, its CUDA-graph buffer {tuple(buf.shape)}"  # type: ignore[union-attr]
                raise StandInMissing(f"flashinfer.{MLA_WRAPPER}.plan: {name} has shape {shapes} (versions differ)")
        if len(kv_indices) > len(indices_buf):  # type: ignore[arg-type]
            raise ValueError("The size of kv_indices should be less than or equal to the allocated buffer")
        qo_buf.copy_(qo_indptr)  # type: ignore[union-attr]
        indptr_buf.copy_(kv_indptr)  # type: ignore[union-attr]
        indices_buf[: len(kv_indices)].copy_(kv_indices)  # type: ignore[index]
        len_buf.copy_(kv_len_arr)  # type: ignore[union-attr]
        self._int_workspace_buffer = torch.empty(0, dtype=torch.uint8)
        self._pin_memory_int_workspace_buffer = torch.empty(0, dtype=torch.uint8)
        self._cached_module = _PlannedMLA(self)
        self._cached_module.plan(None, None, None, qo_indptr, kv_indptr, kv_len_arr)


class _PlannedMLA:
    """The planned module of an ``MLAWrapper`` (``_cached_module``): its ``plan`` schedules the kernel over the host
    indptr and lengths it is handed, recorded as the wrapper's ``planned``."""

    def __init__(self, wrapper: MLAWrapper) -> None:
        self.wrapper = wrapper

    def plan(
        self, float_ws: Any, int_ws: Any, pin_ws: Any, qo_indptr: Any, kv_indptr: Any, kv_len_arr: Any, *a: Any
    ) -> None:
        qo = torch.as_tensor(qo_indptr).tolist()
        if any(b < a for a, b in zip(qo, qo[1:], strict=False)):  # FlashInfer's host scheduler's own check
            raise ValueError("qo_indptr should be non-decreasing")
        self.wrapper.planned = (torch.as_tensor(kv_indptr).tolist(), torch.as_tensor(kv_len_arr).tolist())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise StandInMissing(f"flashinfer's planned MLA module's {name}: a CUDA kernel's")


MLA_WRAPPER = "BatchMLAPagedAttentionWrapper"


def flashinfer_names() -> dict[tuple[str, str], Any]:
    """(module, name) -> what makes its value, for ``AttentionStandIns.add``."""
    return {
        ("flashinfer", DECODE_WRAPPER): lambda: DecodeWrapper,
        ("flashinfer", "fast_decode_plan"): lambda: fast_decode_plan,
        ("flashinfer", MLA_WRAPPER): lambda: MLAWrapper,
    }
