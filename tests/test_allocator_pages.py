"""The allocator page of a real target is the one its pool configurator builds, not the model's.

SGLang picks the token-to-KV allocator, and so the page every decode
allocation is rounded to, in ``KVCacheConfigurator._build_token_to_kv_pool_allocator``
(0.5.23 ``mem_cache/kv_cache_configurator.py`` 2795-2960): the SWA and
HiSparse allocators at the bare page_size, the token allocator (page 1) at
page 1 without DCP, the paged allocator at page_size * attn_dcp_size.  A real
target slices that method out of its configurator (``builders.extract_alloc_pages``)
and its decode path rounds with what it says; the model's
``pools.pool_alloc_page`` is the twin it is held equal to.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from allocator_model.config import ConfigError, ServingConfig
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool, pool_alloc_page
from allocator_model.revisions import REVISIONS
from allocator_model.scenario import DecodeScenario, run_scenario
from allocator_model.surface import ALLOCATOR_PAGE_SIZE, Provenance
from fuzz.engines.sglang.decode.check import check_scenario
from fuzz.engines.sglang.fidelity.differential import FidelityCase, disagreements
from fuzz.engines.sglang.real.allocators import ALLOCATOR_KINDS, Source, extract_alloc_pages
from fuzz.engines.sglang.real.private_imports import StandIns
from fuzz.engines.sglang.real.stubs import Published, StandInMissing
from fuzz.engines.sglang.real.versions import known_releases
from fuzz.engines.sglang.real.wheels import MAX_SOURCE_BYTES
from fuzz.targets.base import TargetCallError, TargetError
from fuzz.targets.resolve import resolve_target

SHAPES = Path(__file__).parent / "sglang_shapes"
CONFIGURATOR = (SHAPES / "configurator.py").read_text()  # 0.5.23's shape, in this project's words
SWA_LINE = "SWAAllocator(sizes.swa, page_size=get_schedule().page_size)"
# Planted: the SWA allocator widened under DCP like the paged one (SGLang keeps it at the bare page).
PLANTED_SWA = CONFIGURATOR.replace(
    SWA_LINE, "SWAAllocator(sizes.swa, page_size=get_schedule().page_size * get_parallel().attn_dcp_size)"
)
EAGLE_3_1_4 = dict(speculative_algorithm="EAGLE", speculative_num_steps=3, speculative_num_draft_tokens=4)


def test_the_planted_configurator_differs_from_the_shape_in_the_swa_page_only():
    assert SWA_LINE in CONFIGURATOR and PLANTED_SWA != CONFIGURATOR


def pages_of(source: str, *others: Source):
    published = Published()
    read = extract_alloc_pages(Source(source, "kv_cache_configurator.py"), others, published, StandIns(published))

    def page(kind: KVPool, page_size: int, dcp: int) -> int:
        cfg = ServingConfig.resolve(context_len=4096, page_size=page_size, attn_dcp_size=dcp, kv_pool=kind.value)
        with published.bound(cfg, None):
            return read.pages[kind]()

    return page


@pytest.mark.parametrize("kind", sorted(ALLOCATOR_KINDS))
def test_the_sliced_allocator_builder_gives_the_modeled_page_of_each_kind(kind):
    """Its twin ``pool_alloc_page``: every page and DCP size, the token allocator's 1 at page 1 without DCP."""
    page = pages_of(CONFIGURATOR)
    for p, d in itertools.product((1, 2, 16, 64), (1, 2, 8)):
        assert page(kind, p, d) == pool_alloc_page(kind, p, d), (kind, p, d)
    assert page(KVPool.STANDARD, 1, 1) == 1 and page(KVPool.STANDARD, 1, 4) == 4 and page(KVPool.SWA, 64, 8) == 64


def test_a_planted_page_is_read_where_sglang_builds_it():
    page = pages_of(PLANTED_SWA)
    assert page(KVPool.SWA, 64, 8) == 512  # the planted widening
    assert page(KVPool.SWA, 64, 1) == 64 and page(KVPool.STANDARD, 64, 8) == 512 and page(KVPool.HISPARSE, 64, 8) == 64


def read_kinds(configurator: str, *others: Source) -> set[KVPool]:
    published = Published()
    return set(extract_alloc_pages(Source(configurator, "c.py"), others, published, StandIns(published)).pages)


