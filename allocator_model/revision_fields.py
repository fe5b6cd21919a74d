"""What a ``Revision`` is made of: the enums of its fields, and each field's kind for reading one back from data.

``Revision.to_dict`` writes every field; ``Revision.from_dict`` reads each
with ``field_value`` against ``REVISION_FIELDS`` (a set of algorithm or pool
names, an enum, a flag, text), so a case file rebuilds the exact revision it
was compared with, and anything else is one line naming the field.
"""

from __future__ import annotations

from typing import Any

from fuzz.common.compat import StrEnum

from . import algorithms as algo
from .page_tables import TableWidth
from .pools import KVPool


class Headroom(StrEnum):
    """When the row headroom (``req_to_token_extra_context_len``) covers the decode reserve.

    Covered, it is at least R + page - 1 (R alone where ``Revision.headroom_page_tail`` is off);
    otherwise it is 4 + Dmax only, which a reserve 2 * max(S*K, Dmax) can outgrow.
    """

    ALWAYS = "always"  # spec on, at every page: the page-1 fix (#33579 closed); every run-time shape
    PAGED = "paged"  # only for alloc page > 1 or UNO, sized for the launch shape: upstream 0.5.16 to 0.5.23
    # Only for page > 1 with topk > 1 (the spec v2 tree), sized for the launch shape: upstream 0.5.13 to
    # 0.5.15 (``mem_cache/common.py``: ``page_size > 1 and (speculative_eagle_topk or 1) > 1``
    # [cite: common-headroom]), so a paged topk-1 launch gets 4 + Dmax only.
    TREE = "tree"
    NONE = "none"  # never: 4 + Dmax only, before #26972

    @property
    def every_runtime(self) -> bool:
        """Whether the reserve is sized for every run-time shape (adaptive spec), not only the launch one.

        The reference sizes for every shape a batch may switch to; upstream
        reads the launch configuration's shape.
        """
        return self is Headroom.ALWAYS


class MemoryClamp(StrEnum):
    """The page the scheduler's memory clamp on ``max_new_tokens`` rounds with: capacity - ceil_p(input) - p - 1.

    Every release caps a request's ``max_new_tokens`` so that its paged prompt,
    its outputs and one page fit the KV capacity (a request admitted but never
    schedulable would block the queue); the releases differ in the page p.
    """

    # The allocator's own page P_a (page_size * attn_dcp_size, or page_size for a bare-page kind): 0.5.21+
    # ``mem_cache/allocator/base.py`` ``max_new_tokens_for_memory`` [cite: allocator-memory-clamp], called from
    # ``managers/scheduler.py`` [cite: scheduler-memory-clamp-allocator] with the logical (DCP-wide) capacity.
    ALLOCATOR_PAGE = "allocator-page"
    # The server's page_size, inline in ``managers/scheduler.py``: 0.5.17-0.5.20 with the capacity times the DCP
    # size [cite: scheduler-memory-clamp-dcp]; 0.5.13-0.5.16 with the capacity alone [cite: scheduler-memory-clamp],
    # the per-rank one under DCP, which the model does not separate from the logical capacity.
    SERVER_PAGE = "server-page"


def field_value(name: str, kind: Any, value: Any) -> Any:
    """``value`` as the field ``name`` of kind ``kind`` holds it, or ValueError naming the field."""
    if kind is str:
        if not isinstance(value, str) or len(value) > 2000:
            raise ValueError(f"revision field {name!r} must be text, got {value!r:.80}")
        return value
    if kind == "optional-str":
        return None if value is None else field_value(name, str, value)
    if kind == "optional-int":
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 1 << 20):
            raise ValueError(f"revision field {name!r} must be null or a positive integer, got {value!r:.80}")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"revision field {name!r} must be true or false, got {value!r:.80}")
        return value
    if isinstance(kind, frozenset):  # a set of the values of an enum (or of algorithm names)
        if not isinstance(value, list) or not all(isinstance(v, str) and v in kind for v in value):
            raise ValueError(f"revision field {name!r} must be a list of {sorted(kind)}, got {value!r:.80}")
        members = {str(m): m for m in kind}
        return frozenset(members[v] for v in value)
    try:  # an enum
        return kind(value)
    except ValueError:
        raise ValueError(f"revision field {name!r}: {value!r:.80} is not one of {[m.value for m in kind]}") from None


# What each field of ``Revision`` holds, for ``Revision.from_dict``.
REVISION_FIELDS: dict[str, Any] = {
    "name": str,
    "summary": str,
    "bug": "optional-str",
    "alloc_page_with_dcp": bool,
    "tree_alloc_len": bool,
    "headroom": Headroom,
    "headroom_page_tail": bool,
    "headroom_from_launch_shape": bool,
    "page_aligned_growth": bool,
    "dflash_page_rounded": bool,
    "overlap_counts_in_flight": bool,
    "overlap_drops_finishing": bool,
    "eagle_tree_assert": bool,
    "algorithms": frozenset(algo.ALL),
    "dcp": bool,
    "memory_clamp": MemoryClamp,
    "pools": frozenset(KVPool),
    "unified_spec": frozenset(algo.ALL),
    "narrow_rows": frozenset(KVPool),
    "unified_dcp": bool,
    "unified_dcp_draft_fusion": bool,
    "hisparse_adaptive": bool,
    "page_table_width": TableWidth,
    "fa3_verify_block_tokens": "optional-int",
    "fa3_decode_asserts": bool,
    "trtllm_mha_block_tokens": "optional-int",
    "flashmla_draft_extend": bool,
    "dsa_index_dcp_widened": bool,
}
