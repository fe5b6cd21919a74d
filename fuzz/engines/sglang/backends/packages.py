"""Where SGLang keeps what the checked backends share, per release: the packages their builders moved between, the
builders' files (for a cause's code), and the modules every backend's constructor asks of the model runner."""

from __future__ import annotations

from ..locations import SGLANG_REPO_PATH
from .checked import minor

ATTN = "sglang.srt.layers.attention."
KOPS = "sglang.kernels.ops."
KV_INDEX_TRANSLATOR = "sglang.srt.mem_cache.kv_index_translator"
KV_CACHE_QUANT = "sglang.srt.layers.quantization.fp4_kv_cache_quant_method"
ATTENTION_DIR = SGLANG_REPO_PATH + "sglang/srt/layers/attention/"

PAGE_TABLE_BUILDER = "build_trtllm_mha_page_table"  # FA3's and trtllm_mha's unclamped page-table builder
PAGE_TABLE_FILES = (  # where it lives: kvcache/ to 0.5.18, attention/ after
    SGLANG_REPO_PATH + "sglang/kernels/ops/kvcache/trtllm_mha_page_table.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/attention/trtllm_mha_page_table.py",
)
KV_INDICES_FILES = (  # FlashMLA's and trtllm_mla's builder: layers/attention/triton_ops/ to 0.5.15, kvcache/ to 0.5.22
    SGLANG_REPO_PATH + "sglang/srt/layers/attention/triton_ops/kv_indices.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/kvcache/kv_indices.py",
    SGLANG_REPO_PATH + "sglang/kernels/ops/attention/kv_indices.py",
)


def builders_package(version: str) -> str:
    """The package of the builders' kernels: layers/attention/triton_ops to 0.5.15, kernels/ops/kvcache to 0.5.22,
    kernels/ops/attention from 0.5.23."""
    n = minor(version)
    return ATTN + "triton_ops." if n <= 15 else KOPS + ("attention." if n >= 23 else "kvcache.")


def attention_utils(version: str) -> str:
    return ATTN + "utils" if minor(version) <= 15 else KOPS + "attention.utils"


def pool_hooks(version: str) -> tuple[str, ...]:
    """The hooks a backend asks of the pool: 0.5.17-0.5.18 unified_mem_hooks, 0.5.21+ kv_shard_hooks."""
    n = minor(version)
    return ((ATTN + "unified_mem_hooks",) if n in (17, 18) else ()) + ((ATTN + "kv_shard_hooks",) if n >= 21 else ())


def runner_modules(version: str) -> tuple[str, ...]:
    """The model runner's KVIndexTranslator (0.5.19+) and what its constructor asks (0.5.22+: unified_draft_pool's
    fused_draft_host_allocator, kv_loc_plan's IdSpace)."""
    n = minor(version)
    out: tuple[str, ...] = (KV_INDEX_TRANSLATOR,) if n >= 19 else ()
    return out + (("sglang.srt.mem_cache.unified_draft_pool", "sglang.srt.mem_cache.kv_loc_plan") if n >= 22 else ())
