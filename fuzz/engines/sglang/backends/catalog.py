"""The checked backends (``CheckedBackend``, one module each), and what the engine, the runtime and the launch
lines look up in them."""

from __future__ import annotations

from allocator_model.page_tables import AttentionBackend, Mode

from ..graph_tables import GraphTable
from ..records import record
from . import fa3, flashinfer, flashinfer_mla, flashmla, triton, trtllm_mha, trtllm_mla
from .checked import CheckedBackend, GraphBackend

CHECKED: dict[AttentionBackend, CheckedBackend] = {
    b.backend: b
    for b in (
        fa3.BACKEND,
        trtllm_mha.BACKEND,
        flashmla.BACKEND,
        trtllm_mla.BACKEND,
        triton.BACKEND,
        flashinfer.BACKEND,
        flashinfer_mla.BACKEND,
    )
}
GRAPH_TABLES: dict[str, GraphTable] = {b.table.name: b.table for b in CHECKED.values()}
GRAPH_BACKENDS: dict[AttentionBackend, GraphBackend] = {k: b.builders for k, b in CHECKED.items()}
FA3, TRTLLM_MHA, FLASHMLA, TRTLLM_MLA, TRITON, FLASHINFER, FLASHINFER_MLA = (
    fa3.BACKEND.table,
    trtllm_mha.BACKEND.table,
    flashmla.BACKEND.table,
    trtllm_mla.BACKEND.table,
    triton.BACKEND.table,
    flashinfer.BACKEND.table,
    flashinfer_mla.BACKEND.table,
)
FA3_PAGE_TABLE = FA3.name
# The backends that serve MLA models only: a launch line on them names an MLA model.
MLA_BACKENDS = frozenset(b.backend.value for b in CHECKED.values() if b.builders.mla)
# The ``--attention-backend`` a launch line on a backend's table names (FlashInfer MLA's: flashinfer, on an MLA model).
FLAGS: dict[str, str] = {b.backend.value: b.backend.flag for b in CHECKED.values()}
# The GPU a launch line on a backend names for its kernels.
HARDWARE: dict[str, str] = {b.backend.value: b.hardware for b in CHECKED.values()}
# What a launch line on a backend notes of reaching its table's rows.
LAUNCH_NOTES: dict[str, str] = {b.backend.value: b.launch_note for b in CHECKED.values() if b.launch_note}


# The DSA indexer's key cache (``dsa_index``): a DSA model's pool, served on the backend of its own (its launch line
# names that model and backend).
DSA_INDEX, DSA_BACKEND = "dsa_index_key_cache", "dsa"


def backend_of(table: str | None) -> str | None:
    """The attention backend a launch line on ``table`` names: its builders' (a backend's table), or the backend its
    model is served with (the DSA indexer's key cache); None: another table."""
    if table == DSA_INDEX:
        return DSA_BACKEND
    spec = GRAPH_TABLES.get(table or "")
    return spec.backend.value if spec is not None else None


def modules_of(version: str) -> dict[AttentionBackend, tuple[str, ...]]:
    """The modules executed for each backend's page tables in release ``version``, dotted, the backend's own first:
    its record's ``attention_modules`` (``CheckedBackend.imports``, followed in the release's wheel)."""
    found = record(version)["attention_modules"]
    return {k: tuple(found[k.value]) for k in CHECKED}


def modes_of(version: str, backend: AttentionBackend) -> frozenset[Mode]:
    """The modes ``backend``'s own builders of its table run in release ``version``: every one, but the draft extend
    where the release's draft-extend factory returns no backend of it (its record's ``no_draft_extend``); the draft
    decode alone for a table of the draft's steps."""
    refused = backend.value in record(version)["no_draft_extend"]
    own = frozenset(Mode) - {Mode.DRAFT_EXTEND} if refused else frozenset(Mode)
    return own & {Mode.DRAFT_DECODE} if CHECKED[backend].table.draft_steps_only else own
