"""Historical revisions: the reference with one known bug switched back on.

Like SGLang's ``SGLANG_DEBUG_REVERT_PR`` toggles, each revision is a small, named difference from the reference.
The reference is SAFE for every valid configuration (page size 1 included, which no upstream release is yet).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from . import algorithms as algo
from .page_tables import KV_INDICES_BACKENDS, AttentionBackend, GraphSizing, Mode, TableWidth, kv_indices_sizing
from .pools import UNIFIED_SPEC, KVPool
from .revision_fields import REVISION_FIELDS, Headroom, MemoryClamp, field_value

__all__ = ["Headroom", "MemoryClamp", "Revision", "REFERENCE", "REVISIONS", "RELEASE_REVISIONS", "get_revision"]

if TYPE_CHECKING:
    from .config import ServingConfig
    from .launch_grid import LaunchGrid


@dataclass(frozen=True)
class Revision:
    name: str
    summary: str
    bug: str | None = None  # catalog id of the bug this revision carries, if one
    # -- the sizing module ----------------------------------------------------
    # alloc page = page_size * attn_dcp_size (#35424); False: page_size alone.
    alloc_page_with_dcp: bool = True
    # L has the page-duplicated tree term (#26972).
    tree_alloc_len: bool = True
    # When the row headroom covers R + page - 1:
    #   ALWAYS (spec on; the page-1 fix), PAGED (page > 1 or UNO, upstream),
    #   NONE (never: 4 + Dmax only, before #26972).
    headroom: Headroom = Headroom.ALWAYS
    # The covered headroom adds page - 1 to the reserve, the most page-rounded growth adds (0.5.16+,
    # ``allocation_sizing.py`` [cite: headroom-page-tail]); False: the reserve alone (0.5.13-0.5.15, whose growth
    # is exact).
    headroom_page_tail: bool = True
    # The headroom sized from the launch shape and its draft count D, not every run-time shape
    # and Dmax (a planted bug: adaptive spec launches below its largest candidate).
    headroom_from_launch_shape: bool = False
    # nxt rounds up to whole allocator pages (#31616).
    page_aligned_growth: bool = True
    # -- the decode path and the scheduler --------------------------------------
    # DFLASH/DSPARK round their reserve to the allocator page (#35265, 0.5.19).
    dflash_page_rounded: bool = True
    # Overlap mode: prepare-for-decode counts the in-flight bonus token in kv_committed_len (0.5.13-0.5.14
    # pre-claim it); from 0.5.15 it reads the honest, stale value (``scheduler.committed_len_at_alloc``).
    overlap_counts_in_flight: bool = False
    # Overlap mode drops requests the in-flight batch finishes by length (0.5.19).
    overlap_drops_finishing: bool = True
    # EAGLE's prepare-for-decode asserts the allocation end fits the row at allocator page > 1 and topk > 1
    # (added with #26972; 0.5.13 to 0.5.23 [cite: eagle-tree-row-assert]).
    eagle_tree_assert: bool = True
    # Algorithms this revision knows (UNO from 0.5.20).
    algorithms: frozenset[str] = frozenset(algo.ALL)
    # Decode context parallelism exists (``--dcp-size``, 0.5.15+); False: a launch with
    # attn_dcp_size > 1 is refused (``refuses``), as the release has no such argument.
    dcp: bool = True
    # The page the max_new_tokens memory clamp rounds with (``MemoryClamp``): the allocator's (0.5.21+), or the
    # server's page_size (0.5.13-0.5.20).
    memory_clamp: MemoryClamp = MemoryClamp.ALLOCATOR_PAGE
    # -- the deployments (``allocator_model.pools``) ----------------------------
    # The KV pool kinds this revision builds (unified Mamba + SWA from 0.5.19).
    pools: frozenset[KVPool] = frozenset(KVPool)
    # Algorithms unified memory accepts (0.5.22+: DSPARK, EAGLE, EAGLE3, DFLASH; 0.5.18-0.5.21: DSPARK;
    # 0.5.16-0.5.17: none).
    unified_spec: frozenset[str] = UNIFIED_SPEC
    # Kinds whose builder sizes the row C + 4 + D instead of C + extra (upstream's unified builders);
    # the reference sizes every row with the headroom.
    narrow_rows: frozenset[KVPool] = frozenset()
    # Unified memory takes DCP > 1 (0.5.20+, MLA models [cite: unified-dcp-mla-only]); 0.5.18-0.5.19 require
    # dcp_size 1 [cite: unified-dcp-refused].
    unified_dcp: bool = True
    # A Mamba host under unified memory boots EAGLE/EAGLE3/DFLASH only with the draft's KV fused into its pages,
    # and DCP > 1 declines that fusion, so those algorithms refuse DCP there (0.5.22+
    # [cite: unified-mamba-draft-must-fuse] [cite: dcp-declines-draft-fusion]); DSPARK keeps a private draft pool and
    # boots (``tests/test_boot_rules.py`` holds this to the wheels).
    unified_dcp_draft_fusion: bool = True
    # HiSparse takes adaptive speculation (0.5.21 and before); 0.5.22+ refuse it: its swap state is sized
    # statically [cite: hisparse-refuses-adaptive].
    hisparse_adaptive: bool = False
    # -- the attention backends' CUDA-graph page tables (``page_tables``), the DSA indexer's key cache ------------
    # Sized from the req_to_token row they copy (the reference) or the context (upstream; FlashMLA: ``graph_sizing``)
    page_table_width: TableWidth = TableWidth.ROW
    # FA3's verify builder masks its writes by length alone over blocks of this many tokens (0.5.15-0.5.21); None:
    # it clamps them at the width.  Its decode builders assert the pages fit first (0.5.13-0.5.14): a step raises.
    fa3_verify_block_tokens: int | None = None
    fa3_decode_asserts: bool = False
    # trtllm_mha's builders mask every mode's writes by length over blocks of this many tokens (0.5.14); None: they
    # clamp at the width.  FlashMLA builds the draft's extend from 0.5.16 [cite: flashmla-no-draft-extend].
    trtllm_mha_block_tokens: int | None = None
    flashmla_draft_extend: bool = True
    dsa_index_dcp_widened: bool = True  # it holds the DCP allocator's locations (0.5.22+); False: the pool's alone

    def __post_init__(self) -> None:
        object.__setattr__(self, "headroom", Headroom(self.headroom))  # a plain "paged" too

    def but(self, name: str, summary: str, **changes: Any) -> Revision:
        return dataclasses.replace(self, name=name, summary=summary, **changes)

    # -- as data: a case file records the revision it was compared with, whole ----------------------

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON data (sets as sorted lists of their values): ``from_dict`` rebuilds it exactly."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = sorted(str(v) for v in value) if isinstance(value, frozenset) else value
        return out

    @classmethod
    def from_dict(cls, data: object) -> Revision:
        """The revision ``to_dict`` wrote; ValueError (one line) for anything else: a missing or unknown field,
        a value of the wrong type, an unknown algorithm or kind of pool."""
        if not isinstance(data, dict):
            raise ValueError(f"a revision is a JSON object of its fields, got {type(data).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        data = {**LATER_FIELDS, **data}
        unknown = sorted(set(data) - set(names))
        missing = [n for n in names if n not in data]
        if unknown or missing:
            raise ValueError(
                f"revision fields: unknown {unknown}, missing {missing}" if unknown else f"missing {missing}"
            )
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            values[f.name] = field_value(f.name, REVISION_FIELDS[f.name], data[f.name])
        return cls(**values)

    def graph_sizing(self, backend: AttentionBackend) -> GraphSizing:
        """What this revision's CUDA-graph builders of ``backend`` do (its fields, as the twin takes them)."""
        if backend in KV_INDICES_BACKENDS:
            return kv_indices_sizing(backend, self.page_table_width, self.flashmla_draft_extend)
        if backend.fills_every_draft_step:  # its multi-step draft's kv_indices
            return GraphSizing.draft_kv_indices(self.page_table_width, backend)
        if backend is AttentionBackend.TRTLLM_MHA:
            every = frozenset(Mode) if self.trtllm_mha_block_tokens else frozenset()
            return GraphSizing(self.page_table_width, self.trtllm_mha_block_tokens, every, backend=backend)
        block = self.fa3_verify_block_tokens
        asserts = frozenset({Mode.DECODE, Mode.DRAFT_DECODE}) if self.fa3_decode_asserts else frozenset()
        return GraphSizing(self.page_table_width, block, frozenset({Mode.TARGET_VERIFY} if block else ()), asserts)

    def pool_algorithms(self, kind: KVPool) -> frozenset[str]:
        """The algorithms a launch on ``kind`` may use in this revision (unified memory accepts fewer)."""
        return self.algorithms & self.unified_spec if kind.unified else self.algorithms

    def pool_algorithm_map(self) -> dict[KVPool, frozenset[str]]:
        """Every kind this revision builds, with its algorithms (what the strategies draw from)."""
        return {k: self.pool_algorithms(k) for k in KVPool if k in self.pools}

    def refuses(self, cfg: ServingConfig) -> str | None:
        """Why this revision cannot run ``cfg`` (a kind or an algorithm it does not have); None: it can.

        Also a DCP size before ``--dcp-size`` existed (``dcp``).  ``launch_mask`` is its tensor twin.
        """
        if cfg.kv_pool not in self.pools:
            return f"{self.name} has no kv_pool {cfg.kv_pool.value}"
        a = cfg.speculative_algorithm
        if a is not None and a not in self.pool_algorithms(cfg.kv_pool):
            where = f" on kv_pool {cfg.kv_pool.value}" if cfg.kv_pool.unified else ""
            return f"{self.name} does not run speculative_algorithm {a}{where}"
        if not self.dcp and cfg.attn_dcp_size != 1:
            return f"{self.name} has no decode context parallelism (no --dcp-size): attn_dcp_size must be 1"
        if cfg.kv_pool.unified and not self.unified_dcp and cfg.attn_dcp_size != 1:
            return f"{self.name} refuses attn_dcp_size {cfg.attn_dcp_size} with unified memory"
        if a is not None and cfg.speculative_adaptive and cfg.kv_pool is KVPool.HISPARSE and not self.hisparse_adaptive:
            return f"{self.name} refuses --speculative-adaptive with --enable-hisparse"
        if cfg.attn_dcp_size != 1 and self.fusion_refuses(cfg.kv_pool, a):
            return (
                f"{self.name} refuses --enable-unified-memory + {a} on a mamba-hybrid model under --dcp-size "
                f"{cfg.attn_dcp_size}: the draft's KV must fuse into the target's pages, and DCP declines fusion"
            )
        return None

    def fusion_refuses(self, kind: KVPool, algorithm: str | None) -> bool:
        """Whether DCP > 1 is refused for ``algorithm`` on ``kind`` because its draft cannot fuse (see the field)."""
        return self.unified_dcp_draft_fusion and kind is KVPool.UNIFIED_MAMBA and algorithm in algo.FUSED_DRAFT

    def launch_mask(self, g: LaunchGrid) -> Tensor:
        """``refuses`` over a grid of launch configurations (one kind, one algorithm): True where it runs."""
        a = g.algorithm
        runs = g.kv_pool in self.pools and (a is None or a in self.pool_algorithms(g.kv_pool))
        ok = torch.full_like(g.attn_dcp_size, runs, dtype=torch.bool)
        if not self.dcp or (g.kv_pool.unified and not self.unified_dcp) or self.fusion_refuses(g.kv_pool, a):
            ok &= g.attn_dcp_size == 1
        if a is not None and g.kv_pool is KVPool.HISPARSE and not self.hisparse_adaptive:
            ok &= ~g.adaptive
        return ok


