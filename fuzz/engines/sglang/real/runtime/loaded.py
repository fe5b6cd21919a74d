"""One release's decode write path, loaded: its modules executed, its allocators and sizing functions at hand.

``SGLangRuntime.load(source)`` (a version, a wheel, a checkout, ``installed``)
executes the release's modules (``releases``) under a time bound and keeps
what could not load, with why (the invariant checker is optional: the
path runs without it).  Loading is ~0.5 s per release, plus ~4 s once per
process where ``spec_utils`` first pulls in ``torch._dynamo`` (its
module-level ``@torch.compile``).
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.pools import KVPool, pool_alloc_page
from fuzz.engines.sglang.records import record
from fuzz.targets.base import TargetError

from ..stubs import SpeculativeAlgorithm as ModelSpeculativeAlgorithm
from ..stubs import StandInMissing
from .bounds import DEFAULT_SECONDS, SGLangTimeout, bounded, untraced
from .context import RuntimeContext, Settings
from .interpreter import ensure_triton
from .modules import Answers, Loader
from .releases import CHECKER_MODULE, POOL_ALLOCATOR_NAMES, Release, Where, release_for
from .request import RequestStandIn, make_request
from .standins import StandIns, slice_definitions
from .tree import SourceTree, open_tree

MEMORY_POOL = "sglang/srt/mem_cache/memory_pool.py"


class SGLangRuntime:
    """A loaded release; build with ``SGLangRuntime.load``."""

    def __init__(self, tree: SourceTree, release: Release, timeout_s: float = DEFAULT_SECONDS) -> None:
        self.tree = tree
        self.release = release
        self.version = tree.version or release.version
        self.timeout_s = timeout_s
        self.context = RuntimeContext()
        self.standins = StandIns(tree, self.context, self._speculative_algorithm)
        self.loader = Loader(tree, release.modules, self.standins.answer)
        self.not_loaded: dict[str, str] = {}  # module -> why it could not be executed
        self.import_seconds = 0.0
        self._pool_methods: dict[str, Callable[..., Any]] | None = None
        self._loaders: list[Loader] = [self.loader]
        self.attention: dict[Any, Any] = {}  # each backend's graph builders (``attention.GraphBuilders``), on first use

    @classmethod
    def load(
        cls, source: str | SourceTree, wheel_dir: str | None = None, timeout_s: float = DEFAULT_SECONDS
    ) -> SGLangRuntime:
        tree = open_tree(source, wheel_dir)
        ensure_triton()
        runtime = cls(tree, release_for(tree.version), timeout_s)
        runtime._execute()
        return runtime

    @property
    def origin(self) -> str:
        return self.tree.origin

    def _execute(self) -> None:
        start = time.perf_counter()
        for dotted in self.release.modules:
            try:
                with bounded(f"importing {dotted} of {self.origin}", self.timeout_s, self.loader.sglang_name):
                    self.loader.module(dotted)
            except SGLangTimeout as e:
                raise TargetError(str(e)) from None
            except (TargetError, StandInMissing) as e:
                if dotted != CHECKER_MODULE:
                    raise
                self.not_loaded[dotted] = str(e)
        self.import_seconds = time.perf_counter() - start
        compiled = self.loader.compiled_kernels()
        if compiled:  # triton read TRITON_INTERPRET as unset at a @triton.jit: they would run compiled on CPU tensors
            raise TargetError(f"{self.origin}: {compiled[0]} is a compiled triton kernel, not an interpreted one")

    def remembers_failure(self) -> bool:
        """Whether a backend it built (or a bucket, or the draft's rows) failed and remembers it, a timeout
        included: a later command on the tree loads afresh rather than inherit this one's refusal."""
        for loaded in self.attention.values():
            if isinstance(loaded, Exception):
                return True
            for bucket in getattr(loaded, "buckets", {}).values():
                if bucket.failure is not None or bucket.draft.failure is not None:
                    return True
        return False

    def close(self) -> None:
        """Drop every private module of this runtime from ``sys.modules``."""
        for loader in self._loaders:
            loader.close()

    # -- what SGLang defines ----------------------------------------------------

    def resolve(self, where: Where) -> Any:
        """The object ``where`` names in the executed module (a class's method: the plain function)."""
        obj: Any = self.loader.module(where.module)
        for part in where.name.split("."):
            obj = getattr(obj, part) if not isinstance(obj, type) else obj.__dict__.get(part, getattr(obj, part))
        return obj

    def _speculative_algorithm(self) -> Any:
        """SGLang's own ``SpeculativeAlgorithm`` where spec_info loaded, else the model's (``stubs``)."""
        module = self.loader.modules.get("sglang.srt.speculative.spec_info")
        if isinstance(module, types.ModuleType) and "SpeculativeAlgorithm" in module.__dict__:
            return module.__dict__["SpeculativeAlgorithm"]
        return ModelSpeculativeAlgorithm

    def speculative_algorithm(self, name: str | None) -> Any:
        return self._speculative_algorithm().from_string(None if name is None else str(name))

    def pool_methods(self) -> dict[str, Callable[..., Any]]:
        """``ReqToTokenPool.write`` (and ``alloc_aux_to_lengths``, 0.5.19+) sliced from the release's memory_pool.py."""
        if self._pool_methods is None:
            names = tuple(w.name for w in (self.release.pool_write, self.release.pool_aux) if w is not None)
            found = slice_definitions(self.tree, MEMORY_POOL, names, {"torch": torch, "__name__": "memory_pool"})
            self._pool_methods = {n.rpartition(".")[2]: fn for n, fn in found.items()}
        return self._pool_methods

    def request(self, req_pool_idx: int, kv_committed_len: int, kv_allocated_len: int, **kw: Any) -> RequestStandIn:
        """A request shaped as this release's ``Req`` (``request.make_request``)."""
        return make_request(self.version, req_pool_idx, kv_committed_len, kv_allocated_len, **kw)

    # -- the allocator ---------------------------------------------------------

    def allocator_page(self, cfg: ServingConfig) -> int:
        """The page of the allocator ``cfg.kv_pool`` builds (``allocator_model.pools.pool_alloc_page``)."""
        return int(pool_alloc_page(cfg.kv_pool, cfg.page_size, cfg.attn_dcp_size))

    def allocator(self, cfg: ServingConfig, size: int, page: int | None = None) -> Any:
        """The release's own allocator for ``cfg``, ``size`` tokens: paged above page 1, else the token allocator.

        ``PagedTokenToKVPoolAllocator(size, page_size, dtype, device, kvcache, need_sort)`` (every release,
        e.g. [cite: paged-allocator-init]) and ``TokenToKVPoolAllocator(size, dtype, device,
        kvcache, need_sort)`` [cite: token-allocator-init] with kvcache None, need_sort False, on "cpu".  Only
        the standard kind's allocator is built here: the SWA, HiSparse and unified allocators need their
        KV pool objects (``kvcache``), which are not executed.

        ``page``: build it at that page instead, standing in for a kind whose own allocator class does not load
        (the caller reports the allocator as substituted).
        """
        if cfg.kv_pool is not KVPool.STANDARD and page is None:
            raise StandInMissing(
                f"the {cfg.kv_pool.value} pool's own allocator needs its KV pool object (not executed); "
                "only the standard kind's PagedTokenToKVPoolAllocator/TokenToKVPoolAllocator are built"
            )
        page = self.allocator_page(cfg) if page is None else page
        where = self.release.paged_allocator if page > 1 else self.release.token_allocator
        cls = self.resolve(where)
        args: tuple[Any, ...] = (size, page) if page > 1 else (size,)
        with self.bound(cfg, cfg.launch_runtime, f"{where.name}(...) of {self.origin}"):
            built = cls(*args, torch.int64, "cpu", None, False)
        return free_list_checked_first(built) if page > 1 else built

    def side_loader(self, modules: tuple[str, ...], answers: Answers | None = None) -> Loader:
        """A loader of its own on this runtime's tree, closed with it: modules the write path does not execute,
        which stay out of the write path's (``answers``: the stand-ins' answers, ``standins.answer`` unless given)."""
        loader = Loader(self.tree, modules, answers or self.standins.answer)
        self._loaders.append(loader)
        return loader

    def pool_allocator_classes(self) -> dict[str, Any]:
        """Each non-standard kind's own allocator class, loaded (a class), or why it cannot be (a string).

        Loaded in a loader of their own (their modules added to the allocator core, with
        ``utils/invariants.py`` where the release has it), so the write path's modules stay as they are.
        None is built: each constructor takes that kind's KV pool object (``kvcache``: an SWAKVPool,
        a HiSparse pool, a unified pool), whose modules are not executed.
        """
        table = record(self.release.version)["pool_allocators"]  # where the release defines each, read from its wheel
        core = tuple(m for m in self.release.modules if ".allocator." in m or m.startswith("sglang.kernels.ops.memory"))
        core += tuple(m for m in ("sglang.srt.mem_cache.triton_ops.allocator",) if m in self.release.modules)
        out: dict[str, Any] = {}
        for kind, cls_name in POOL_ALLOCATOR_NAMES.items():
            if kind not in table:
                out[kind] = f"sglang {self.release.version} has no {cls_name} in mem_cache/allocator/"
                continue
            module = f"sglang.srt.mem_cache.allocator.{table[kind]['module']}"
            extra = ("sglang.srt.utils.invariants",) if self.tree.has("sglang/srt/utils/invariants.py") else ()
            loader = self.side_loader(core + extra + (module,))
            try:
                with bounded(f"importing {module}", self.timeout_s, loader.sglang_name):
                    out[kind] = getattr(loader.module(module), cls_name)
            except (TargetError, StandInMissing, SGLangTimeout) as e:
                out[kind] = f"{cls_name} cannot load: {e}".splitlines()[0]
        return out

    # -- calls into SGLang -------------------------------------------------------

    @contextlib.contextmanager
    def bound(
        self, cfg: ServingConfig, rt: SpecRuntime | None, what: str, settings: Settings | None = None
    ) -> Iterator[None]:
        """Publish ``cfg``/``rt`` and bound the time of the block (``bounds.bounded``)."""
        with self.context.bound(cfg, rt, settings), bounded(what, self.timeout_s, self.loader.sglang_name):
            yield

    def sizing(self, name: str) -> Callable[..., Any]:
        """A function of this release's sizing module (``allocation_sizing``, ``common`` before 0.5.16)."""
        fn = getattr(self.loader.module(self.release.sizing), name)
        if not callable(fn) or getattr(fn, "__code__", None) is None:
            raise TargetError(f"{self.origin} {self.release.sizing} defines no {name}()")
        return fn  # type: ignore[no-any-return]

    def call_sizing(self, name: str, cfg: ServingConfig, rt: SpecRuntime | None = None, **kwargs: Any) -> Any:
        """Call a sizing function with ``cfg`` published; server_args-taking ones (to 0.5.17) get the bag."""
        fn = self.sizing(name)
        with self.bound(cfg, rt if rt is not None else cfg.launch_runtime, f"{name}() of {self.origin}"):
            code = fn.__code__
            params = code.co_varnames[: code.co_argcount]
            if params and params[0] == "server_args" and "server_args" not in kwargs:
                kwargs["server_args"] = self.context.read("server_args")
            return fn(**kwargs)


def free_list_checked_first(allocator: Any) -> Any:
    """SGLang's paged allocator, its ``alloc_extend`` answering None (out of memory) before its kernel runs
    when the free list cannot hold the new pages; otherwise SGLang's own ``alloc_extend``, untouched.

    Through 0.5.21 ``alloc_extend`` launches ``alloc_extend_kernel`` and only then checks
    ``num_new_pages > len(self.free_pages)`` [cite: paged-extend-kernel-before-check]: on a short free list
    the kernel loads past ``free_pages`` (on a GPU a discarded out-of-bounds read; under triton's interpreter
    a segfault of this process), then the method returns None.  0.5.22 on checks first
    [cite: paged-extend-check-before-kernel].  The check here is that one, asked first, with SGLang's own
    ``get_num_new_pages`` (sliced from the tree): the answer is the None SGLang gives, and a read, discarded,
    breaks none of this tool's properties.  With ``need_sort`` False (as built here) every freed page is back
    in ``free_pages``, so ``available_size()`` counts exactly the pages the kernel may read.  The check is kept
    out of the functions a traced step records as entered (``bounds.untraced``): SGLang's path does not call it.
    """
    extend = allocator.alloc_extend
    num_new_pages = extend.__func__.__globals__["get_num_new_pages"]

    def alloc_extend(
        prefix_lens: Any, prefix_lens_cpu: Any, seq_lens: Any, seq_lens_cpu: Any, *args: Any, **kw: Any
    ) -> Any:
        page = allocator.page_size
        given = kw.get("num_new_pages", args[2] if len(args) > 2 else None)
        with untraced():  # the harness's question, not a call SGLang's path makes: kept out of its trace
            wanted = num_new_pages(seq_lens=seq_lens_cpu, page_size=page, prefix_lens=prefix_lens_cpu)
            short = int(wanted if given is None else given) > allocator.available_size() // page
        if short:
            return None
        return extend(prefix_lens, prefix_lens_cpu, seq_lens, seq_lens_cpu, *args, **kw)

    allocator.alloc_extend = alloc_extend
    return allocator
