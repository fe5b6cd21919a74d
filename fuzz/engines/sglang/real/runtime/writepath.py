"""One decode step on SGLang's own code: the release's entry point, allocator and kernel, on the caller's rows.

``decode_step(runtime, cfg, rt, reqs, rows, allocator)`` builds the batch
SGLang's entry is handed (``batch``), calls the highest real entry point of
the step's kind (``releases``: ``spec_prepare_for_decode`` 0.5.15+,
``prepare_for_decode`` of the draft input before, ``alloc_for_decode``
without speculation) under a time bound, and returns a ``StepResult``:
per request the new kv_allocated_len / kv_committed_len, the guard of
SGLang's that stopped the step if one did, what SGLang raised otherwise, the
SGLang functions entered, the guard rows' state and SGLang's own invariant
checker's verdict (``checks``).  The caller diffs ``rows`` before/after
(``rows.changed_outside``).

Not owned by the entry points, so exposed as hooks for the harness:
``after_decode`` (what ``ScheduleBatch.prepare_for_decode`` adds after the
non-speculative ``alloc_for_decode``, applied by ``decode_step``),
``verify`` (the accept: ``kv_committed_len += accepted``; 0.5.13-0.5.14's
resolve first takes back the +1 their prepare pre-claims), and the overlap
order (``OVERLAP_ORDER``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from allocator_model.config import ServingConfig, SpecRuntime
from fuzz.common.compat import code_qualname
from fuzz.engines.sglang.records import record
from fuzz.targets.base import TargetError

from ..stubs import StandInMissing
from .batch import ReqToTokenPool, ScheduleBatch, Strict, TreeCache, model_config, sampling_info
from .bounds import Entered, SGLangTimeout
from .checks import free_kv_row, run_checker
from .context import Settings
from .loaded import SGLangRuntime
from .ownership import HandOuts, Window, free_pages, handed_out, ownership_problem
from .releases import (
    DECODE,
    DFLASH,
    EAGLE,
    EAGLE_GUARD_SAYS,
    UNO,
    UNO_GUARD_SAYS,
    Release,
    Where,
    kind_of,
)
from .request import RequestStandIn
from .rows import Rows, Span
from .standins import captured_logs

EAGLE_GUARD, UNO_GUARD = "eagle-tree-row", "uno-row"
# How each guard's message starts ([cite: eagle-tree-row-assert], [cite: uno-row-guard]).
GUARD_WORDS = {EAGLE_GUARD: EAGLE_GUARD_SAYS, UNO_GUARD: UNO_GUARD_SAYS}
# The order the scheduler runs a decode step's pieces in, overlap on and off. With overlap
# (managers/scheduler.py ``event_loop_overlap`` [cite: scheduler-overlap-loop]) batch N+1 is built
# (prepare_for_decode inside get_next_batch_to_run [cite: overlap-builds-next-batch]) and launched
# [cite: overlap-launches-batch] before batch N's result is processed [cite: overlap-processes-last-batch]
# (its verify commits the accepted tokens), so kv_committed_len lags the device by one accept run.
OVERLAP_ORDER = {
    True: ("decode_step(batch N+1)", "verify(batch N, accepted)"),
    False: ("verify(batch N, accepted)", "decode_step(batch N+1)"),
}


class StepTimeout(TargetError):
    """A call into SGLang's code ran past its time bound (one line naming the function)."""


@dataclass
class RequestOutcome:
    rid: Any
    row: int
    committed_before: int
    allocated_before: int
    kv_committed_len: int
    kv_allocated_len: int

    @property
    def window(self) -> tuple[int, int, int]:
        """(row, cur, nxt): the columns this step's writer owns."""
        return self.row, self.allocated_before, max(self.allocated_before, self.kv_allocated_len)


@dataclass
class GuardStop:
    name: str  # EAGLE_GUARD / UNO_GUARD
    where: str  # the guard's ``Where.cite`` ("<release> srt/<path>.py <line>"), or "<module> line <n>"
    message: str

    def __str__(self) -> str:
        return f"stopped by guard {self.name} ({self.where}): {self.message}"