# Fields added after case files first recorded their revision, with the value those files' revisions had (the tables'
# fields came with the tables: a case file before them is a req_to_token case, judged on none).
LATER_FIELDS: dict[str, Any] = {
    "hisparse_adaptive": True,
    "page_table_width": "row",
    "fa3_verify_block_tokens": None,
    "fa3_decode_asserts": False,
    "trtllm_mha_block_tokens": None,
    "flashmla_draft_extend": True,
    "dsa_index_dcp_widened": True,
}

REFERENCE = Revision(
    name="reference",
    summary="all catalogued fixes, plus the page-1 headroom (#33579 closed): safe everywhere",
)

_UNIFIED_MAMBA_ROWS = frozenset({KVPool.UNIFIED_MAMBA, KVPool.UNIFIED_MAMBA_SWA})
_UPSTREAM_0_5_23 = REFERENCE.but(
    "sglang-0.5.23",
    "upstream 0.5.22-0.5.23: headroom covers the reserve only when alloc page > 1 or UNO (#33579 open); "
    "unified Mamba rows C + 4 + D",
    bug="#33579",
    headroom=Headroom.PAGED,
    narrow_rows=_UNIFIED_MAMBA_ROWS,
    page_table_width=TableWidth.CONTEXT,
)
# Where the summary's files say so: [cite: unified-spec-algorithms].
_UPSTREAM_0_5_21 = _UPSTREAM_0_5_23.but(
    "sglang-0.5.21",
    "upstream 0.5.21: as 0.5.23, but unified memory accepts DSPARK only (kv_cache_hook.py)",
    unified_spec=frozenset({algo.DSPARK}),
    unified_dcp_draft_fusion=False,
    hisparse_adaptive=True,
    fa3_verify_block_tokens=4096,
    dsa_index_dcp_widened=False,
)
# Where the summary's files say so: [cite: unified-swa-row-extra] [cite: scheduler-memory-clamp-dcp].
_UPSTREAM_0_5_20 = _UPSTREAM_0_5_21.but(
    "sglang-0.5.20",
    "upstream 0.5.20: as 0.5.21, but the unified SWA rows are C + 4 + D too (configurator), and the "
    "max_new_tokens memory clamp rounds with the server page (scheduler.py)",
    narrow_rows=_UNIFIED_MAMBA_ROWS | {KVPool.UNIFIED_SWA},
    memory_clamp=MemoryClamp.SERVER_PAGE,
)
_UPSTREAM_0_5_19 = _UPSTREAM_0_5_20.but(
    "sglang-0.5.19",
    "upstream 0.5.19: alloc page with dcp, no UNO, unified memory without DCP",
    algorithms=frozenset(algo.ALL) - {algo.UNO},
    unified_dcp=False,
)
_UPSTREAM_0_5_18 = _UPSTREAM_0_5_19.but(
    "sglang-0.5.18",
    "upstream 0.5.18: sizing pages at page_size without dcp (#35424), DFLASH reserve unrounded "
    "(#35265), overlap keeps requests the in-flight batch finishes; no unified Mamba + SWA pool",
    bug="#35424",
    alloc_page_with_dcp=False,
    dflash_page_rounded=False,
    overlap_drops_finishing=False,
    pools=frozenset(KVPool) - {KVPool.UNIFIED_MAMBA_SWA},
)
# Where the summary's files say so: [cite: unified-spec-algorithms].
_UPSTREAM_0_5_16 = _UPSTREAM_0_5_18.but(
    "sglang-0.5.16",
    "upstream 0.5.16-0.5.17: as 0.5.18, but unified memory refuses speculative decoding (server_args.py)",
    unified_spec=frozenset(),
)
_UPSTREAM_0_5_15 = _UPSTREAM_0_5_16.but(
    "sglang-0.5.15",
    "upstream 0.5.15: headroom covers the reserve (no page - 1) only for page > 1 with topk > 1, "
    "decode growth c + R not page-aligned (#31616), sizing pages at page_size without dcp, no DSPARK",
    bug="#31616",
    headroom=Headroom.TREE,
    headroom_page_tail=False,
    page_aligned_growth=False,
    algorithms=frozenset(algo.ALL) - {algo.DSPARK, algo.UNO},
    narrow_rows=frozenset(),
    flashmla_draft_extend=False,
)
"""0.5.14 and 0.5.15 (``mem_cache/common.py``, the same in both [cite: common-sizing-functions]).

* alloc page: ``server_args.page_size`` alone [cite: alloc-page-server-page-size], while the paged allocator
  is built with ``page_size * dcp_size`` (``model_executor/model_runner_kv_cache_mixin.py``)
  [cite: paged-allocator-page-dcp]: #35424.
* L [cite: alloc-len-per-decode]: the tree term for page > 1, topk > 1 and an algorithm with draft KV
  (``has_draft_kv`` [cite: tree-term-condition]), as 0.5.16.
* headroom [cite: common-headroom]: 4 + Dmax, raised to R (no page - 1) only when spec is on,
  page_size > 1 and topk > 1 (``Headroom.TREE``, ``headroom_page_tail`` off).
* growth: ``nxt = max(cur, kv_committed_len + R)``, not page-rounded (0.5.15 ``speculative/eagle_utils.py``,
  0.5.14 ``eagle_info_v2.py`` [cite: eagle-growth-unrounded]); DFLASH ``max(cur, committed + 2 * block)``
  unrounded (``dflash_info_v2.py`` [cite: dflash-growth-unrounded]).
* algorithms: ``SpeculativeAlgorithm`` has no DSPARK or UNO (``speculative/spec_info.py``)
  [cite: spec-algorithms-enum]; every one runs a v2 worker (``spec_info.py`` ``create_worker``).
* pools: unified memory refuses speculative decoding (``server_args.py`` [cite: unified-spec-algorithms]) and
  DCP [cite: unified-dcp-refused], as 0.5.16; no unified Mamba + SWA pool.  The unified builders' rows
  C + 4 + D (``model_executor/model_runner_kv_cache_mixin.py`` [cite: unified-mamba-row-extra]
  [cite: unified-swa-row-extra]) are C + 4 without speculation, the standard row's width then, so no row is
  narrow (``narrow_rows`` empty; 0.5.15 has no ``kv_cache_configurator.py`` to read them from).
* overlap: 0.5.15 reads the honest ``kv_committed_len`` (the bonus is committed in resolve
  [cite: eagle-decode-honest-committed]), 0.5.14 pre-claims it [cite: eagle-v2-preclaims-bonus]
  (``overlap_counts_in_flight``).
"""
_UPSTREAM_0_5_14 = _UPSTREAM_0_5_15.but(
    "sglang-0.5.14",
    "upstream 0.5.14: as 0.5.15, before decode context parallelism (no --dcp-size) and unified memory; "
    "overlap pre-claims the in-flight token",
    dcp=False,
    overlap_counts_in_flight=True,
    pools=frozenset({KVPool.STANDARD, KVPool.SWA, KVPool.HISPARSE}),
    fa3_verify_block_tokens=None,
    fa3_decode_asserts=True,
    trtllm_mha_block_tokens=4096,
)
"""0.5.14: 0.5.15's sizing; no ``dcp_size`` server argument (``server_args.py`` has none; it first appears in 0.5.15
[cite: dcp-size-argument]), so a launch with attn_dcp_size > 1 does not exist; no unified memory pool
(``model_executor/model_runner_kv_cache_mixin.py`` builds none; 0.5.15's does [cite: unified-mamba-row-extra])."""
_UPSTREAM_0_5_13 = _UPSTREAM_0_5_14.but(
    "sglang-0.5.13",
    "upstream 0.5.13: as 0.5.14; NGRAM, DFLASH and FROZEN_KV_MTP run v1 workers (not modeled)",
    algorithms=frozenset({algo.EAGLE, algo.EAGLE3, algo.STANDALONE}),
    trtllm_mha_block_tokens=None,
)
"""0.5.13 (``mem_cache/common.py``, the first release with all three sizing functions [cite: common-sizing-functions]).

* L [cite: alloc-len-per-decode]: the tree term whenever page > 1 and topk > 1, NGRAM included (no
  ``has_draft_kv`` check [cite: tree-term-condition]); headroom and growth as 0.5.14 [cite: common-headroom]
  (``speculative/eagle_info_v2.py`` [cite: eagle-growth-unrounded], the bonus pre-claimed
  [cite: eagle-v2-preclaims-bonus]).
* algorithms: only EAGLE, EAGLE3 and STANDALONE run the v2 worker (``speculative/spec_info.py``)
  [cite: spec-v2-workers].  DFLASH and FROZEN_KV_MTP refuse overlap and run v1 workers
  [cite: dflash-frozen-kv-mtp-v1-workers], NGRAM too [cite: ngram-v1-worker]: their verify allocates exactly D at
  seq_len (``ngram_info.py`` [cite: ngram-v1-verify-alloc], ``dflash_info.py`` [cite: dflash-v1-verify-alloc]) and
  sets ``kv_allocated_len = kv_committed_len`` [cite: ngram-v1-allocated-is-committed]
  [cite: dflash-v1-allocated-is-committed]: a write path the model does not have (its NGRAM and DFLASH are v2's
  over-allocation), so they are left out rather than reported with v2's reserve.  That v1 write ends within seq_len +
  D <= C + Dmax, inside the 4 + Dmax headroom, and 0.5.13's NGRAM tree term only widens the row.
"""