def test_an_allocator_builder_missing_or_needing_unknown_arguments_leaves_the_page_modeled():
    assert read_kinds("x = 1\n") == set() and read_kinds("def (") == set()
    assert read_kinds(CONFIGURATOR) == set(ALLOCATOR_KINDS)  # no unified pool files: those kinds stay modeled
    odd = CONFIGURATOR.replace("token_to_kv_pool_allocator):", "token_to_kv_pool_allocator, mystery):", 1)
    assert odd != CONFIGURATOR and read_kinds(odd) == set()


POOL = (SHAPES / "unified_memory_pool.py").read_text()
ALLOCATORS = (SHAPES / "unified_allocators.py").read_text()


def checkout(
    tmp_path: Path,
    configurator: str,
    sizing_shape: str = "accessors.py",
    pool: str = POOL,
    allocators: str = ALLOCATORS,
) -> str:
    """A checkout's mem_cache: a sizing file of ``sizing_shape``, ``configurator``, the unified pool files."""
    mem_cache = tmp_path / "mem_cache"
    (mem_cache / "allocator").mkdir(parents=True)
    (mem_cache / "allocation_sizing.py").write_text((SHAPES / sizing_shape).read_text())
    (mem_cache / "kv_cache_configurator.py").write_text(configurator)
    (mem_cache / "unified_memory_pool.py").write_text(pool)
    (mem_cache / "allocator" / "unified_mamba.py").write_text(allocators)
    return str(mem_cache / "allocation_sizing.py")


def swa_under_dcp() -> DecodeScenario:
    """A SWA deployment under DCP 8, decoding at the scheduler's committed-length bound (C - 4, overlap off)."""
    cfg = ServingConfig.resolve(
        context_len=4093, page_size=64, attn_dcp_size=8, kv_pool="swa", enable_overlap=False, **EAGLE_3_1_4
    )
    return DecodeScenario(cfg, cfg.context_len - 4, None)


def test_a_swa_allocator_widened_under_dcp_is_found_and_the_bare_page_is_not(tmp_path):
    """0.5.18's sizing rounds with page_size alone: safe for SGLang's bare-page SWA allocator, a spill if widened.

    The same file and scenario, two configurators: the faithful one is
    quiet (the model alone, paging every kind at P * dcp, would have called
    it a write past the row); the planted one writes past the row, and the
    decode rounded with the planted page.
    """
    faithful = resolve_target(checkout(tmp_path / "a", CONFIGURATOR) + "@0.5.18")
    planted = resolve_target(checkout(tmp_path / "b", PLANTED_SWA) + "@0.5.18")
    s = swa_under_dcp()
    assert faithful.sizing.allocator_page_size(s.config) == 64
    assert planted.sizing.allocator_page_size(s.config) == 512
    assert run_scenario(s, planted.sizing, planted.revision).alloc_page == 512
    assert check_scenario(faithful, s)[1] == []
    found = {str(v.signature) for v in check_scenario(planted, s)[1]}
    assert any(sig.startswith("write-within-row/") and sig.endswith("@swa") for sig in found), found


def test_fidelity_names_the_allocator_page_where_a_configurator_departs_from_the_model(tmp_path):
    planted = resolve_target(checkout(tmp_path, PLANTED_SWA) + "@0.5.18")
    model = ModelSizing(REVISIONS["sglang-0.5.18"])
    cfg = swa_under_dcp().config
    found = disagreements(planted.sizing, model, FidelityCase(cfg, ((100, 100),)))
    assert [v.group for v in found] == ["allocator_page_size"], found
    assert "real 512" in found[0].headline and "64" in found[0].headline


def test_a_real_target_lists_the_kinds_whose_allocator_page_it_could_not_read(tmp_path):
    target = resolve_target(checkout(tmp_path, CONFIGURATOR))  # the shape has no unified Mamba + SWA builder
    modeled = "; ".join(target.sizing.modeled())
    assert "the allocator page of the unified-mamba-swa pool(s) (not read from the target)" in modeled, modeled
    assert target.sizing.source(ALLOCATOR_PAGE_SIZE) is Provenance.READ
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "allocation_sizing.py").write_text((SHAPES / "uno.py").read_text())
    assert resolve_target(str(lone / "allocation_sizing.py")).sizing.source(ALLOCATOR_PAGE_SIZE) is not Provenance.READ


