"""A backend's CUDA-graph page tables, built by SGLang's own code: ``graph_builds`` runs one request through every
mode.

The backend's class (FA3: ``FlashAttentionBackend``, and ``FlashAttentionMultiStepBackend`` for the draft's decode
steps; trtllm_mha: ``TRTLLMHAAttnBackend``, a FlashInfer backend, and ``TRTLLMHAAttnMultiStepDraftBackend``;
each backend's ``backends.GraphBackend`` names them) is built by its own ``__init__`` from the release's files (its
modules, ``CheckedBackend.modules``, in a loader of their own beside the write path's, with the names only the
backends take answered by ``attention_standins``), its buffers by its own ``init_cuda_graph_state``; a mode
is captured as the graph runner captures it (``init_forward_metadata_out_graph(in_capture=True)``, then
``init_forward_metadata_in_graph``, the part the graph holds) and replayed as a replay runs it (the same two calls
on the request's batch); triton's draft decode, whose one launch fills every step's row, is its multi-step backend's
own (``attention_draft``).  Every triton kernel runs under triton's interpreter (``compiled_kernels()`` is empty,
checked at load).

Each request runs alone, in a bucket of one (captured at batch size 1) with guard rows below it in the buffer,
which is filled with a sentinel before each replay.  Triton's interpreter runs a kernel's programs in order, so a
row's spill into the row below would be overwritten by that row's own store (on a GPU the two race): a spill shows
only from the bucket's last row with nothing but guard rows below it.  The builders are row-independent (each
program reads only its own row's inputs), so a request's build alone is its build in any batch.  The diff gives
``written`` (the prefix of its row it changed), ``spilled`` (how far past the row's end, in flat columns, it wrote)
and the published ``cache_seqlens``; the width is the buffer's, as SGLang allocated it.

``req_to_token`` is ``row_width`` wide, as the target sizes it: SGLang's padding row 0, the request in row 1 (slot
ids page-aligned, so slot // page is the page), and other requests' rows below it.  The builders read the
request's row up to the length they publish, which can pass its width: such a read lands in the next row, as it
does in SGLang, and the rows below cover the longest (never a read outside the tensor under the interpreter).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import torch

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.guards import Guard
from allocator_model.page_tables import AttentionBackend, Build, Mode, graph_buffer, pages, steps, stored_length
from fuzz.targets.base import TargetError

from ...backends import GRAPH_BACKENDS, KV_CACHE_QUANT, GraphBackend, modes_of, modules_of
from ..stubs import StandInMissing
from .attention_draft import DraftRows, triton_names
from .attention_inputs import (
    SENTINEL,
    BuildRefused,
    forward_batch,
    graph_runner,
    kv_pool,
    run_graph,
    untouched_if_refused,
)
from .attention_standins import AttentionStandIns, on_the_stand_in_gpu
from .bounds import SGLangTimeout, bounded
from .context import Settings
from .flashinfer_standins import flashinfer_names
from .loaded import MEMORY_POOL, SGLangRuntime
from .standins import slice_definitions

FORWARD_MODE = ("sglang.srt.model_executor.forward_batch_info", "ForwardMode")
# A bucket holds builds publishing up to C + HEADROOM tokens (the device lengths near the context limit, C - 4 + lag,
# plus a verify's D): one bucket per configuration; a longer one builds a bigger bucket.
HEADROOM = 64
GUARDS = frozenset(g.value for g in Guard)  # the checks of SGLang's a refused replay may stop at


def graph_builds(
    runtime: SGLangRuntime,
    backend: AttentionBackend,
    cfg: ServingConfig,
    rt: SpecRuntime | None,
    seq_len: int,
    row_width: int,
) -> list[Build]:
    """SGLang's CUDA-graph builders of ``backend`` on one request at device length ``seq_len`` (its
    ``req_to_token`` row ``row_width`` wide), one ``Build`` per mode of ``page_tables.steps`` in its order (topk
    > 1: none)."""
    if seq_len < 1 or row_width < 1:
        raise ValueError(f"graph_builds needs seq_len >= 1 and row_width >= 1, not {seq_len}, {row_width}")
    own = modes_of(runtime.release.version, backend)
    modes = [(mode, step) for mode, step in steps(cfg, rt, backend) if mode in own]
    if not modes:
        return []
    loaded = runtime.attention.get(backend)
    if loaded is None:
        try:
            spec = GRAPH_BACKENDS.get(backend)
            if spec is None:
                raise TargetError(f"this runtime does not build {backend.label}'s backend")
            loaded = GraphBuilders(runtime, spec)
        except (TargetError, StandInMissing) as e:  # remembered: every later call says the same
            loaded = e
        runtime.attention[backend] = loaded
    if isinstance(loaded, Exception):
        raise loaded
    builders: GraphBuilders = loaded
    return builders.builds(cfg, rt, modes, seq_len, row_width)


class GraphBuilders:
    """One runtime's modules of a backend, executed, and its backends per configuration (``Bucket``)."""

    def __init__(self, runtime: SGLangRuntime, spec: GraphBackend) -> None:
        self.runtime, self.spec = runtime, spec
        wanted = modules_of(runtime.release.version)[spec.backend]
        modules = tuple(m for m in wanted if runtime.tree.module_member(m) is not None)
        if spec.module not in modules:
            raise TargetError(f"{runtime.origin} has no {spec.module.replace('.', '/')}.py to execute")
        self.standins = AttentionStandIns(runtime.standins, spec.capability)
        self.standins.add(triton_names(self.standins))
        self.standins.add(flashinfer_names())
        self.loader = runtime.side_loader(modules, self._answer)
        self.buckets: dict[tuple[Any, ...], Bucket] = {}
        for dotted in modules:
            try:
                with (
                    bounded(f"importing {dotted} of {runtime.origin}", runtime.timeout_s, self.loader.sglang_name),
                    on_the_stand_in_gpu(spec.capability) if spec.names_cuda else contextlib.nullcontext(),
                ):
                    self.loader.module(dotted)
            except SGLangTimeout as e:
                raise TargetError(str(e)) from None
        self.standins.scratch_helpers({m: self.loader.modules[m] for m in modules if m in self.loader.executed})
        compiled = self.loader.compiled_kernels()
        if compiled:  # triton read TRITON_INTERPRET as unset at a @triton.jit: they would run compiled on CPU tensors
            raise TargetError(f"{runtime.origin}: {compiled[0]} is a compiled triton kernel, not an interpreted one")
        self._quant: tuple[Any, Any] | None = None
        quant = self.loader.modules.get(KV_CACHE_QUANT)
        if quant is not None and KV_CACHE_QUANT in self.loader.executed:
            method = "KVCache.get_kv_cache_quant_method"
            found = slice_definitions(runtime.tree, MEMORY_POOL, (method,), {"Any": Any, "__name__": "memory_pool"})
            self._quant = (quant.UnquantizedKVCacheMethod, found[method])

    def kv_pool(self) -> Any:
        """A runner's KV pool (``attention_inputs.kv_pool``): its quant method SGLang's own where the release has
        one (0.5.16+)."""
        if self._quant is None:
            return kv_pool(None, None)
        method, get = self._quant
        return kv_pool(method(), get)

    def _answer(self, module: str, name: str) -> tuple[bool, Any]:
        """A name of a module the write path executed is that module's own (the same tree, already run: spec_info's
        ``SpeculativeAlgorithm``, spec_utils' ``resolve_num_tokens_per_req``); else the stand-ins'
        (``attention_standins``)."""
        executed = self.runtime.loader.modules.get(module)
        if module in self.runtime.loader.executed and executed is not None and name in executed.__dict__:
            return True, executed.__dict__[name]
        return self.standins.answer(module, name)

    def sglang(self, module: str, name: str) -> Any:
        """An SGLang name as the backend's modules see it (an executed module's, or its stand-in's)."""
        return getattr(self.loader.module(module), name)

    def call(
        self, cfg: ServingConfig, rt: SpecRuntime | None, what: str, fn: Callable[[], Any], replay: bool = False
    ) -> Any:
        """A call into SGLang, ``cfg`` published and the time bounded; what SGLang raises is the target's failure,
        but an ``assert`` of a replay, SGLang's own check on the request (``BuildRefused``)."""
        runtime = self.runtime
        try:
            with (
                runtime.context.bound(cfg, rt, Settings(attention_backend=self.spec.backend.flag)),
                bounded(what, runtime.timeout_s, self.loader.sglang_name),
                on_the_stand_in_gpu(self.spec.capability) if self.spec.names_cuda else contextlib.nullcontext(),
            ):
                return fn()
        except (StandInMissing, TargetError):
            raise
        except SGLangTimeout as e:
            raise TargetError(str(e)) from None
        except AssertionError as e:
            said = f"{runtime.origin} {self.spec.backend.label} {what}: SGLang's assert: {e}".splitlines()[0]
            check = traceback.extract_tb(e.__traceback__)[-1].name  # the function whose assert fired
            if not replay or check not in GUARDS:  # not a check of the request's this engine knows
                raise TargetError(said if replay else said + f" (in {check})") from None
            raise BuildRefused(said, check) from None
        except Exception as e:  # noqa: BLE001 - SGLang's own failure on this input: the target cannot run it
            raise TargetError(
                f"{runtime.origin} {self.spec.backend.label} {what} raised {type(e).__name__}: {e}".splitlines()[0]
            ) from None

    def builds(
        self, cfg: ServingConfig, rt: SpecRuntime | None, modes: list[tuple[Mode, int | None]], seq: int, width: int
    ) -> list[Build]:
        # at least what a mode publishes (sizes the guards: the builds measure the real length)
        reach = seq + (0 if rt is None else max(rt.num_draft_tokens, rt.num_steps))
        key = (
            cfg.context_len,
            cfg.page_size,
            cfg.attn_dcp_size,
            cfg.kv_pool,
            cfg.speculative_algorithm,
            cfg.topk,
            rt,
            width,
        )
        bucket = self.buckets.get(key)
        if bucket is None or not bucket.holds(reach):
            bucket = self.buckets[key] = Bucket(self, cfg, rt, width, max(reach, cfg.context_len + HEADROOM))
        if self.spec.backend.fills_every_draft_step:  # one replay fills every draft step's row (``attention_draft``)
            return bucket.draft.builds(modes, seq)
        return [self._run(bucket, mode, step, seq, rt) for mode, step in modes]

    @staticmethod
    def _run(bucket: Bucket, mode: Mode, step: int | None, seq: int, rt: SpecRuntime | None) -> Build:
        """One mode's build; one SGLang's own assert refuses is a build it stopped (nothing written, nothing read)."""
        try:
            return bucket.run(mode, step, seq)
        except BuildRefused as e:
            w = int(bucket.graph(mode, step).buffer.shape[1])
            backend = bucket.owner.spec.backend
            length = stored_length(mode, step, seq, rt, backend)  # what it asked
            return Build(mode, step, graph_buffer(backend, mode), w, bucket.cfg.page_size, 0, 0, length, e.check)