REVISIONS: dict[str, Revision] = {
    r.name: r
    for r in (
        REFERENCE,
        _UPSTREAM_0_5_13,
        _UPSTREAM_0_5_14,
        _UPSTREAM_0_5_15,
        _UPSTREAM_0_5_16,
        _UPSTREAM_0_5_18,
        _UPSTREAM_0_5_19,
        _UPSTREAM_0_5_20,
        _UPSTREAM_0_5_21,
        _UPSTREAM_0_5_23,
        REFERENCE.but(
            "pre-26972",
            "reference without #26972: no tree term in L, headroom 4 + Dmax only",
            bug="#26972",
            tree_alloc_len=False,
            headroom=Headroom.NONE,
            eagle_tree_assert=False,
        ),
        REFERENCE.but(
            "adaptive-launch-headroom",
            "reference, but the row headroom sized from the launch-time shape and draft count of adaptive spec "
            "(launched at its middle candidate) instead of the largest candidate (planted)",
            bug="planted",
            headroom_from_launch_shape=True,
        ),
        REFERENCE.but(
            "pre-31616",
            "reference without #31616: decode growth nxt = c + R is not page-aligned",
            bug="#31616",
            page_aligned_growth=False,
        ),
        REFERENCE.but(
            "pre-35265",
            "reference without #35265: the DFLASH/DSPARK reserve is not page-aligned",
            bug="#35265",
            dflash_page_rounded=False,
        ),
    )
}

# The sizing semantics of each upstream release, by the API generation it shipped.
RELEASE_REVISIONS: dict[str, str] = {
    "0.5.13": "sglang-0.5.13",
    "0.5.14": "sglang-0.5.14",
    "0.5.15": "sglang-0.5.15",
    "0.5.16": "sglang-0.5.16",
    "0.5.17": "sglang-0.5.16",
    "0.5.18": "sglang-0.5.18",
    "0.5.19": "sglang-0.5.19",
    "0.5.20": "sglang-0.5.20",
    "0.5.21": "sglang-0.5.21",
    "0.5.22": "sglang-0.5.23",
    "0.5.23": "sglang-0.5.23",
}


def get_revision(name: str) -> Revision:
    try:
        return REVISIONS[name]
    except KeyError:
        raise KeyError(f"unknown revision {name!r} (known: {', '.join(REVISIONS)})") from None
