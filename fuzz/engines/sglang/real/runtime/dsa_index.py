"""The DSA indexer's key cache, as a release's own ``DSATokenToKVPool`` allocates it, and the locations its
allocator hands out under decode context parallelism.

DeepSeek sparse-attention models keep, beside the MLA KV, an index key per KV location: one buffer per layer
of whole pages, written at ``loc // page``, ``loc % page`` with no bounds check, at the allocator's location
(under DCP the global one: every rank holds every index key).  Its extent is the pool's ``index_buf_size``
rounded up to pages, sized in the pool's ``__init__``; the allocator under DCP is the paged allocator over
``size * D`` tokens in pages of ``page * D``.  Both are executed here: the pool's class from the tree's
``memory_pool.py`` (its own methods over a stand-in of its MLA base, which allocates nothing: the index key
cache is the table) on the ``meta`` device, and the release's own paged allocator (``SGLangRuntime.allocator``).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from allocator_model.config import ServingConfig
from fuzz.common.pysource import parsed
from fuzz.targets.base import TargetError

from ..stubs import StandInMissing
from .standins import _future_flags, slice_definitions

MEMORY_POOL = "sglang/srt/mem_cache/memory_pool.py"
INDEX_KEY_CACHE = "sglang/srt/mem_cache/index_key_cache.py"  # its own class from 0.5.18
POOL_CLASS = "DSATokenToKVPool"
BASE_CLASS = "MLATokenToKVPool"
# A DeepSeek-V3.2 layer's MLA shapes (its config.json: kv_lora_rank 512, qk_rope_head_dim 64) and the indexer's
# key head (index_head_dim 128, which the pool asserts); the base allocates nothing, so they only pass through.
MLA_SHAPES = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "kv_cache_dim": 576, "index_head_dim": 128}


@dataclass(frozen=True)
class IndexCache:
    """One build of the index key cache: the locations its first layer's buffer holds (its bytes over a token's:
    the key and its scale [cite: dsa-index-row-bytes]), in pages of ``page`` (a location ``loc`` is stored in
    page ``loc // page``), from ``index_buf_size`` (None: the release keeps it in no attribute)."""

    index_buf_size: int | None
    locations: int
    page: int


class _Parallel:
    """``runtime_context.get_parallel()`` as the pool reads it: the attention DCP size of the launch, nothing else."""

    def __init__(self, attn_dcp_size: int) -> None:
        self.attn_dcp_size = attn_dcp_size

    def __getattr__(self, name: str) -> Any:
        raise StandInMissing(f"get_parallel().{name}, which kvrow-fuzz has no stand-in for (the DSA pool reads only "
                             "attn_dcp_size)")  # fmt: skip


def _refuse_aiter() -> bool:
    raise StandInMissing("aiter_can_use_preshuffle_paged_mqa() (ROCm only: the stand-in GPU is a CUDA one)")


class _MemorySaverOff:
    """``TorchMemorySaverAdapter.create(enable=False)``: its ``region`` does nothing."""

    def region(self, *args: Any, **kwargs: Any) -> Any:
        return contextlib.nullcontext()


def _mla_base(signature: inspect.Signature) -> type:
    """A stand-in of ``MLATokenToKVPool`` taking the release's own ``__init__`` signature: it keeps what
    ``KVCache.__init__`` keeps of the arguments (``self.size = size``, ``self.page_size = page_size``, the device,
    the layers), no custom memory pool and the memory saver off (SGLang's defaults), and allocates nothing; any
    other attribute the pool reads of it is refused."""

    class MLAPoolStandIn:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            self.size, self.page_size, self.dtype = a["size"], a["page_size"], a["dtype"]
            self.device, self.layer_num = a["device"], a["layer_num"]
            self.start_layer = a.get("start_layer") or 0
            self.end_layer = a.get("end_layer") or self.layer_num - 1
            self.dcp_replicated = bool(a.get("dcp_replicated", False))
            self.custom_mem_pool = None
            self.memory_saver_adapter = _MemorySaverOff()

        def _finalize_allocation_log(self, size: int) -> None:
            return None  # KVCache's log line of what it allocated

        def __getattr__(self, name: str) -> Any:
            raise StandInMissing(f"{BASE_CLASS}.{name}, which kvrow-fuzz has no stand-in for (the stand-in of the "
                                 "DSA pool's base keeps only what KVCache.__init__ sets)")  # fmt: skip

    return MLAPoolStandIn


def _pool_class(tree: Any, namespace: dict[str, Any]) -> type:
    """The tree's ``DSATokenToKVPool``, every method its own, compiled at its own lines over the stand-in base."""
    source = tree.read(MEMORY_POOL)
    if source is None:
        raise TargetError(f"{tree.origin} has no {MEMORY_POOL}")
    filename = tree.register_source(MEMORY_POOL)
    classes = (n for n in parsed(source, filename).body if isinstance(n, ast.ClassDef))
    node = next((n for n in classes if n.name == POOL_CLASS), None)
    if node is None:
        raise TargetError(f"{tree.origin} {MEMORY_POOL} defines no {POOL_CLASS}")
    node = copy.copy(node)  # the parse is shared: its base replaced in a copy
    node.bases, node.keywords, node.decorator_list = [ast.Name(BASE_CLASS, ast.Load())], [], []
    code = compile(ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[])), filename, "exec",
                   flags=_future_flags())  # fmt: skip
    exec(code, namespace)  # noqa: S102 - SGLang's own class
    cls: type = namespace[POOL_CLASS]
    return cls