@dataclass
class StepResult:
    version: str
    origin: str
    algorithm: str | None
    kind: str  # releases.EAGLE / DFLASH / UNO / DECODE
    entry: str  # the entry called, cited
    requests: list[RequestOutcome]
    guard: GuardStop | None = None
    raised: str | None = None  # what SGLang's code raised otherwise (a finding, not a harness crash)
    entered: list[str] = field(default_factory=list)
    checker: str | None = None  # None: not run; "ok"; "violated: ..."
    guard_spans: list[Span] = field(default_factory=list)  # writes that reached the guard rows
    seconds: float = 0.0
    logs: list[str] = field(default_factory=list)  # SGLang's warnings/errors during the step
    handed: HandOuts = field(default_factory=HandOuts)  # what the allocator handed out and took back
    ownership: str | None = None  # the first slot not where the allocator's hand-outs put it (``ownership``)

    @property
    def windows(self) -> list[tuple[int, int, int]]:
        return [r.window for r in self.requests]

    def confirmed(self) -> str:
        return f"confirmed on sglang {self.version}'s own write path: {' -> '.join(self.entered)}"


def _innermost(exc: BaseException, runtime: SGLangRuntime) -> tuple[str, str, int] | None:
    found = None
    tb = exc.__traceback__
    while tb is not None:
        module = runtime.loader.sglang_name(tb.tb_frame.f_code.co_filename)
        if module is not None:
            found = (module, code_qualname(tb.tb_frame.f_code), tb.tb_lineno)
        tb = tb.tb_next
    return found


def _guard(exc: BaseException, runtime: SGLangRuntime) -> GuardStop | None:
    """Which of SGLang's guards raised ``exc``: its type, function and statement line (a multi-line statement)."""
    where = _innermost(exc, runtime)
    rel = runtime.release
    text = str(exc).splitlines()[0] if str(exc) else ""
    guards = ((EAGLE_GUARD, rel.eagle_guard, AssertionError), (UNO_GUARD, rel.uno_guard, RuntimeError))
    for name, guard, kind in guards:
        if guard is None or where is None or not isinstance(exc, kind):
            continue
        module, qualname, line = where
        at_line = guard.line <= line <= guard.line + 3
        # A tree off the table (a checkout) keeps the guard's function and words, not its line.
        if module == guard.module and qualname == guard.name and (at_line or text.startswith(GUARD_WORDS[name])):
            return GuardStop(name, guard.cite() if at_line else f"{module} line {line}", text)
    return None


def _raised_text(exc: BaseException, runtime: SGLangRuntime) -> str:
    where = _innermost(exc, runtime)
    at = f" in {where[1]} ({where[0]} line {where[2]})" if where else ""
    return f"{type(exc).__name__}{at}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _spec_info(runtime: SGLangRuntime, kind: str, reqs: Sequence[RequestStandIn], rt: SpecRuntime | None) -> Any:
    """The draft input SGLang's worker carries, built with SGLang's own classes."""
    if kind == DFLASH:
        cls = runtime.resolve(Where(runtime.release.entries[DFLASH].module, "DFlashDraftInputV2"))
        return cls.create_idle_input("cpu")  # its own constructor [cite: dflash-create-idle-input]
    if kind == UNO:
        cls = runtime.resolve(Where(runtime.release.entries[UNO].module, "UnoDraftInput"))
        committed = [r.committed for r in reqs]
        assert rt is not None
        return cls(  # one seed token and frontier per request (it checks the counts [cite: uno-checks-seed-counts])
            bonus_tokens=torch.zeros(len(reqs), dtype=torch.int64),
            new_seq_lens=torch.tensor(committed, dtype=torch.int64),
            forward_width=rt.num_draft_tokens,  # >= 1 [cite: uno-forward-width-positive]; prepare never reads it
        )
    return Strict("spec_info")  # the EAGLE family's prepare reads nothing of it