RELEASES = known_releases()  # every modeled release, 0.5.13 to 0.5.23


@pytest.mark.network
@pytest.mark.parametrize("version", RELEASES)
def test_every_release_pages_each_kind_as_modeled(version, real_wheel_cache):
    """The real wheel (cached or downloaded): every kind's allocator page is read, and agrees with ``pool_alloc_page``.

    0.5.16+ from the configurator and the unified chain; 0.5.13-0.5.15 from the ModelRunner mixin.
    """
    target = resolve_target(f"sglang=={version}")
    assert target.sizing.source(ALLOCATOR_PAGE_SIZE) is Provenance.READ
    assert set(target.sizing.module.alloc_pages.pages) == set(target.revision.pools)
    assert not [m for m in target.sizing.modeled() if "allocator page" in m]
    checked = 0
    for kind, p, d in itertools.product(sorted(target.revision.pools), (1, 16, 64), (1, 2, 4)):
        try:
            cfg = ServingConfig.resolve(context_len=4096, page_size=p, attn_dcp_size=d, kv_pool=kind.value)
        except ConfigError:
            continue
        if target.revision.refuses(cfg) is None:
            assert target.sizing.allocator_page_size(cfg) == pool_alloc_page(kind, p, d), (version, kind, p, d)
            checked += 1
    assert checked >= 3 * 3  # at least the allocator builder's three kinds at every page


@pytest.mark.parametrize(
    "change, named",
    [
        # Not a probe call: the slice cannot know what ``_is_npu`` is.
        (("_is_npu = is_npu()", "_is_npu = True"), "_is_npu"),
        # Only DeepSeek V4's pool is known absent from every modeled deployment.
        (("DeepSeekV4TokenToKVPool", "MHATokenToKVPool"), "MHATokenToKVPool"),
        # An attribute of the configurator kvrow-fuzz does not publish.
        (("elif self.is_hybrid_swa:", "elif self.enable_kv_widen or self.is_hybrid_swa:"), "enable_kv_widen"),
    ],
)
def test_a_branch_on_something_with_no_stand_in_stops_the_run_naming_it(tmp_path, change, named):
    """Exit 2 naming what is missing: not a finding against the file, and not a guess."""
    changed = CONFIGURATOR.replace(*change)
    assert changed != CONFIGURATOR
    target = resolve_target(checkout(tmp_path, changed))
    with pytest.raises(StandInMissing, match=named):
        target.sizing.allocator_page_size(swa_under_dcp().config)


def test_an_allocator_builder_that_raises_is_a_finding_naming_it(tmp_path):
    raising = CONFIGURATOR.replace("elif self.is_hybrid_swa:", "elif self.is_hybrid_swa and 1 // 0:")
    assert raising != CONFIGURATOR
    target = resolve_target(checkout(tmp_path, raising))
    with pytest.raises(TargetCallError, match=r"_build_token_to_kv_pool_allocator\(\) of .* raised ZeroDivisionError"):
        target.sizing.allocator_page_size(swa_under_dcp().config)


UNIFIED = (KVPool.UNIFIED_MAMBA, KVPool.UNIFIED_SWA)


def test_the_unified_allocator_page_is_followed_from_the_configurator_to_the_allocator_class():
    """configurator -> init_unified_*_pools -> the class: Mamba widened by DCP (own assignment after the base call),
    SWA the base class's bare page (a class without ``__init__`` is its base's)."""
    page = pages_of(CONFIGURATOR, Source(POOL, "unified_memory_pool.py"), Source(ALLOCATORS, "unified_mamba.py"))
    for kind, p, d in itertools.product(UNIFIED, (1, 16, 64), (1, 2, 8)):
        if kind.refuses_dcp and d > 1:
            continue  # SGLang refuses DCP with unified memory on a hybrid SWA model
        assert page(kind, p, d) == pool_alloc_page(kind, p, d), (kind, p, d)
    assert page(KVPool.UNIFIED_MAMBA, 64, 8) == 512 and page(KVPool.UNIFIED_SWA, 64, 1) == 64


MAMBA_WIDENED = "        self.page_size = page_size * dcp_size\n"
SWA_BARE = "        self.page_size = page_size\n"


