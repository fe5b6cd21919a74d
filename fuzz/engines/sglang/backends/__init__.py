"""The attention backends: those whose tables this engine checks, one module each (``fa3``, ``trtllm_mha``,
``flashmla``, ``trtllm_mla``, ``triton``, ``flashinfer``, ``flashinfer_mla``: a ``CheckedBackend`` holding its table,
its builders, the names they need SGLang's code of (each release's modules for them, and the modes they run, are its
record's) and its hardware), and every other backend a release registers, listed with its reason (``registry``)."""

from __future__ import annotations

from .catalog import (
    CHECKED,
    DSA_BACKEND,
    DSA_INDEX,
    FA3,
    FA3_PAGE_TABLE,
    FLAGS,
    FLASHINFER,
    FLASHINFER_MLA,
    FLASHMLA,
    GRAPH_BACKENDS,
    GRAPH_TABLES,
    HARDWARE,
    LAUNCH_NOTES,
    MLA_BACKENDS,
    TRITON,
    TRTLLM_MHA,
    TRTLLM_MLA,
    backend_of,
    modes_of,
    modules_of,
)
from .checked import SM90, SM100, CheckedBackend, GraphBackend
from .packages import KV_CACHE_QUANT, KV_INDEX_TRANSLATOR
from .registry import REGISTRY, UNCHECKED, checked, registered, table_text, unaccounted

__all__ = [
    "CHECKED",
    "DSA_BACKEND",
    "DSA_INDEX",
    "FA3",
    "FA3_PAGE_TABLE",
    "FLASHINFER",
    "FLASHINFER_MLA",
    "FLAGS",
    "FLASHMLA",
    "GRAPH_BACKENDS",
    "GRAPH_TABLES",
    "HARDWARE",
    "LAUNCH_NOTES",
    "KV_CACHE_QUANT",
    "KV_INDEX_TRANSLATOR",
    "MLA_BACKENDS",
    "REGISTRY",
    "SM90",
    "SM100",
    "TRITON",
    "TRTLLM_MHA",
    "TRTLLM_MLA",
    "UNCHECKED",
    "CheckedBackend",
    "GraphBackend",
    "backend_of",
    "checked",
    "modes_of",
    "modules_of",
    "registered",
    "table_text",
    "unaccounted",
]