def build_batch(
    runtime: SGLangRuntime,
    cfg: ServingConfig,
    rt: SpecRuntime | None,
    reqs: Sequence[RequestStandIn],
    rows: Rows,
    allocator: Any,
    seq_lens: Sequence[int] | None = None,
) -> ScheduleBatch:
    """The ``ScheduleBatch`` stand-in of one decode step (``batch``); ``seq_lens`` default: kv_committed_len."""
    pool = ReqToTokenPool(rows.req_to_token, runtime.pool_methods())
    tree_cache = TreeCache(allocator, pool, cfg.page_size, free_kv_row(pool, allocator))
    lens = list(seq_lens) if seq_lens is not None else [r.committed for r in reqs]
    indices = torch.tensor([r.pool_idx for r in reqs], dtype=torch.int64)
    seq = torch.tensor(lens, dtype=torch.int64)
    kind = kind_of(None if cfg.speculative_algorithm is None else str(cfg.speculative_algorithm))
    return ScheduleBatch(
        "batch",
        reqs=list(reqs),
        req_to_token_pool=pool,
        token_to_kv_pool_allocator=allocator,
        tree_cache=tree_cache,
        device="cpu",
        req_pool_indices=indices,
        req_pool_indices_cpu=indices.clone(),
        seq_lens=seq,
        seq_lens_cpu=seq.clone(),
        orig_seq_lens=seq.clone(),
        seq_lens_sum=int(seq.sum()),
        spec_algorithm=runtime.speculative_algorithm(cfg.speculative_algorithm),
        spec_info=_spec_info(runtime, kind, reqs, rt),
        sampling_info=sampling_info(),
        model_config=model_config(),
        hisparse_coordinator=None,
        enable_overlap=cfg.enable_overlap,
        is_spec_v2=True,  # EAGLE/EAGLE3/STANDALONE (the kinds it runs here) [cite: is-spec-v2] [cite: supports-spec-v2]
    )


def _call_entry(runtime: SGLangRuntime, rel: Release, kind: str, batch: ScheduleBatch) -> str:
    if kind == DECODE:
        entry = rel.entries[DECODE]
        runtime.resolve(entry)(batch, token_per_req=1)
        return entry.cite()
    if rel.dispatcher is not None:
        runtime.resolve(rel.dispatcher)(batch)
        return rel.dispatcher.cite()
    entry = rel.entries[kind]
    if kind == EAGLE:  # 0.5.13-0.5.14: the mixin's method, on the (stand-in) draft input
        runtime.resolve(entry)(batch.spec_info, batch)
    else:
        batch.spec_info.prepare_for_decode(batch)
    return entry.cite()


def after_decode(runtime: SGLangRuntime, reqs: Sequence[RequestStandIn]) -> None:
    """What ``ScheduleBatch.prepare_for_decode`` adds per request after ``alloc_for_decode``: the fields it increments,
    read from the release's code (its record's ``after_decode``; that function is not executed): the lengths
    ``alloc_for_decode`` does not grow itself [cite: decode-grows-both-lengths]."""
    for name in record(runtime.release.version)["after_decode"]:
        for r in reqs:
            if name == "kv_committed_len":
                r.committed += 1
            elif name == "kv_allocated_len":
                r.allocated += 1
            else:
                r.decode_batch_idx += 1


def verify(runtime: SGLangRuntime, req: RequestStandIn, accepted: int, preclaimed: bool | None = None) -> None:
    """The verify step's commit of ``accepted`` tokens (the harness's; no entry point owns it).

    A release whose EAGLE prepare pre-claims the bonus slot (``kv_committed_len += 1``: "resolve subtracts 1"
    [cite: eagle-v2-preclaims-bonus]; its record's ``eagle_preclaims_bonus``) takes it back at the accept
    first; its DFLASH prepare does not.  ``preclaimed``: whether the step's prepare did (None: the release's
    EAGLE path's rule).
    """
    if preclaimed is None:
        preclaimed = bool(record(runtime.release.version)["eagle_preclaims_bonus"])
    if preclaimed:
        req.committed -= 1
    req.committed += accepted


