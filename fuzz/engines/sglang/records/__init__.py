"""One record per SGLang release: the facts this engine reads from that release's code, generated from its wheel.

``<release>.json`` beside this module is written by ``generate.py`` (``python -m
fuzz.engines.sglang.records.generate WHEEL...``) from the release's wheel and checked against it
(``--check``; the suite does so on the pinned wheels, the network tier on every release).  Nothing here is
typed by hand: a line number of SGLang's code lives in a record, never in this project's code.

Sections (one per kind of fact):

    req              where the release's ``Req`` (``managers/schedule_batch.py``) keeps what the write path
                     reads (``runtime.request.Layout``): the classes' and ``__init__``'s lines, each modeled
                     attribute's first assignment, ``ReqKvInfo``'s fields (a slots dataclass) and properties
    where            the line of each ``Where`` of the release table (``runtime.releases``): a definition, or
                     a guard statement inside one
    after_decode     each field of the request ``ScheduleBatch.prepare_for_decode`` increments after the decode
                     allocation, in its order, with the line of its ``+=`` (what the write path adds after
                     ``alloc_for_decode``): the fields are read from the wheel, not listed by hand
    pool_allocators  each non-standard kind of pool's allocator class the release ships: the module of
                     ``mem_cache/allocator/`` that defines it and its line (a kind it does not ship is absent)
    eagle_preclaims_bonus  whether the EAGLE decode entry takes the bonus slot in prepare (the accept then
                     takes it back): a version branch made a fact of the release
    attention_modules  each checked attention backend's modules its builders run from: its own, then the
                     modules along the import of each name its builders need (``CheckedBackend.imports``) to the
                     module defining it, then along the model runner's imports of what its stand-in builds
    no_draft_extend  the checked backends whose draft-extend factory (``speculative/draft_utils.py``) returns no
                     backend: their own builders run no draft extend in the release
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

RECORDS_DIR = Path(__file__).resolve().parent

# The lengths a request stand-in carries (``runtime.request.make_request`` sets them in this order), and with
# them every name of SGLang's request the stand-in models: the record says where each is, in each release.
LENS = (
    "req_pool_idx",
    "kv_committed_len",
    "kv_allocated_len",
    "cache_protected_len",
    "mamba_pool_idx",
    "swa_evicted_seqlen",
    "swa_evict_floor",
    "component_evicted_seqlens",
)
REQ_ATTRIBUTES = frozenset({"rid", "kv", "decode_batch_idx", "sampling_params", *LENS})
KV_PROPERTIES = frozenset({"holds_kv", "holds_mamba"})
SCHEMA = "kvrow-fuzz/sglang-release-record"
SCHEMA_VERSION = 3  # 2: pool_allocators name each class's module; 3: attention_modules, no_draft_extend


def _version_key(release: str) -> tuple[int, ...]:
    return tuple(int(p) for p in release.split("."))


@functools.cache
def releases() -> tuple[str, ...]:
    """Every release with a record, oldest first."""
    return tuple(sorted((p.stem for p in RECORDS_DIR.glob("*.json")), key=_version_key))


@functools.cache
def record(release: str) -> dict[str, Any]:
    """The record of ``release`` (a ``KeyError`` naming it where there is none)."""
    path = RECORDS_DIR / f"{release}.json"
    if not path.is_file():
        raise KeyError(f"no release record for sglang {release} (records: {', '.join(releases())})")
    data: dict[str, Any] = json.loads(path.read_text())
    if data.get("schema") != SCHEMA or data.get("schema_version") != SCHEMA_VERSION or data.get("release") != release:
        raise ValueError(f"{path}: not a {SCHEMA} v{SCHEMA_VERSION} record of sglang {release}")
    return data