@pytest.mark.parametrize(
    "planted, replacement, kind, dcp, page",
    [
        # The Mamba allocator forgets the DCP widening on itself: it overrides the base call's page.
        (MAMBA_WIDENED, SWA_BARE, KVPool.UNIFIED_MAMBA, 8, 64),
        # The SWA base doubles its page.
        (SWA_BARE, "        self.page_size = 2 * page_size\n", KVPool.UNIFIED_SWA, 1, 128),
    ],
)
def test_a_planted_unified_page_is_read_where_the_class_sets_it(planted, replacement, kind, dcp, page):
    assert ALLOCATORS.count(planted) == 1
    allocators = ALLOCATORS.replace(planted, replacement)
    read = pages_of(CONFIGURATOR, Source(POOL, "unified_memory_pool.py"), Source(allocators, "unified_mamba.py"))
    assert read(kind, 64, dcp) == page != pool_alloc_page(kind, 64, dcp)


def test_a_unified_chain_that_cannot_be_followed_leaves_the_page_modeled():
    pool = Source(POOL, "unified_memory_pool.py")
    allocators = Source(ALLOCATORS, "unified_mamba.py")
    assert set(UNIFIED) <= read_kinds(CONFIGURATOR, pool, allocators)
    assert not set(UNIFIED) & read_kinds(CONFIGURATOR, allocators)  # no init_unified_*_pools
    assert not set(UNIFIED) & read_kinds(CONFIGURATOR, pool)  # no allocator classes
    two_calls = POOL.replace(
        "    return allocator, state", "    other = UnifiedMambaTokenToKVPoolAllocator(page_size=2)"
    )
    assert two_calls != POOL
    assert KVPool.UNIFIED_MAMBA not in read_kinds(CONFIGURATOR, Source(two_calls, "p.py"), allocators)
    no_page = ALLOCATORS.replace("self.page_size = page_size\n", "self.pages = page_size\n")
    assert KVPool.UNIFIED_SWA not in read_kinds(CONFIGURATOR, pool, Source(no_page, "a.py"))
    cycle = "class UnifiedSWATokenToKVPoolAllocator(UnifiedSWATokenToKVPoolAllocator):\n    pass\n"
    assert KVPool.UNIFIED_SWA not in read_kinds(CONFIGURATOR, pool, Source(cycle, "a.py"))


def test_a_fidelity_mismatch_names_a_planted_unified_page(tmp_path):
    planted = ALLOCATORS.replace(
        "        self.page_size = page_size * dcp_size\n", "        self.page_size = page_size\n"
    )
    target = resolve_target(checkout(tmp_path, CONFIGURATOR, sizing_shape="uno.py", allocators=planted) + "@0.5.23")
    # DSPARK: the algorithm that boots under DCP on a unified Mamba host (EAGLE's draft must fuse, and DCP
    # declines fusion: ``Revision.unified_dcp_draft_fusion``)
    dspark = {"speculative_algorithm": "DSPARK", "speculative_num_draft_tokens": 17}
    cfg = ServingConfig.resolve(context_len=4093, page_size=64, attn_dcp_size=8, kv_pool="unified-mamba", **dspark)
    assert target.revision.refuses(cfg) is None
    found = disagreements(target.sizing, ModelSizing(REVISIONS["sglang-0.5.23"]), FidelityCase(cfg, ((100, 100),)))
    assert [v.group for v in found] == ["allocator_page_size"], found


MIXIN = (SHAPES / "model_runner_kv_cache_mixin.py").read_text()  # 0.5.15's shape, in this project's words


def old_checkout(tmp_path: Path, mixin: str = MIXIN) -> str:
    """A 0.5.15-shaped tree: mem_cache/common.py (the sizing functions) and model_executor/'s ModelRunner mixin."""
    (tmp_path / "mem_cache").mkdir(parents=True)
    (tmp_path / "model_executor").mkdir()
    (tmp_path / "mem_cache" / "common.py").write_text((SHAPES / "common.py").read_text())
    (tmp_path / "model_executor" / "model_runner_kv_cache_mixin.py").write_text(mixin)
    (tmp_path / "mem_cache" / "unified_memory_pool.py").write_text(POOL)
    (tmp_path / "mem_cache" / "multi_ended_allocator.py").write_text(ALLOCATORS)
    return str(tmp_path / "mem_cache" / "common.py") + "@0.5.15"


