"""Beside the step: SGLang's own KV-page invariant checker, and freeing a finished request.

Checker (0.5.15+): ``SchedulerInvariantChecker._check_kv_page_invariants``
(managers/scheduler_components/invariant_checker.py [cite: checker-kv-page-invariants]), the
check ``SGLANG_CHECK_KV_PAGE_INVARIANTS=1`` turns on in the idle/busy self
checks [cite: checker-kv-page-switch].  It is called unbound on a stand-in scheduler
carrying what it reads (req_to_token_pool, token_to_kv_pool_allocator,
tree_cache, page_size, get_last_batch/get_running_batch/get_chunked_req,
its warning counters; 0.5.22+ its own ``_requests_owning_rows``), with
``SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE=1`` so that its
``raise_error_or_warn`` raises [cite: raise-error-or-warn] instead of
logging.  Verdict: "ok", or "violated: <its assertion or message>".

Freeing (``release_request``): from 0.5.16 the over-allocated tail
[kv_committed_len, kv_allocated_len) goes through SGLang's own
``_release_overallocated_kv_indices`` (mem_cache/common.py [cite: tail-free]; it
aligns the start up to the allocator's page from 0.5.17 [cite: tail-free-allocator-page], but to the
server's ``page_size`` in 0.5.16 [cite: tail-free-server-page]: under DCP a start aligned only to
``page_size`` frees the widened page its committed head still uses), which frees through the tree cache's
``free_kv_row`` (0.5.19+) or ``allocator.free`` directly.  The rest, and
everything before 0.5.16 (where the tail free is inline in
``release_kv_cache`` after the tree cache's ``cache_finished_req``), is the
harness's: ``allocator.free`` (SGLang's own method) of the row's slots, then
the row is given back.  ``free_kv_row`` itself is the harness's: the real
one (mem_cache/base_prefix_cache.py [cite: free-kv-row]) frees the same row
slices through ``free_kv_row_segments``.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Sequence
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from fuzz.common.compat import code_qualname

from ..stubs import StandInMissing
from .batch import ReqToTokenPool, ScheduleBatch, Strict, TreeCache, model_config, sampling_info
from .context import Settings
from .releases import Where
from .request import LAYOUTS, RequestStandIn
from .rows import Rows

STRICT_MEM_CHECK = "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE"


def free_kv_row(pool: Any, allocator: Any) -> Callable[[Any, list[tuple[int, int]]], None]:
    """The tree cache's ``free_kv_row(kv, ranges)``: the allocator's own ``free`` of each row slice."""

    def free(kv: Any, ranges: list[tuple[int, int]]) -> None:
        row = pool.req_to_token[kv.req_pool_idx]
        for start, end in ranges:
            if start < end:
                allocator.free(row[start:end])  # int32: SGLang passes req_to_token slices [cite: tail-free-row-slice]

    return free


def _scheduler(runtime: Any, cfg: ServingConfig, batch: Any, allocator: Any, pool: Any, tree: Any) -> Strict:
    checker = runtime.release.checker
    cls = runtime.resolve(Where(checker.module, checker.name.partition(".")[0]))
    owning = cls.__dict__.get("_requests_owning_rows")
    sched = Strict(
        "scheduler (SchedulerInvariantChecker)",
        req_to_token_pool=pool,
        token_to_kv_pool_allocator=allocator,
        tree_cache=tree,
        # The scheduler hands the checker its own page_size, the scheduled one (``get_schedule().page_size``
        # [cite: scheduler-page-size] [cite: checker-handed-page-size]). Through 0.5.20 the checker divides slot
        # ids by it [cite: checker-divides-by-server-page], so under DCP, whose free list counts page_size * dcp
        # pages, it reports use-after-free on a healthy pool; 0.5.21+ divide by the allocator's page
        # [cite: checker-divides-by-allocator-page].
        page_size=cfg.page_size,
        get_last_batch=lambda: batch,
        get_running_batch=lambda: batch,
        get_chunked_req=lambda: None,
        count_memory_leak_warnings=0,
        count_req_pool_leak_warnings=0,
    )
    if owning is not None:
        sched.__dict__["_requests_owning_rows"] = owning.__get__(sched)
    return sched


def run_checker(
    runtime: Any,
    cfg: ServingConfig,
    rt: SpecRuntime | None,
    reqs: Sequence[RequestStandIn],
    rows: Rows,
    allocator: Any,
    settings: Settings | None,
) -> str:
    """SGLang's own ``_check_kv_page_invariants`` on the state after a step: "ok" or "violated: ..."."""
    base = settings or Settings()
    strict = Settings(
        base.attention_backend,
        base.prefill_attention_backend,
        base.decode_attention_backend,
        {**base.env, STRICT_MEM_CHECK: "1"},
    )
    pool = ReqToTokenPool(rows.req_to_token, runtime.pool_methods())
    tree = TreeCache(allocator, pool, cfg.page_size, free_kv_row(pool, allocator))
    batch = ScheduleBatch("batch", reqs=list(reqs), sampling_info=sampling_info(), model_config=model_config())
    check = runtime.resolve(runtime.release.checker)
    try:
        with runtime.bound(cfg, rt, f"sglang {runtime.release.version}'s KV-page invariant checker", strict):
            check(_scheduler(runtime, cfg, batch, allocator, pool, tree))
    except StandInMissing:
        raise
    except (AssertionError, ValueError) as e:
        return f"violated: {_failed(e, runtime)}"
    return "ok"


