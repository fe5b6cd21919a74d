"""The stand-ins of the attention backends' loader (``attention``): the write path's (``standins.StandIns``) and
the names the backends take that the write path never does, each scoped to the module SGLang defines it in.

* ``ForwardMode``, ``AttentionArch``: SGLang's own enums, sliced from the tree (the backends branch on them);
* ``msgspec.Struct``: ``standins.MsgspecStruct`` (the translator's and the hooks' records are Structs);
* the stand-in hardware, a GPU per backend (``backends.GraphBackend.capability``; ``SM90`` but trtllm_mla's):
  ``get_device_capability()``, the SM probes of ``utils.common`` (``SM_PROBES``) and
  ``runtime_context.get_platform()`` (``Platform``) answer from it; a backend that names the CUDA device for its
  buffers runs its calls on it (``on_the_stand_in_gpu``: the buffers in host memory, an H100's properties);
* ``get_compiler_backend()``: "inductor", what it returns on a CUDA machine [cite: compiler-backend-inductor] (it
  names ``torch.compile``'s backend, and the function is compiled at its first call only:
  ``modules.compile_at_first_call``);
* ``is_flashinfer_available()``: SGLang's own test (``flashinfer_available``);
* ``get_cuda_graph_max_batch_size``: SGLang's own, sliced (``graph_batch_sizes``), its ``require_gathered_buffer``
  False (``no_gathered_buffer``); 0.5.13's ``dp_attention.get_attention_tp_size()``: the published attention TP;
* FA3's: ``get_scheduler_metadata``, ``maybe_create_verify_mask``: None (``no_scheduler_metadata``,
  ``no_verify_mask``);
* trtllm_mha's (a FlashInfer backend): FlashInfer's wrappers (``FlashInferWrapper``), the kernels' workspaces
  (``get_buffer``: ``workspace_buffer``; the counter scratch: ``kernel_owned``), ``DllmConfig`` (``NO_DLLM``),
  and flashinfer's ``_grouped_size_compiled_for_decode_kernels``, absent (``inert.ABSENT``);
* FlashMLA's (its base, FlashInfer's MLA backend, builds FlashInfer's ``BatchMLAPagedAttentionWrapper``):
  ``get_mla_metadata``, its split-KV schedule (``MLAMetadata``, which keeps the lengths it was asked for: the
  length the kernel reads); 0.5.15's DCP layout getters (``sglang.srt.layers.dcp``), the published layout.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..stubs import StandInMissing
from .batch import Strict
from .inert import ABSENT, Inert
from .standins import PROBES, UTILS, UTILS_MODULES, MsgspecStruct, Sliced, StandIns

FORWARD_BATCH_INFO = "sglang/srt/model_executor/forward_batch_info.py"
MODEL_CONFIG = "sglang/srt/configs/model_config.py"
# ``utils.common``'s SM probes: each is ``get_device_sm() // 10`` among its majors, on CUDA at least 11.0 (SM80),
# 12.3 (Ampere, Hopper) or 12.8 (Blackwell).  The stand-in hardware runs CUDA 13 (every release's wheel requires
# ``flashinfer_python[cu13]``), past every minimum, so each answers whether the GPU's major is among its majors.
SM_PROBES: dict[str, tuple[int, ...]] = {
    "is_sm80_supported": (8,),
    "is_ampere_with_cuda_12_3": (8,),
    "is_sm90_supported": (9,),
    "is_hopper_with_cuda_12_3": (9,),
    "is_sm100_supported": (10,),
    "is_sm100_or_sm110_supported": (10, 11),
    "is_sm110_supported": (11,),
    "is_sm120_supported": (12,),
    "is_blackwell_supported": (10, 11, 12),
}
# Where the backends import the PDL probe from: SGLang's JIT kernels' utils, or sgl-kernel's (triton's, under CUDA).
PDL_PROBES = ("sglang.kernels.jit.utils", "sgl_kernel.utils")
# ``runtime_context``'s platform facts (0.5.19+), by the ``utils.common`` probe each is (its ``_PLATFORM_PROBES``).
PLATFORM_FACTS = {
    "is_cuda": "is_cuda",
    "is_hip": "is_hip",
    "is_npu": "is_npu",
    "is_xpu": "is_xpu",
    "is_musa": "is_musa",
    "is_sm90": "is_sm90_supported",
    "is_sm100": "is_sm100_supported",
    "is_sm100_or_sm110": "is_sm100_or_sm110_supported",
    "is_sm110": "is_sm110_supported",
    "is_sm120": "is_sm120_supported",
    "is_blackwell": "is_blackwell_supported",
    "is_hopper_with_cuda_12_3": "is_hopper_with_cuda_12_3",
}
# Where FlashMLA's backend imports ``get_mla_metadata`` from (sgl-kernel's CUDA extension, or SGLang's interface to it).
MLA_METADATA_MODULES = ("sglang.kernels.ops.attention.flash_mla_interface", "sgl_kernel.flash_mla")
FIXUP_ZERO_KV = "sglang.kernels.ops.attention.fixup_zero_kv"
SET_KV_CONCAT = "sglang.kernels.ops.attention.set_mla_kv_concat_q"
FUSED_KV_GATES = ("can_use_set_mla_kv_concat_q", "can_use_set_mla_kv_concat_q_fp8")
# trtllm_mla's helper making trtllm-gen's multi-CTA KV counters (``kernel_owned``), sized by flashinfer's formula
# from the GPU's SMs: the stand-ins' wherever it is named, its own module executed or not (``scratch_helpers``).
COUNTER_SCRATCH = ("sglang.srt.layers.attention.trtllm_mla_backend", "make_persistent_multi_ctas_kv_counter_buffer")
DCP_GETTERS = ("sglang.srt.layers.dcp", "sglang.srt.layers.dcp.comm")
FLASHINFER_WRAPPERS = (
    "BatchPrefillWithRaggedKVCacheWrapper",
    "BatchPrefillWithPagedKVCacheWrapper",
    "BatchDecodeWithPagedKVCacheWrapper",
    "BatchMLAPagedAttentionWrapper",  # FlashInfer's MLA backend's, the base FlashMLA's runs
)


def returning(value: Any) -> Callable[..., Any]:
    """A function answering ``value`` whatever it is asked."""
    return lambda *args, **kwargs: value


def no_scheduler_metadata(**kwargs: Any) -> None:
    """``sgl_kernel.flash_attn.get_scheduler_metadata``: FA3's split-KV schedule, a CUDA kernel.  None: SGLang's own
    path without a precomputed schedule ("unset uses the existing per-layer metadata path"
    [cite: fa3-scheduler-metadata-optional]); the schedule only splits the kernel's work, and no page-table
    builder reads it."""
    return None


def no_verify_mask(**kwargs: Any) -> None:
    """``verify_mask.maybe_create_verify_mask``: the target's tree-mask scratch, D x (C + D) cells, which the backend
    only keeps and hands to the worker (``verify_mask()`` [cite: fa3-verify-mask-handed-out]); no page-table builder
    reads it, so it is not allocated."""
    return None


def sm_probe(name: str, capability: tuple[int, int]) -> bool:
    """An SM probe of ``utils.common`` on a GPU of compute capability ``capability`` (``SM_PROBES``)."""
    return capability[0] in SM_PROBES[name]


def flashinfer_available(standins: StandIns) -> Callable[[], bool]:
    """``utils.is_flashinfer_available()``: SGLang's own test, on the stand-in hardware.  It answers False when the
    case sets ``SGLANG_IS_FLASHINFER_AVAILABLE`` false (read through the sliced ``get_bool_env_var``, default
    "true"), else whether the ``flashinfer`` package is importable and the platform is CUDA: both true on the
    stand-in hardware (a CUDA machine, and every release's wheel requires ``flashinfer_python``).  It decides only
    whether FlashInfer's names are imported (its wrappers, built by the backend, run no page-table builder)."""
    get_bool_env_var = standins.helpers()["get_bool_env_var"]
    return lambda: bool(get_bool_env_var("SGLANG_IS_FLASHINFER_AVAILABLE", default="true"))


def no_gathered_buffer(*args: Any, **kwargs: Any) -> bool:
    """``utils.require_gathered_buffer()``: whether the MLP or the attention input is all-gathered
    (``require_mlp_tp_gather() or require_attn_tp_gather()``).  Each needs DP attention, a MoE all-to-all backend
    or a dense-TP MoE size; the stand-in model is dense, without DP attention: False.  It only aligns the CUDA-graph
    batch sizes (``get_cuda_graph_max_batch_size``)."""
    return False


def graph_batch_sizes(standins: StandIns) -> Sliced:
    """``utils.get_cuda_graph_max_batch_size`` and ``get_cuda_graph_batch_size_alignment`` (0.5.17+), SGLang's own,
    sliced from the tree: two-batch overlap off (published), attention TP and CP from the published parallel layout,
    ``require_gathered_buffer`` answered (``no_gathered_buffer``)."""
    accessors = standins.accessors()
    return Sliced(
        standins.tree,
        UTILS,
        ("get_cuda_graph_batch_size_alignment", "get_cuda_graph_max_batch_size"),
        ceil_align=standins.helpers()["ceil_align"],
        get_exec=accessors["get_exec"],
        get_parallel=accessors["get_parallel"],
        require_gathered_buffer=no_gathered_buffer,
        is_hip=lambda: PROBES["is_hip"],
    )


class Platform:
    """``runtime_context.get_platform()`` (0.5.19+): the machine's facts, each the ``utils.common`` probe SGLang maps
    it to (``PLATFORM_FACTS``), answered on the stand-in hardware: the write path's platform probes
    (``standins.PROBES``), the SM probes (``SM_PROBES``), ``has_flashinfer`` (``flashinfer_available``),
    ``device_sm`` and ``device_capability`` (the GPU's compute capability).  A fact not listed (``has_amx``: the
    host CPU's AMX, unknown) stops the run naming it."""

    def __init__(self, has_flashinfer: Callable[[], bool], capability: tuple[int, int]) -> None:
        self._has_flashinfer = has_flashinfer
        self._capability = capability

    def __getattr__(self, fact: str) -> Any:
        if fact.startswith("__"):
            raise AttributeError(fact)
        probe = PLATFORM_FACTS.get(fact)
        if probe in SM_PROBES:
            return sm_probe(probe, self._capability)
        if probe in PROBES:
            return PROBES[probe]
        if fact == "has_flashinfer":
            return self._has_flashinfer()
        if fact == "device_sm":
            return self._capability[0] * 10 + self._capability[1]
        if fact == "device_capability":
            return self._capability
        raise StandInMissing(f"the attention backend reads get_platform().{fact}, which kvrow-fuzz does not answer")


class FlashInferWrapper:
    """A FlashInfer wrapper (``BatchPrefillWithRaggedKVCacheWrapper``, ``BatchPrefillWithPagedKVCacheWrapper``,
    ``BatchMLAPagedAttentionWrapper``): flashinfer's classes, which plan and launch its CUDA kernels over a
    workspace.  FlashInfer's ``__init__`` builds them and trtllm_mha's backend keeps them; trtllm_mha's graph
    page-table builders (its ``init_cuda_graph_state``, ``init_forward_metadata_out_graph`` / ``_in_graph``) use
    none.  Built with any arguments; any use (a plan, a run, an attribute) stops the run naming it.  The decode
    wrapper's CUDA-graph planning is answered (``flashinfer_standins.DecodeWrapper``, every backend's loader)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise StandInMissing(f"the attention backend uses flashinfer.{type(self).__name__}.{name}, a CUDA kernel's")


def flashinfer_wrapper(name: str) -> type:
    return type(name, (FlashInferWrapper,), {"__module__": "flashinfer"})


class _OnMeta(TorchFunctionMode):
    """Every tensor a factory makes inside the block is made on the meta device (shape and dtype, no storage)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


class _OnTheHost(TorchFunctionMode):
    """A tensor a factory makes on the CUDA device inside the block is made on this machine's (CPU) memory, and
    pinned host memory is plain host memory: the stand-in GPU's memory is the host's (the builders' tensors live
    there, as ``req_to_token`` does)."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        device = kwargs.get("device")
        if device is not None and str(device).startswith("cuda"):
            kwargs["device"] = "cpu"
        if kwargs.get("pin_memory"):
            kwargs["pin_memory"] = False
        return func(*args, **kwargs)


# The stand-in GPU's properties a backend sizes its scratch from: an H100 SXM's 132 SMs (FlashMLA's scheduler
# metadata has one row per SM part; no page-table builder reads it).
SM_COUNT = 132


def device_properties(capability: tuple[int, int]) -> Strict:
    return Strict("device_properties", multi_processor_count=SM_COUNT, major=capability[0], minor=capability[1])


@contextlib.contextmanager
def on_the_stand_in_gpu(capability: tuple[int, int]) -> Iterator[None]:
    """Inside the block: CUDA tensors are made in host memory (``_OnTheHost``) and ``torch.cuda.
    get_device_properties`` / ``get_device_capability`` answer the stand-in GPU's (``device_properties``,
    ``capability``); all as they were after it."""
    before = torch.cuda.get_device_properties, torch.cuda.get_device_capability
    torch.cuda.get_device_properties = lambda device=None: device_properties(capability)  # type: ignore[assignment,return-value]
    torch.cuda.get_device_capability = lambda device=None: capability
    try:
        with _OnTheHost():
            yield
    finally:
        torch.cuda.get_device_properties, torch.cuda.get_device_capability = before  # type: ignore[assignment]


class MLAMetadata:
    """FlashMLA's ``get_mla_metadata(cache_seqlens, num_q_tokens_per_head_k, num_heads_k, ...)``: its split-KV
    schedule over the GPU's SMs, a CUDA kernel's.  Answered with its shape, zeros (no page-table builder reads
    them): ``[num_sm_parts, 8]`` (FlashMLA's legacy scheduler: the SMs split over the K heads and the q tokens'
    64-row blocks) and ``[bs + 1]``.  ``cache_seqlens`` is the length the attention kernel reads of each row
    (the backend schedules over the lengths it then hands the kernel): ``published`` keeps the last call's."""

    def __init__(self) -> None:
        self.published: list[int] = []

    def __call__(
        self, cache_seqlens: Any = None, num_q_tokens_per_head_k: int = 1, num_heads_k: int = 1, *a: Any, **k: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if cache_seqlens is None:
            raise StandInMissing("FlashMLA's get_mla_metadata() without lengths (its sparse schedule) is not answered")
        self.published = [int(x) for x in cache_seqlens.tolist()]
        parts = max(1, SM_COUNT // max(1, num_heads_k) // -(-num_q_tokens_per_head_k // 64))
        bs = int(cache_seqlens.shape[0])
        return torch.zeros((parts, 8), dtype=torch.int32), torch.zeros(bs + 1, dtype=torch.int32)


def workspace_buffer() -> Callable[[str, Callable[[], Any]], Any]:
    """``runtime_context.get_buffer(name, factory)`` (0.5.16+): SGLang's get-or-create of a named persistent buffer
    (``factory()`` once, then the kept one), here per backend's loader, ``factory`` run on the meta device.  Its
    buffers are the kernels' own: FlashInfer's and trtllm_mha's workspaces (hundreds of MiB, scratch of the CUDA
    kernels and their planners), the default KV scale and the native-FP4 output; no page-table builder reads
    them.  On the meta device each has SGLang's shape and dtype and no storage: slicing works as in SGLang, and any
    read of its values raises rather than answer."""
    kept: dict[str, Any] = {}

    def get_buffer(name: str, factory: Callable[[], Any]) -> Any:
        if name not in kept:
            with _OnMeta():
                kept[name] = factory()
        return kept[name]

    return get_buffer


def kernel_owned(name: str) -> Callable[..., Inert]:
    """What a CUDA kernel owns, made by a helper of SGLang's: its persistent scratch
    (``make_persistent_multi_ctas_kv_counter_buffer``: trtllm-gen's multi-CTA KV counters, sized by flashinfer from
    the GPU's SM count), its JIT-built module (``_jit_fixup_module``, compiled ahead of its first call), or whether
    its JIT build succeeds (``can_use_set_mla_kv_concat_q``).  The backend only keeps it for its kernel, or drops it;
    no page-table builder reads it.  Answered as an inert value: kept and passed as SGLang does, any use of it (a
    truth test included) stops the run naming it."""
    return lambda *args, **kwargs: Inert(f"{name}(...) (a CUDA kernel's own)")


# ``dllm.config.DllmConfig``: its ``from_server_args`` gives a config only for a diffusion LM (``--dllm-algorithm``,
# None by default, as here: no dLLM is modeled), else None; the backend reads nothing else of it.
NO_DLLM = Strict("DllmConfig", from_server_args=lambda server_args: None)


class AttentionStandIns:
    """``answer(module, name) -> (found, value)``: these names first, then the write path's (``StandIns.answer``);
    what they answer is recorded in ``standins.answered``.  ``capability``: the stand-in GPU's."""

    def __init__(self, standins: StandIns, capability: tuple[int, int]) -> None:
        self.standins = standins
        enums: dict[str, Any] = dict(IntEnum=enum.IntEnum, Enum=enum.Enum, auto=enum.auto)
        forward_mode = Sliced(standins.tree, FORWARD_BATCH_INFO, ("ForwardMode",), **enums)
        arch = Sliced(standins.tree, MODEL_CONFIG, ("AttentionArch",), **enums)
        has_flashinfer = flashinfer_available(standins)
        batch_sizes = graph_batch_sizes(standins)
        platform = Platform(has_flashinfer, capability)
        utils: dict[str, Callable[[], Any]] = {
            "get_device_capability": partial(returning, capability),
            "get_compiler_backend": partial(returning, "inductor"),
            "is_flashinfer_available": lambda: has_flashinfer,
            "get_cuda_graph_max_batch_size": lambda: batch_sizes["get_cuda_graph_max_batch_size"],
            "require_gathered_buffer": lambda: no_gathered_buffer,
            **{name: partial(returning, sm_probe(name, capability)) for name in SM_PROBES},
        }
        mla, counters = COUNTER_SCRATCH
        # (module, name) -> what makes its value (made at the first import of the name, then kept)
        self._makers: dict[tuple[str, str], Callable[[], Any]] = {
            ("sglang.srt.model_executor.forward_batch_info", "ForwardMode"): lambda: forward_mode["ForwardMode"],
            ("sglang.srt.configs.model_config", "AttentionArch"): lambda: arch["AttentionArch"],
            ("msgspec", "Struct"): lambda: MsgspecStruct,
            ("sgl_kernel.flash_attn", "get_scheduler_metadata"): lambda: no_scheduler_metadata,
            ("sglang.srt.layers.attention.verify_mask", "maybe_create_verify_mask"): lambda: no_verify_mask,
            ("sglang.srt.runtime_context", "get_platform"): partial(returning, platform),
            ("sglang.srt.runtime_context", "get_buffer"): workspace_buffer,
            ("sglang.srt.dllm.config", "DllmConfig"): lambda: NO_DLLM,
            # 0.5.13: attention's TP size, as published (tp // attn_dp // attn_cp [cite: derive-attn-tp-size])
            ("sglang.srt.layers.dp_attention", "get_attention_tp_size"): lambda: self.attn_tp_size,
            # 0.5.15's DCP layout getters (later releases read get_parallel()): the published layout, one rank; where
            # the package is executed (FlashInfer MLA's per-rank lengths), 0.5.15's layout reads ``dcp_enabled`` from
            # its ``comm``
            **{(m, "get_attention_dcp_world_size"): lambda: self.attn_dcp_size for m in DCP_GETTERS},
            **{(m, "dcp_enabled"): lambda: self.dcp_enabled for m in DCP_GETTERS},
            **{(m, "get_attention_dcp_rank"): lambda: lambda: 0 for m in DCP_GETTERS},
            (mla, counters): partial(kernel_owned, f"{mla}.{counters}"),
            # whether the GPU launches kernels with programmatic dependent launch: CUDA, major >= 9
            # [cite: pdl-from-sm90] (trtllm_mla's module reads it at import for its own kernels' launches)
            **{(m, "is_arch_support_pdl"): partial(returning, capability[0] >= 9) for m in PDL_PROBES},
            # 0.5.22+: trtllm_mla's constructor JIT-builds a CUDA kernel's module ahead of its first use, and keeps
            # nothing of it [cite: trtllm-mla-jit-prebuild]
            (FIXUP_ZERO_KV, "_jit_fixup_module"): partial(kernel_owned, f"{FIXUP_ZERO_KV}._jit_fixup_module"),
            # whether trtllm_mla's decode forward fuses its KV write with the query's concat: a JIT build's outcome,
            # kept for the forward (no page-table builder reads it) [cite: trtllm-mla-fused-kv-gate]
            **{(SET_KV_CONCAT, n): partial(kernel_owned, f"{SET_KV_CONCAT}.{n}") for n in FUSED_KV_GATES},
            # absent from flashinfer in the versions the releases pin (flashinfer_python 0.6.12-0.7.2: none in its
            # v0.6.12-v0.6.17 trees nor after): the import fails, should_use_tensor_core takes its GQA rule
            ("flashinfer.decode", "_grouped_size_compiled_for_decode_kernels"): lambda: ABSENT,
            **{(module, "get_mla_metadata"): lambda: self.mla_metadata for module in MLA_METADATA_MODULES},
            **{("flashinfer", name): partial(flashinfer_wrapper, name) for name in FLASHINFER_WRAPPERS},
            **{(module, name): make for module in UTILS_MODULES for name, make in utils.items()},
        }
        self._made: dict[tuple[str, str], Any] = {}
        self.mla_metadata = MLAMetadata()

    def add(self, makers: dict[tuple[str, str], Callable[[], Any]]) -> None:
        """More names answered (a backend's own: ``attention_draft.triton_names``), each made at its first use."""
        self._makers.update(makers)

    def scratch_helpers(self, modules: dict[str, Any]) -> None:
        """Each kernel-scratch helper of an executed module of ``modules`` replaced by the stand-ins' (its size is a
        CUDA library's formula; no page-table builder reads the scratch)."""
        module = modules.get(COUNTER_SCRATCH[0])
        if module is not None and hasattr(module, COUNTER_SCRATCH[1]):
            setattr(module, COUNTER_SCRATCH[1], self.answer(*COUNTER_SCRATCH)[1])

    def attn_tp_size(self) -> int:
        return int(self.standins.context.read("parallel").attn_tp_size)

    def attn_dcp_size(self) -> int:
        return int(self.standins.context.read("parallel").attn_dcp_size)

    def dcp_enabled(self) -> bool:
        return self.attn_dcp_size() > 1

    def answer(self, module: str, name: str) -> tuple[bool, Any]:
        key = (module, name)
        make = self._makers.get(key)
        if make is None:
            return self.standins.answer(module, name)
        if key not in self._made:
            self._made[key] = make()
        self.standins.answered.add(f"{module}.{name}")
        return True, self._made[key]