def test_before_the_configurator_the_model_runner_mixin_gives_the_rows_and_pages(tmp_path):
    """0.5.13-0.5.15: ``self.token_to_kv_pool_allocator`` in ``_init_pools``, its ``is_dsv4_model`` a local."""
    target = resolve_target(old_checkout(tmp_path))
    assert target.sizing.module.builders_origin.endswith("model_runner_kv_cache_mixin.py")
    read = target.sizing.module.alloc_pages.pages
    assert {KVPool.STANDARD, KVPool.SWA, KVPool.HISPARSE, KVPool.UNIFIED_MAMBA} <= set(read)
    for kind, p in itertools.product(sorted(read), (1, 16, 64)):
        cfg = ServingConfig.resolve(context_len=4096, page_size=p, kv_pool=kind.value)
        assert target.sizing.allocator_page_size(cfg) == pool_alloc_page(kind, p, 1), (kind, p)
    unified = ServingConfig.resolve(
        context_len=4096,
        page_size=64,
        kv_pool="unified-mamba",
        speculative_algorithm="DSPARK",
        speculative_num_draft_tokens=6,
    )
    assert target.sizing.req_to_token_row_width(unified) == 4096 + 4 + 6


def test_a_planted_mixin_page_is_read_from_the_model_runner(tmp_path):
    planted = MIXIN.replace("SWAAllocator(page_size=self.page_size)", "SWAAllocator(page_size=2 * self.page_size)")
    assert planted != MIXIN
    target = resolve_target(old_checkout(tmp_path, planted))
    cfg = ServingConfig.resolve(context_len=4096, page_size=16, kv_pool="swa")
    assert target.sizing.allocator_page_size(cfg) == 32


def test_an_allocator_built_where_the_slice_does_not_follow_leaves_the_page_modeled():
    """Inside a ``try`` the branch that runs is not read: modeled, not guessed from the branches around it."""
    in_try = CONFIGURATOR.replace(
        "            else:\n                token_to_kv_pool_allocator = Paged(",
        "            else:\n                try:\n                    pass\n                finally:\n"
        "                    token_to_kv_pool_allocator = Paged(page_size=3)\n"
        "                token_to_kv_pool_allocator = Paged(",
    )
    assert in_try != CONFIGURATOR
    ast.parse(in_try)  # still Python: the page is left modeled for where it is built, not for a syntax error
    assert read_kinds(in_try) == set() and read_kinds(CONFIGURATOR) == set(ALLOCATOR_KINDS)


def test_a_unified_page_set_under_a_condition_leaves_the_page_modeled():
    conditional = ALLOCATORS.replace(
        "        self.page_size = page_size * dcp_size\n",
        "        if dcp_size > 1:\n            self.page_size = page_size * dcp_size\n",
    )
    assert conditional != ALLOCATORS
    pool = Source(POOL, "unified_memory_pool.py")
    assert KVPool.UNIFIED_MAMBA not in read_kinds(CONFIGURATOR, pool, Source(conditional, "a.py"))
    assert KVPool.UNIFIED_SWA in read_kinds(CONFIGURATOR, pool, Source(conditional, "a.py"))


def test_a_branch_that_builds_no_allocator_stops_with_one_line(tmp_path):
    """The SWA branch builds nothing: no page to read there, exit 2 naming it, not a guess."""
    empty = CONFIGURATOR.replace(f"token_to_kv_pool_allocator = {SWA_LINE}", "pass")
    assert empty != CONFIGURATOR
    target = resolve_target(checkout(tmp_path, empty))
    with pytest.raises(StandInMissing, match="builds no allocator on the branch this deployment takes"):
        target.sizing.allocator_page_size(swa_under_dcp().config)
    standard = ServingConfig.resolve(context_len=4096, page_size=16, attn_dcp_size=2)
    assert target.sizing.allocator_page_size(standard) == 32


