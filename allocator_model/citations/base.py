"""The ``Cite`` record and the wheel members the tables cite (see ``allocator_model.citations``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Cite:
    """One fact's place in one release: the ``nth`` line of ``member`` that holds ``text``; with ``whole``, the
    statement (a ``def``, a class, a multi-line call) that starts on that line.  Never a line number: the check
    finds the line in the release's wheel, so a line that moves keeps its citation and a text that changes fails it.
    """

    release: str  # "0.5.23" (a modeled release) or "main"
    member: str  # the path inside the wheel: "sglang/srt/mem_cache/kv_cache_configurator.py"
    text: str  # a short exact substring of the cited line
    nth: int = 1  # the how-manyth line holding ``text`` (1: the first)
    whole: bool = False  # the cite is the whole statement starting there, not the line alone

    def __str__(self) -> str:
        which = f" (line {self.nth} holding it)" if self.nth > 1 else ""
        return f"{self.release} {self.member}: {self.text!r}{which}" + (" (the statement)" if self.whole else "")


_SRT = "sglang/srt/"
_COMMON = _SRT + "mem_cache/common.py"
_SIZING = _SRT + "mem_cache/allocation_sizing.py"
_CONFIGURATOR = _SRT + "mem_cache/kv_cache_configurator.py"
_MIXIN = _SRT + "model_executor/model_runner_kv_cache_mixin.py"
_SERVER_ARGS = _SRT + "server_args.py"
_KV_CACHE_HOOK = _SRT + "arg_groups/kv_cache_hook.py"
_SPEC_HOOK = _SRT + "arg_groups/speculative_hook.py"
_OVERRIDES = _SRT + "arg_groups/overrides.py"
_SCHEDULER = _SRT + "managers/scheduler.py"
_ALLOCATOR_BASE = _SRT + "mem_cache/allocator/base.py"
_EAGLE_UTILS = _SRT + "speculative/eagle_utils.py"
_EAGLE_INFO_V2 = _SRT + "speculative/eagle_info_v2.py"
_DFLASH_INFO_V2 = _SRT + "speculative/dflash_info_v2.py"
_SPEC_INFO = _SRT + "speculative/spec_info.py"
_NGRAM_INFO = _SRT + "speculative/ngram_info.py"
_DFLASH_INFO = _SRT + "speculative/dflash_info.py"
_UNO_INFO = _SRT + "speculative/uno_info.py"
_SPEC_UTILS = _SRT + "speculative/spec_utils.py"
_ALLOCATION = _SRT + "mem_cache/allocation.py"
_MEMORY_POOL = _SRT + "mem_cache/memory_pool.py"
_UNIFIED_POOL = _SRT + "mem_cache/unified_memory_pool.py"
_PAGED = _SRT + "mem_cache/allocator/paged.py"
_TOKEN = _SRT + "mem_cache/allocator/token.py"
_MODEL_RUNNER = _SRT + "model_executor/model_runner.py"
_SCHEDULE_BATCH = _SRT + "managers/schedule_batch.py"
_CHECKER = _SRT + "managers/scheduler_components/invariant_checker.py"
_RUNTIME_CONTEXT = _SRT + "runtime_context.py"
_UTILS = _SRT + "utils/common.py"
_CUDA = _SRT + "platforms/cuda.py"

_PAGED_CLAMP = "paged_input_len = -(-input_len // self.page_size)"
_UNIFIED_EXTRA = "non-shared path's extra_max_context_len computation"
_EAGLE_TREE_ASSERT_V2 = "(get_spec().speculative_eagle_topk or 1) > 1:"