class _Launch:
    """The launch a build is for: the attention DCP size ``get_parallel()`` answers with."""

    attn_dcp_size = 1


# id(tree) -> (the tree, kept alive; its class; the names its __init__ takes; its launch)
_POOLS: dict[int, tuple[Any, type, frozenset[str], _Launch]] = {}
_KEPT = 16


def _pool(tree: Any) -> tuple[type, frozenset[str], _Launch]:
    """The tree's pool class, compiled once per tree, the names its ``__init__`` takes, and the launch its
    ``get_parallel()`` reads (set per build)."""
    found = _POOLS.get(id(tree))
    if found is not None and found[0] is tree:
        return found[1], found[2], found[3]
    base_init = slice_definitions(tree, MEMORY_POOL, (f"{BASE_CLASS}.__init__",), {"__name__": "memory_pool"})
    launch = _Launch()
    namespace: dict[str, Any] = {
        "__name__": "memory_pool",
        BASE_CLASS: _mla_base(inspect.signature(base_init[f"{BASE_CLASS}.__init__"])),
        "torch": torch,
        "nullcontext": nullcontext,
        "_is_hip": False,  # the stand-in GPU is a CUDA one
        "is_xpu": lambda: False,
        "aiter_can_use_preshuffle_paged_mqa": _refuse_aiter,
        "get_parallel": lambda: _Parallel(launch.attn_dcp_size),
    }
    if tree.has(INDEX_KEY_CACHE):
        sliced = {
            "__name__": "index_key_cache",
            "torch": torch,
            "nullcontext": nullcontext,
            "GPU_MEMORY_TYPE_KV_CACHE": "kv_cache",
        }  # fmt: skip  (the region's tag: the stand-in ignores it)
        namespace["IndexKeyCache"] = slice_definitions(tree, INDEX_KEY_CACHE, ("IndexKeyCache",), sliced)[
            "IndexKeyCache"
        ]
    cls = _pool_class(tree, namespace)
    params = frozenset(inspect.signature(cls.__init__).parameters)  # type: ignore[misc]
    while len(_POOLS) >= _KEPT:
        _POOLS.pop(next(iter(_POOLS)))
    _POOLS[id(tree)] = (tree, cls, params, launch)
    return cls, params, launch


def build_index_cache(tree: Any, size: int, page_size: int, attn_dcp_size: int) -> IndexCache:
    """The target pool's index key cache as the tree's ``DSATokenToKVPool.__init__`` allocates it for a pool of
    ``size`` tokens in pages of ``page_size``, at attention DCP size ``attn_dcp_size`` (not the draft's
    replicated pool), on the stand-in CUDA GPU: its first layer's buffer, on the ``meta`` device."""
    cls, params, launch = _pool(tree)
    launch.attn_dcp_size = attn_dcp_size
    wanted = {"size": size, "page_size": page_size, "dtype": torch.bfloat16, "layer_num": 1, "device": "meta",
              "enable_memory_saver": False, **MLA_SHAPES}  # fmt: skip
    try:
        pool = cls(**{k: v for k, v in wanted.items() if k in params})
    except (StandInMissing, TargetError):
        raise
    except Exception as e:  # noqa: BLE001 - SGLang's own constructor refused these arguments
        raise TargetError(f"{tree.origin} {POOL_CLASS}(size={size}, page_size={page_size}) at DCP {attn_dcp_size} "
                          f"raised {type(e).__name__}: {e}".splitlines()[0]) from None  # fmt: skip
    buffers = pool.index_k_with_scale_buffer
    first = buffers[0] if isinstance(buffers, list) else buffers
    kept = vars(pool)
    per_token = pool.index_head_dim + pool.index_head_dim // pool.quant_block_size * 4  # the key, then its scale
    # the writer's page: the pool's index page (0.5.22+: page_size // index_kpool), else its page
    page = int(kept.get("index_page_size") or pool.page_size)
    buf = kept.get("index_buf_size")  # kept on the pool from 0.5.16; a local of __init__ before
    return IndexCache(None if buf is None else int(buf), int(first.numel()) // per_token, page)


def largest_location(allocator: Any) -> int:
    """The largest location ``allocator`` (a release's own paged allocator, just built) can hand out: its free
    pages are every page it has, each ``page_size`` locations from ``page * page_size``."""
    pages = allocator.free_pages
    if pages.numel() == 0:
        raise TargetError(
            f"a pool of {allocator.size} tokens in pages of {allocator.page_size} has no page to hand out"
        )
    return (int(pages.max()) + 1) * int(allocator.page_size) - 1


def dcp_allocator(runtime: Any, cfg: ServingConfig, size: int) -> Any:
    """The release's own paged allocator of a DCP launch over a pool of ``size`` tokens: ``size * D`` tokens in
    pages of the allocator page (``SGLangRuntime.allocator``)."""
    return runtime.allocator(cfg, size * cfg.attn_dcp_size)


__all__ = ["IndexCache", "build_index_cache", "dcp_allocator", "largest_location"]