@pytest.mark.parametrize(
    "change",
    [
        # The page by position, or by ``**`` only: not read as the token allocator's 1.
        ("page_size=get_schedule().page_size * get_parallel().attn_dcp_size,", "get_schedule().page_size * 8,"),
        ("page_size=get_schedule().page_size * get_parallel().attn_dcp_size,", "**paged_kwargs,"),
        # Handed an allocator made elsewhere, or changing the page after building it.
        (f"token_to_kv_pool_allocator = {SWA_LINE}", "token_to_kv_pool_allocator = self.shared_allocator"),
        (
            "        return token_to_kv_pool_allocator",
            "        token_to_kv_pool_allocator.page_size *= 2\n        return token_to_kv_pool_allocator",
        ),
        # Returned straight from a call, or unpacked.
        (f"token_to_kv_pool_allocator = {SWA_LINE}", f"return {SWA_LINE}"),
        (f"token_to_kv_pool_allocator = {SWA_LINE}", f"token_to_kv_pool_allocator, other = {SWA_LINE}, 1"),
    ],
)
def test_an_allocator_the_slice_cannot_read_leaves_every_page_modeled(change):
    """Hostile or future shapes of the builder: the page is modeled (and listed), never read wrong."""
    changed = CONFIGURATOR.replace(*change)
    assert changed != CONFIGURATOR
    ast.parse(changed)
    assert read_kinds(changed) == set()


@pytest.mark.parametrize(
    "change",
    [
        # The page widened afterwards, or under a condition, or by a name bound under a condition.
        (MAMBA_WIDENED, MAMBA_WIDENED + "        self.page_size *= 2\n"),
        (MAMBA_WIDENED, "        if dcp_size > 1:\n    " + MAMBA_WIDENED),
        (
            "        dcp_size = get_parallel().attn_dcp_size\n",
            "        dcp_size = 1\n        if wide:\n            dcp_size = get_parallel().attn_dcp_size\n",
        ),
        # Two definitions of the class: which one is imported is not read.
        (
            "class UnifiedSWAAllocatorBase(",
            "class UnifiedMambaTokenToKVPoolAllocator:\n    pass\n\n\nclass UnifiedSWAAllocatorBase(",
        ),
    ],
)
def test_a_unified_page_the_slice_cannot_read_is_left_modeled(change):
    changed = ALLOCATORS.replace(*change)
    assert changed != ALLOCATORS
    ast.parse(changed)
    kinds = read_kinds(CONFIGURATOR, Source(POOL, "unified_memory_pool.py"), Source(changed, "a.py"))
    assert KVPool.UNIFIED_MAMBA not in kinds


def test_a_stale_copy_of_an_allocator_class_in_another_file_leaves_the_page_modeled():
    """A checkout with 0.5.19's multi_ended_allocator.py beside 0.5.20+'s files: two classes of one name."""
    pool = Source(POOL, "unified_memory_pool.py")
    kinds = read_kinds(CONFIGURATOR, pool, Source(ALLOCATORS, "allocator/unified_mamba.py"), Source(ALLOCATORS, "m.py"))
    assert not set(UNIFIED) & kinds


def test_a_page_handed_through_a_base_init_by_name_and_position_is_followed():
    """``Base.__init__(self, size, page_size)``: the base's own ``self.page_size = page_size`` is the page."""
    own = "        self.unified_buffer = unified_buffer\n        self.page_size = page_size\n"
    by_name = ALLOCATORS.replace(own, own + "        Base.__init__(self, 4, 3 * page_size)\n")
    assert by_name != ALLOCATORS
    base = "class Base:\n    def __init__(self, size, page_size):\n        self.page_size = page_size\n"
    page = pages_of(CONFIGURATOR, Source(POOL, "p.py"), Source(by_name, "a.py"), Source(base, "allocator/base.py"))
    assert page(KVPool.UNIFIED_SWA, 16, 1) == 48  # the base call comes last: its page wins


@pytest.mark.parametrize(
    "where, content, said",
    [
        ("kv_cache_configurator.py", b"\xff\xfe not utf-8", "not UTF-8"),
        ("kv_cache_configurator.py", b"#" * (MAX_SOURCE_BYTES + 1), "larger than"),
        ("unified_memory_pool.py", b"\xff", "not UTF-8"),
    ],
)
def test_a_pool_builder_file_there_but_unreadable_is_one_line_not_skipped(tmp_path, where, content, said):
    """Bad input beside the sizing file stops the run (exit 2): skipping it would fall back to the model unread."""
    sizing = checkout(tmp_path, CONFIGURATOR)
    (Path(sizing).parent / where).write_bytes(content)
    with pytest.raises(TargetError, match=said) as e:
        resolve_target(sizing)
    assert where in str(e.value) and "\n" not in str(e.value)