def decode_step(
    runtime: SGLangRuntime,
    cfg: ServingConfig,
    rt: SpecRuntime | None,
    reqs: Sequence[RequestStandIn],
    rows: Rows,
    allocator: Any,
    *,
    settings: Settings | None = None,
    seq_lens: Sequence[int] | None = None,
    check: bool = True,
    trace: bool = True,
) -> StepResult:
    """One decode step of ``reqs`` on SGLang's own path (see the module docstring).

    ``check``: run SGLang's own invariant checker after the step (``StepResult.checker``).
    ``trace``: record the SGLang functions entered (``StepResult.entered``); it roughly triples the
    cost of a step (a global trace function sees every frame triton's interpreter makes), so a
    campaign may leave it off and re-run a finding's step with it on.
    """
    rel = runtime.release
    algorithm = None if cfg.speculative_algorithm is None else str(cfg.speculative_algorithm)
    kind = kind_of(algorithm)
    if algorithm in rel.unsupported:
        raise StandInMissing(f"sglang {rel.version} has no {algorithm} decode entry: {rel.unsupported[algorithm]}")
    if kind not in rel.entries:
        raise StandInMissing(f"sglang {rel.version} has no {kind} decode entry")
    if kind != DECODE and rt is None:
        raise TargetError("a speculative step needs its run-time shape rt (SpecRuntime)")
    before = [(r.committed, r.allocated) for r in reqs]
    entered = Entered(runtime.loader.sglang_name)
    result = StepResult(runtime.version, runtime.origin, algorithm, kind, rel.entries[kind].cite(), [])
    start = time.perf_counter()
    what = f"sglang {rel.version}'s {kind} decode step"
    snapshot, free_before = rows.snapshot(), free_pages(allocator)
    try:
        with runtime.bound(cfg, rt, what, settings), captured_logs(runtime.loader.prefix) as logs:
            result.logs = logs
            batch = build_batch(runtime, cfg, rt, reqs, rows, allocator, seq_lens)
            with entered.recording() if trace else contextlib.nullcontext(), handed_out(allocator) as handed:
                result.handed = handed
                result.entry = _call_entry(runtime, rel, kind, batch)
            if kind == DECODE:
                after_decode(runtime, reqs)
    except SGLangTimeout as e:
        raise StepTimeout(str(e)) from None
    except StandInMissing as e:
        raise StandInMissing(f"{what}: {e}") from None
    except TargetError:
        raise
    except Exception as e:  # noqa: BLE001 - what SGLang's code raises is the observation
        result.guard = _guard(e, runtime)
        if result.guard is None:
            result.raised = _raised_text(e, runtime)
    result.seconds = time.perf_counter() - start
    result.entered = [n for n in entered.names if "<" not in n]
    result.requests = [
        RequestOutcome(r.rid, r.pool_idx, c, a, r.committed, r.allocated)
        for r, (c, a) in zip(reqs, before, strict=True)
    ]
    result.guard_spans = rows.guard_spans()
    if result.guard is None and result.raised is None:
        windows = [Window(r.rid, *r.window) for r in result.requests]
        page = int(allocator.page_size)
        result.ownership = ownership_problem(
            snapshot, rows.snapshot(), windows, result.handed, page, free_before, rows.width, free_pages(allocator)
        )
    if rows.guard_exhausted():
        raise TargetError(
            f"{what} wrote to the last guard column: the write may have gone past the tensor "
            f"(process memory): give Rows more guard_rows (now {rows.guard_rows})"
        )
    if check and rel.checker is not None and not runtime.not_loaded.get(rel.checker.module):
        result.checker = run_checker(runtime, cfg, rt, reqs, rows, allocator, settings)
    return result


# The batch ``batch_ownership`` decodes: (row, kv length) per request, in batch order. Rows out of order and
# lengths on both sides of a page boundary, so that a slot handed to one request and written to another (a
# program id taken for a row, one request's offset into the hand-outs taken for another's) shows.
PROBE_ROWS = (2, 3, 1)


def probe_lengths(page: int, width: int) -> tuple[int, ...]:
    """Three different kv lengths, each well inside a row of ``width`` (a page of ``page`` slots)."""
    wanted = (page + 2, 1, max(2, page))  # not in order (a sort of the batch shows); a full page to fill at page P
    return tuple(min(n, max(1, width // 4)) for n in wanted)


def batch_ownership(
    runtime: SGLangRuntime, cfg: ServingConfig, rt: SpecRuntime | None, width: int, page: int
) -> StepResult | None:
    """One decode step of three requests in one batch on SGLang's own path, slot ownership judged
    (``StepResult.ownership``); None where the deployment's allocator cannot be built or prefilled here.

    The decode scenarios decode one request at a time: this is the step where one request's slots could land
    in another's row.
    """
    from .checks import prefill

    lengths = probe_lengths(page, width)
    rows = Rows(len(PROBE_ROWS), width, guard_rows=1 + -(-4 * (width + 2 * page) // width))
    size = len(PROBE_ROWS) * (width + 2 * page) + 8 * page
    try:
        allocator = runtime.allocator(cfg, -(-size // page) * page, page=page)
    except StandInMissing:
        return None
    reqs = [runtime.request(row, 0, 0, rid=f"r{row}") for row in PROBE_ROWS]
    for req, n in zip(reqs, lengths, strict=True):
        prefill(runtime, cfg, req, rows, allocator, n)
    return decode_step(runtime, cfg, rt, reqs, rows, allocator, check=False, trace=False)