def _failed(exc: BaseException, runtime: Any) -> str:
    """The message, or for a bare ``assert`` its own statement and where (read back from linecache)."""
    if str(exc):
        return str(exc).splitlines()[0]
    tb, last = exc.__traceback__, None
    while tb is not None:
        if runtime.loader.sglang_name(tb.tb_frame.f_code.co_filename) is not None:
            last = tb
        tb = tb.tb_next
    if last is None:
        return type(exc).__name__
    code = last.tb_frame.f_code
    statement = linecache.getline(code.co_filename, last.tb_lineno).strip()
    return f"{statement} ({code_qualname(code)}, {runtime.loader.sglang_name(code.co_filename)} line {last.tb_lineno})"


def release_request(runtime: Any, cfg: ServingConfig, req: RequestStandIn, rows: Rows, allocator: Any) -> str:
    """Free a finished request's slots and row (see the module docstring); returns who freed what."""
    pool = ReqToTokenPool(rows.req_to_token, runtime.pool_methods())
    tree = TreeCache(allocator, pool, cfg.page_size, free_kv_row(pool, allocator))
    committed, allocated, row = req.committed, req.allocated, req.pool_idx
    protected = int(req.kv.cache_protected_len if "cache_protected_len" in _kv(req) else req.cache_protected_len)
    tail = runtime.release.tail_free
    how = []
    with runtime.bound(cfg, cfg.launch_runtime, f"freeing a request on sglang {runtime.release.version}"):
        if tail is not None:
            runtime.resolve(tail)(req, committed, allocated, tree)
            how.append(f"tail [{committed}, {allocated}) by SGLang's {tail.name} ({tail.cite()})")
            end = committed
        else:
            end = allocated
        if protected < end:
            # The committed part: freed by the tree cache's cache_finished_req in SGLang (not executed).
            allocator.free(rows.req_to_token[row, protected:end])
            how.append(f"[{protected}, {end}) by the harness (allocator.free)")
    req.allocated = 0
    return "; ".join(how) or "nothing to free"


def _kv(req: RequestStandIn) -> dict[str, int]:
    return LAYOUTS[req.release].on_kv


def prefill(runtime: Any, cfg: ServingConfig, req: RequestStandIn, rows: Rows, allocator: Any, length: int) -> None:
    """Give a request ``length`` tokens of KV as a prefill leaves it (the harness's, not SGLang's extend path).

    The allocator's own ``alloc`` (whole pages for the paged one [cite: paged-alloc]) hands
    out the slots, written into ``[0, length)`` of the row; then kv_committed_len = kv_allocated_len =
    length, as ``alloc_for_extend`` leaves them [cite: alloc-for-extend-lengths].
    """
    page = int(allocator.page_size)
    need = -(-length // page) * page
    with runtime.bound(cfg, cfg.launch_runtime, f"prefill on sglang {runtime.release.version}'s allocator"):
        slots = allocator.alloc(need)
    if slots is None:
        raise StandInMissing(f"prefill of {length} tokens: the allocator is out of memory (size it larger)")
    rows.req_to_token[req.pool_idx, :length] = slots[:length].to(rows.req_to_token.dtype)
    req.committed = length
    req.allocated = length
