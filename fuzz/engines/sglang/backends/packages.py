"""Where SGLang keeps what the checked backends share: the builders' files in each package they moved between (for a
cause's code), and the modules the runtime reads beside them.  Which modules a release's builders run from is that
release's record's (``records``: ``attention_modules``)."""

from __future__ import annotations

from ..locations import SGLANG_REPO_PATH

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
