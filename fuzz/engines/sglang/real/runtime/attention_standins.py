"""The stand-ins of the attention backends' loader (``attention``): the write path's (``standins.StandIns``) and
the few names FA3's backend takes that the write path never does, each scoped to the module SGLang defines it in.

* ``ForwardMode``, ``AttentionArch``: SGLang's own enums, sliced from the tree (the backend branches on them);
* ``msgspec.Struct``: ``standins.MsgspecStruct`` (the translator's and the hooks' records are Structs);
* ``get_device_capability()``: ``DEVICE_CAPABILITY``;
* ``get_compiler_backend()``: "inductor", what it returns on a CUDA machine [cite: compiler-backend-inductor] (it
  names ``torch.compile``'s backend, and the function is compiled at its first call only:
  ``modules.compile_at_first_call``);
* ``get_scheduler_metadata``, ``maybe_create_verify_mask``: None (``no_scheduler_metadata``, ``no_verify_mask``).
"""

from __future__ import annotations

import enum
from typing import Any

from .standins import UTILS_MODULES, MsgspecStruct, Sliced, StandIns

FORWARD_BATCH_INFO = "sglang/srt/model_executor/forward_batch_info.py"
MODEL_CONFIG = "sglang/srt/configs/model_config.py"
# The GPU of the stand-in hardware: SM90 (an H100), where FA3 runs (SGLang asserts SM80 without MLA, or SM90, when it
# builds the backend [cite: fa3-requires-sm80-or-sm90]).
DEVICE_CAPABILITY = (9, 0)


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


class AttentionStandIns:
    """``answer(module, name) -> (found, value)``: these names first, then the write path's (``StandIns.answer``);
    what they answer is recorded in ``standins.answered``."""

    def __init__(self, standins: StandIns) -> None:
        self.standins = standins
        enums: dict[str, Any] = dict(IntEnum=enum.IntEnum, Enum=enum.Enum, auto=enum.auto)
        self._forward_mode = Sliced(standins.tree, FORWARD_BATCH_INFO, ("ForwardMode",), **enums)
        self._arch = Sliced(standins.tree, MODEL_CONFIG, ("AttentionArch",), **enums)

    def answer(self, module: str, name: str) -> tuple[bool, Any]:
        found, value = self._answer(module, name)
        if not found:
            return self.standins.answer(module, name)
        self.standins.answered.add(f"{module}.{name}")
        return True, value

    def _answer(self, module: str, name: str) -> tuple[bool, Any]:
        if module == "sglang.srt.model_executor.forward_batch_info" and name == "ForwardMode":
            return True, self._forward_mode["ForwardMode"]
        if module == "sglang.srt.configs.model_config" and name == "AttentionArch":
            return True, self._arch["AttentionArch"]
        if module in UTILS_MODULES and name == "get_device_capability":
            return True, lambda *a, **k: DEVICE_CAPABILITY
        if module in UTILS_MODULES and name == "get_compiler_backend":
            return True, lambda *a, **k: "inductor"
        if module == "msgspec" and name == "Struct":
            return True, MsgspecStruct
        if module == "sgl_kernel.flash_attn" and name == "get_scheduler_metadata":
            return True, no_scheduler_metadata
        if module == "sglang.srt.layers.attention.verify_mask" and name == "maybe_create_verify_mask":
            return True, no_verify_mask
        return False, None