@dataclass
class Graph:
    """One mode captured on its backend: the backend and the buffer a replay fills."""

    backend: Any
    buffer: torch.Tensor


@dataclass
class Bucket:
    """The backends of one configuration, their graph state for ``1 + guard`` rows, each mode captured at batch
    size 1, and ``req_to_token``: sized for builds that publish up to ``reach`` tokens."""

    owner: GraphBuilders
    cfg: ServingConfig
    rt: SpecRuntime | None
    width: int  # req_to_token's row width
    reach: int  # the longest length a build may publish (and read) from the row's start
    graphs: dict[tuple[Mode, int | None], Graph] = field(default_factory=dict)
    backends: dict[str, Any] = field(default_factory=dict)
    failure: Exception | None = None  # a backend that could not be built or captured: every call says so

    def __post_init__(self) -> None:
        p = self.cfg.page_size
        reads = self.reach + p  # the builders read whole pages' first slots
        rows = 2 + -(-max(0, reads - self.width) // self.width) + 1  # padding, the request, the rows its reads reach
        span = -(-self.width // p) * p  # whole pages per row: every row's slots start a page
        self.pristine = torch.arange(rows, dtype=torch.int32)[:, None] * span + torch.arange(self.width)[None, :]
        self.pristine = self.pristine.to(torch.int32)
        self.pristine[0] = 0  # SGLang's padding row
        self.req_to_token = self.pristine.clone()
        # Whole guard rows below the bucket's row: the writes a length-masked builder makes past the row end by
        # ``pages(reach)``; one spare row more, which must stay untouched (``_diff``).
        self.guard = -(-pages(self.reach, p) // pages(self.cfg.context_len, p)) + 1
        self.draft = DraftRows(self)

    def holds(self, reach: int) -> bool:
        return reach <= self.reach

    def backend(self, mode: Mode, step: int | None) -> Any:
        """The backend a mode runs on, as SGLang builds it (FA3's classes named; trtllm_mha's the same way): the
        target's ``FlashAttentionBackend(runner)`` for decode and verify [cite: fa3-target-backend], the draft
        worker's ``FlashAttentionMultiStepBackend(runner, topk, steps)``'s step ``step`` for a draft decode
        [cite: fa3-draft-decode-backend], the draft worker's ``FlashAttentionBackend(runner, skip_prefill=False)``
        for its extend [cite: fa3-draft-extend-backend]."""
        draft = mode in (Mode.DRAFT_DECODE, Mode.DRAFT_EXTEND)
        name = {Mode.DRAFT_DECODE: "draft decode", Mode.DRAFT_EXTEND: "draft extend"}.get(mode, "target")
        if name not in self.backends:
            runtime, cfg, rt = self.owner.runtime, self.cfg, self.rt
            allocator = runtime.allocator(cfg, 64 * runtime.allocator_page(cfg))  # the backend only asks its class
            spec = self.owner.spec
            module = self.owner.loader.module(spec.module)

            def make() -> Any:
                runner = graph_runner(self.owner, cfg, self.req_to_token, draft, allocator)
                if mode is Mode.DRAFT_DECODE:
                    assert rt is not None
                    return getattr(module, spec.draft_steps_cls)(runner, cfg.topk, rt.num_steps)
                if mode is Mode.DRAFT_EXTEND:
                    return getattr(module, spec.cls)(runner, skip_prefill=False)
                return getattr(module, spec.cls)(runner)

            built = self.owner.call(cfg, rt, f"{name} backend of {runtime.origin}", make)
            # max_num_tokens: the bucket's rows times the tokens each step runs (D, or 1)
            tokens = (1 + self.guard) * max(1, rt.num_draft_tokens if rt is not None else 1)
            self.owner.call(
                cfg, rt, "init_cuda_graph_state", lambda: built.init_cuda_graph_state(1 + self.guard, tokens)
            )
            self.backends[name] = built
        built = self.backends[name]
        return built.attn_backends[step] if mode is Mode.DRAFT_DECODE else built

    def graph(self, mode: Mode, step: int | None) -> Graph:
        if self.failure is not None:
            raise self.failure
        if (mode, step) not in self.graphs:
            try:
                backend = self.backend(mode, step)
                capture_seq = int(backend.get_cuda_graph_seq_len_fill_value())
                capture = self.batch(mode, capture_seq, row=0)
                self.owner.call(self.cfg, self.rt, f"capture ({mode.value})", lambda: run_graph(backend, capture, True))
                self.graphs[mode, step] = Graph(backend, _buffer(backend, graph_buffer(self.owner.spec.backend, mode)))
            except (TargetError, StandInMissing) as e:
                self.failure = e
                raise
        return self.graphs[mode, step]

    def batch(self, mode: Mode, seq: int, row: int) -> Any:
        if mode is Mode.DRAFT_EXTEND and row:
            seq += self.rt.num_draft_tokens if self.rt is not None else 0
        forward_mode = self.owner.sglang(*FORWARD_MODE)
        fm = forward_mode.DRAFT_EXTEND_V2 if mode is Mode.DRAFT_EXTEND else forward_mode.TARGET_VERIFY
        fm = forward_mode.DECODE if mode in (Mode.DECODE, Mode.DRAFT_DECODE) else fm
        return forward_batch(fm, mode, self.rt, seq, row, self.pristine)

    def run(self, mode: Mode, step: int | None, seq: int) -> Build:
        g = self.graph(mode, step)
        batch = self.batch(mode, seq, row=1)
        self.req_to_token.copy_(self.pristine)
        g.buffer.fill_(SENTINEL)
        spec = self.owner.spec
        scheduled = self.owner.standins.mla_metadata
        scheduled.published = []
        replay = partial(run_graph, g.backend, batch, False)
        backend = untouched_if_refused(self.owner, self.cfg, self.rt, f"replay ({mode.value})", replay, (g.buffer,))
        metadata = getattr(backend, spec.metadata)
        buffer = graph_buffer(spec.backend, mode)
        where = f"{self.owner.runtime.origin} {spec.backend.label} {mode.value} ({buffer})"
        if getattr(metadata, spec.table).data_ptr() != g.buffer.data_ptr():
            raise TargetError(f"{where}: the replay's {spec.table} is another buffer")
        if not torch.equal(self.req_to_token, self.pristine):
            raise TargetError(f"{where}: the replay wrote req_to_token")
        written, spilled = self._diff(g.buffer, where)
        if spec.scheduled_lengths:
            if len(scheduled.published) != 1:
                raise TargetError(f"{where}: the replay scheduled {len(scheduled.published)} lengths, not its one")
            length = scheduled.published[0]
        else:
            lengths = getattr(metadata, spec.lengths)
            if lengths is None and spec.batch_lengths_if_none:
                lengths = batch.seq_lens
            if lengths is None:
                raise TargetError(f"{where}: the replay published no {spec.lengths}")
            length = int(lengths[0])
        foreign = self._foreign(g.buffer, min(written, pages(length, self.cfg.page_size)))
        width = int(g.buffer.shape[1])
        return Build(mode, step, buffer, width, self.cfg.page_size, written, spilled, length, None, foreign)

    def _foreign(self, buffer: torch.Tensor, used: int) -> int:
        """How many of the row's first ``used`` entries are not pages of the request's own ``req_to_token`` row
        (row 1: slots ``span + c`` for its ``width`` columns, so pages ``span / P`` to ``span / P + ceil(width /
        P)``): what the builder copied from elsewhere (the next request's row, read past its own)."""
        p = self.cfg.page_size
        first = int(self.pristine[1, 0]) // p
        row = buffer[0, :used].to(torch.int64)
        return int(((row < first) | (row >= first + pages(self.width, p))).sum())

    def _diff(self, buffer: torch.Tensor, where: str) -> tuple[int, int]:
        """(written, spilled): the cells the replay changed, which must be one flat run from the row's start."""
        width = int(buffer.shape[1])
        changed = torch.nonzero(buffer.reshape(-1) != SENTINEL).flatten()
        end = int(changed[-1]) + 1 if changed.numel() else 0
        if changed.numel() != end:
            raise TargetError(f"{where} changed {changed.numel()} cells, not the run of {end} from its row's start")
        if end > width * self.guard:  # into the spare guard row: it may have gone further, past the buffer
            raise TargetError(f"{where} wrote {end} columns from its row's start, through every guard row")
        return min(end, width), max(0, end - width)


def _buffer(backend: Any, name: str) -> torch.Tensor:
    """The buffer SGLang's ``name`` names (``target_verify_metadata['page_table']``, ``cuda_graph_kv_indices``),
    read off the backend."""
    attr, _, rest = name.partition("[")
    buffer = getattr(backend, attr)
    if rest:
        buffer = buffer.get(rest.strip("]'\""))
    if not isinstance(buffer, torch.Tensor) or buffer.dim() != 2:
        raise TargetError(f"the backend's {name} is no 2-D tensor")
    return buffer
