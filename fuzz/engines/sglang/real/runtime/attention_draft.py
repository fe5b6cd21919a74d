"""The draft-decode kv_indices of triton and FlashInfer (``TritonMultiStepDraftBackend.cuda_graph_kv_indices``,
``FlashInferMultiStepDraftBackend``'s, ``FlashInferMLAMultiStepDraftBackend``'s) built by SGLang's own code, one
replay filling every draft step's row (``attention.graph_builds`` on a backend that ``fills_every_draft_step``), and
the names triton's backend takes that the other backends' do not.  FlashInfer's step backends read their row through
FlashInfer's wrappers (``flashinfer_standins``: the dense decode wrapper, a buffer per wrapper, the first the step's
row; the MLA wrapper over the step's row itself); before the launch their multi-step backend asserts every step's
slots fit a row, which stops every step of the replay (``BuildRefused``).

The buffer is ``(S, draft_kv_indices_buffer_width(max_bs, topk, C))``, here from SGLang's ``init_cuda_graph_state(
max_bs=1, max_num_tokens=topk)``: a bucket of one request, the last of a full bucket (each request's entries start at
its own offset, so the last's end is the row's).  A replay (``init_forward_metadata_out_graph(in_capture=False)``,
then the part the graph holds) launches ``generate_draft_decode_kv_indices`` over the grid (S, 1, topk): program
(step s, request 0, branch 0) stores ``seq + s + 1`` slots from the start of row s, masked by that length alone, and
``kv_indptr[s][1]``, the end it publishes to step s's reader (``attn_backends[s]`` holds row s of both; no step
reads row S - 1, which is stored all the same).

Measuring the spills honestly.  Triton's interpreter runs the programs in grid order (step 0 first), so step s's
spill past row s's end lands at the start of row s + 1 and is then overwritten by step s + 1's own store (on a GPU
the two race): only the last step's spill stays visible, and only with room below the buffer (the interpreter stores
straight into the tensor's storage: a store past its end would corrupt this process's memory).  So after
``init_cuda_graph_state`` the backend's ``cuda_graph_kv_indices`` (and each step backend's row view of it) is
re-pointed, SGLang's values copied, at the first S rows of a larger tensor of the same width (the kernel's
``kv_indices_stride``, ``kv_indices_buffer.shape[1]``, unchanged), whose guard rows below take the last step's
spill; every row is filled with a sentinel before each replay.  Then, per step:

* written: the prefix of its row the replay changed (one flat run from the row's start);
* spilled: for the last step (S - 1) observed, the run from its row's start through the guard rows (into the spare
  last guard row is an error: it may have gone further); for the others derived, ``max(0, kv_indptr[s][1] - W)``:
  the end SGLang's kernel published for the step is the end of the range it stores.  The derivation is held to
  the observation on every replay: the last step's (written, spilled) computed both ways, and each other step's
  written from its published end, must agree, else the build refuses (``TargetError``);
* published: ``kv_indptr[s][1] - kv_indptr[s][0]`` for the steps a backend reads, 0 for row S - 1; where the step's
  kernel is planned over host lengths instead (FlashInfer MLA's, ``GraphBackend.scheduled_lengths``), the one
  request's length its replay planned (``_read``);
* foreign: how many of the first ``min(written, published)`` entries are not slots of the request's own
  ``req_to_token`` row.

The entries are token slots whatever the launch's page (``page_size`` 1 in the builds).  One replay measures every
step of a (configuration, length): kept per length.

The names triton's backend takes (``triton_names``, added to ``attention_standins``), each scoped to the module
SGLang defines it in: ``utils.common``'s AMD GPU probes (``is_gfx95_supported``, ``is_gfx942_supported``: False on
a build that is not ROCm's, every release's ``if torch.version.hip: ... else: return False``; the stand-in hardware
runs CUDA) and ``get_device_core_count()`` (the stand-in GPU's SMs, ``attention_standins.SM_COUNT``);
``configs/hybrid_arch``'s configs (None: the stand-in model is a dense decoder, no Mamba, GDN, KDA, lightning or
other linear-attention layers); ``forward_batch_info.build_inner_fb_view`` (SGLang's own, sliced: the namespace a
multi-step draft backend hands its step backends); ``model_executor/cuda_graph_config``'s names (SGLang's own,
sliced, asked of ``CudaGraphConfig()``, the CUDA-graph config SGLang declares and the launch leaves as it is: the
decode's graph "full"; only ``allow_bidirectional_attention_in_extend`` depends on them, an extend's switch no
page-table builder reads); ``get_exec()``/``get_schedule()``: the published bags with the launch's declared defaults
(``attention_inputs.LaunchDefaults``).
"""

from __future__ import annotations

import builtins
import dataclasses
import types
from collections.abc import Callable
from functools import cache, partial
from typing import Any

import torch

from allocator_model.page_tables import Build, Mode, graph_buffer, stored_length
from fuzz.targets.base import TargetError

from ..stubs import StandInMissing
from .attention_inputs import (
    SENTINEL,
    BuildRefused,
    LaunchDefaults,
    forward_batch,
    graph_runner,
    run_graph,
    untouched_if_refused,
)
from .attention_standins import FORWARD_BATCH_INFO, SM_COUNT, returning
from .inert import ABSENT
from .standins import PROBES, UTILS_MODULES, Sliced, slice_definitions

FORWARD_MODE = ("sglang.srt.model_executor.forward_batch_info", "ForwardMode")
DRAFT_INDPTR = "kv_indptr"  # the multi-step backend's (S, max_bs + 1) ends its kernel publishes, a row per step


def attribute_path(obj: Any, dotted: str) -> Any:
    """``obj``'s attribute at ``dotted`` (``forward_metadata.decode_wrappers.0``: a number indexes a sequence)."""
    for part in dotted.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


class DraftRows:
    """One configuration's multi-step draft backend (on its ``Bucket``'s ``req_to_token`` and runner), captured once,
    and every draft step's build per length, measured by one replay (module docstring)."""

    def __init__(self, bucket: Any) -> None:
        self.bucket = bucket
        self.backend: Any = None
        self.rows = torch.empty(0, dtype=torch.int64)  # the buffer's S rows and the guard rows below, (S + guard, W)
        self.steps = self.width = 0
        self.measured: dict[int, list[Build]] = {}
        self.failure: Exception | None = None  # a backend that could not be built or captured: every call says so
        self.fill = 1  # the length its capture ran at (SGLang's fill value)

    def builds(self, modes: list[tuple[Mode, int | None]], seq: int) -> list[Build]:
        """The builds of ``modes`` (draft decode steps) of one request at device length ``seq``; a replay SGLang's
        own assert refuses, builds it stopped (nothing written, nothing read)."""
        if seq not in self.measured:
            try:
                if isinstance(self.failure, BuildRefused) and seq < self.fill:  # refused at a longer length only
                    raise TargetError(f"{self.failure} (at the capture's {self.fill}: not a length of {seq})")
                self.measured[seq] = self._measure(seq)
            except BuildRefused as e:
                backend = self.bucket.owner.spec.backend
                buffer, rt = graph_buffer(backend, Mode.DRAFT_DECODE), self.bucket.rt
                asked = partial(stored_length, seq_len=seq, rt=rt, backend=backend)  # every step: none ran
                return [Build(m, s, buffer, self.width, 1, 0, 0, asked(m, s), e.check) for m, s in modes]
        by_step = {b.step: b for b in self.measured[seq]}
        return [by_step[step] for _, step in modes]

    def _capture(self) -> Any:
        """The draft worker's multi-step backend, built (``TritonMultiStepDraftBackend(runner, topk, S)``, FlashInfer's
        alike), its graph state made for a bucket of one and re-pointed (module docstring), captured as the graph
        runner captures it."""
        if self.failure is not None:
            raise self.failure
        if self.backend is not None:
            return self.backend
        bucket, owner = self.bucket, self.bucket.owner
        cfg, rt, spec, runtime = bucket.cfg, bucket.rt, owner.spec, owner.runtime
        try:
            allocator = runtime.allocator(cfg, 64 * runtime.allocator_page(cfg))  # the backend only asks its class
            module = owner.loader.module(spec.module)

            def make() -> Any:
                runner = graph_runner(owner, cfg, bucket.req_to_token, True, allocator)
                return getattr(module, spec.draft_steps_cls)(runner, cfg.topk, rt.num_steps)

            backend = owner.call(cfg, rt, f"draft decode backend of {runtime.origin}", make)
            # the graph runner's max_bs (here 1) and max_num_token: max_bs times a draft step's tokens (topk)
            owner.call(cfg, rt, "init_cuda_graph_state", lambda: backend.init_cuda_graph_state(1, cfg.topk))
            self._repoint(backend)
            self.fill = fill = int(backend.attn_backends[0].get_cuda_graph_seq_len_fill_value())
            capture = self.batch(fill, row=0)
            # a capture SGLang's own check refuses (a bucket of one at S >= C: FlashInfer's assert) refuses every
            # replay, each at a length of at least the fill's: what the check sums grows with the length
            # (``BuildRefused``, kept as the failure, builds every length stopped)
            owner.call(cfg, rt, "capture (draft_decode)", lambda: run_graph(backend, capture, True), replay=True)
        except (TargetError, StandInMissing) as e:
            self.failure = e
            raise
        self.backend = backend
        return backend

    def _repoint(self, backend: Any) -> None:
        """``cuda_graph_kv_indices`` (and each step backend's view of its row) moved to the first S rows of a
        tensor with guard rows below, SGLang's values copied."""
        buffer = getattr(backend, graph_buffer(self.bucket.owner.spec.backend, Mode.DRAFT_DECODE), None)
        steps = self.bucket.rt.num_steps
        if not isinstance(buffer, torch.Tensor) or buffer.dim() != 2 or buffer.shape[0] != steps:
            raise TargetError(f"the draft backend's cuda_graph_kv_indices is no tensor of its {steps} steps' rows")
        width = int(buffer.shape[1])
        guard = -(-max(0, self.bucket.reach - width) // max(1, width)) + 1  # the last step's spill, one spare row
        rows = torch.empty((steps + guard, width), dtype=buffer.dtype)
        rows[:steps] = buffer
        for i, step in enumerate(backend.attn_backends):
            own = getattr(step, "cuda_graph_kv_indices", None)
            listed = isinstance(own, list) and bool(own)  # FlashInfer's: a buffer per wrapper, its first the row
            view = own[0] if listed else own  # type: ignore[index]
            if not isinstance(view, torch.Tensor) or view.data_ptr() != buffer[i].data_ptr():
                raise TargetError(f"draft step {i}'s backend holds no view of row {i} of cuda_graph_kv_indices")
            if listed:
                own[0] = rows[i]  # type: ignore[index]
            else:
                step.cuda_graph_kv_indices = rows[i]
        backend.cuda_graph_kv_indices = rows[:steps]
        self.rows, self.steps, self.width = rows, steps, width

    def batch(self, seq: int, row: int) -> Any:
        """A draft decode's batch: ``ForwardMode.DECODE`` (the draft graph runner's), one request at ``seq`` in
        ``req_to_token`` row ``row``, its position ``seq`` (``seq_lens.repeat_interleave(topk)``)."""
        decode = self.bucket.owner.sglang(*FORWARD_MODE).DECODE
        return forward_batch(decode, Mode.DRAFT_DECODE, self.bucket.rt, seq, row, self.bucket.pristine)

    def _measure(self, seq: int) -> list[Build]:
        """One replay at ``seq``, every step's build (module docstring)."""
        backend = self._capture()
        bucket, owner = self.bucket, self.bucket.owner
        where = f"{owner.runtime.origin} {owner.spec.backend.label} draft_decode (cuda_graph_kv_indices)"
        batch = self.batch(seq, row=1)
        bucket.req_to_token.copy_(bucket.pristine)
        self.rows.fill_(SENTINEL)
        spec = owner.spec  # the step backends' metadata and the fields of it their kernel reads
        indptr = getattr(backend, DRAFT_INDPTR)
        indptr[:, 1].fill_(SENTINEL)  # what the kernel stores for the request: a store it skips shows
        if spec.scheduled_lengths:  # what each step's replay plans, none kept from the capture
            for step in backend.attn_backends:
                setattr(attribute_path(step, spec.metadata), spec.lengths, None)
        replay = partial(run_graph, backend, batch, False)
        untouched_if_refused(owner, bucket.cfg, bucket.rt, "replay (draft_decode)", replay, (self.rows, indptr[:, 1]))
        if not torch.equal(bucket.req_to_token, bucket.pristine):
            raise TargetError(f"{where}: the replay wrote req_to_token")
        if backend.cuda_graph_kv_indices.data_ptr() != self.rows.data_ptr():
            raise TargetError(f"{where}: the replay's kv_indices buffer is another one")
        planned = [self._read(i, step, indptr, where) for i, step in enumerate(backend.attn_backends)]
        buffer, out = graph_buffer(owner.spec.backend, Mode.DRAFT_DECODE), []
        for s in range(self.steps):
            start, end = int(indptr[s][0]), int(indptr[s][1])
            if end == SENTINEL or start != 0:
                raise TargetError(f"{where}: step {s}'s kv_indptr is [{start}, {end}), not one request's from 0")
            derived = (min(end, self.width), max(0, end - self.width))
            last = s == self.steps - 1
            observed = self._diff(s, last, where)
            if observed[0] != derived[0] or (last and observed != derived):
                raise TargetError(f"{where}: step {s} stored (written, spilled) {observed}, its kv_indptr {derived}")
            written, spilled = derived
            read = None if last else planned[s]
            length = 0 if last else end - start if read is None else read
            foreign = self._foreign(s, min(written, length))
            out.append(Build(Mode.DRAFT_DECODE, s, buffer, self.width, 1, written, spilled, length, None, foreign))
        return out

    def _read(self, i: int, step: Any, indptr: torch.Tensor, where: str) -> int | None:
        """What draft step ``i``'s decode kernel reads: row ``i`` of the rows, to the length of row ``i`` of
        ``kv_indptr`` (None: that length), or, where the kernel is planned over host lengths (FlashInfer MLA's,
        ``GraphBackend.scheduled_lengths``), to the one request's planned length (returned)."""
        spec = self.bucket.owner.spec
        meta = attribute_path(step, spec.metadata)
        if getattr(meta, spec.table).data_ptr() != self.rows[i].data_ptr():
            raise TargetError(f"{where}: draft step {i} does not read row {i} of kv_indices")
        if not spec.scheduled_lengths:
            if getattr(meta, spec.lengths).data_ptr() != indptr[i].data_ptr():
                raise TargetError(f"{where}: draft step {i} does not read row {i} of kv_indptr")
            return None
        planned = getattr(meta, spec.lengths)
        if planned is None or len(planned[1]) != 1 or planned[0][:1] != [0]:
            raise TargetError(f"{where}: draft step {i}'s kernel is planned over {planned}, not one request's from 0")
        return int(planned[1][0])

    def _diff(self, s: int, last: bool, where: str) -> tuple[int, int]:
        """(written, spilled) of step ``s`` as the rows show them: one flat run from its row's start; the last step's
        through the guard rows (its spill), never into the spare last one."""
        cells = self.rows[s:] if last else self.rows[s : s + 1]
        changed = torch.nonzero(cells.reshape(-1) != SENTINEL).flatten()
        end = int(changed[-1]) + 1 if changed.numel() else 0
        if changed.numel() != end:
            raise TargetError(f"{where} step {s} changed {changed.numel()} cells, not the run of {end} from its row")
        if end > self.width * (self.rows.shape[0] - 1 - s):
            raise TargetError(f"{where} step {s} wrote {end} columns from its row's start, through every guard row")
        return min(end, self.width), max(0, end - self.width)

    def _foreign(self, s: int, used: int) -> int:
        """How many of row ``s``'s first ``used`` entries are not slots of the request's own ``req_to_token`` row
        (row 1: slots ``span + c`` for its ``width`` columns)."""
        first = int(self.bucket.pristine[1, 0])
        row = self.rows[s, :used]
        return int(((row < first) | (row >= first + self.bucket.width)).sum())


# -- the names triton's backend takes (module docstring) ---------------------------------------------------------

AMD_PROBES = ("is_gfx95_supported", "is_gfx942_supported")
HYBRID_ARCH = ("hybrid_gdn_config", "kimi_linear_config", "linear_attn_model_spec", "mambaish_config")
CUDA_GRAPH_CONFIG = "sglang/srt/model_executor/cuda_graph_config.py"
CUDA_GRAPH_NAMES = (
    "Phase",
    "Backend",
    "PhaseConfig",
    "CudaGraphConfig",
    "default_prefill_backend",  # 0.5.15+: the prefill's graph on CUDA
    "check_cuda_graph_backend",
    "cuda_graph_fully_disabled",
)


def triton_names(standins: Any) -> dict[tuple[str, str], Callable[[], Any]]:
    """(module, name) -> what makes its value, for ``AttentionStandIns.add`` (``standins``: one)."""
    tree, context = standins.standins.tree, standins.standins.context
    graphs = cache(lambda: cuda_graph_config(tree, standins.answer))
    inner = "build_inner_fb_view"

    def accessor(bag: str) -> Callable[[], LaunchDefaults]:
        return lambda: LaunchDefaults(tree, bag, context.read(bag))

    utils: dict[str, Callable[[], Any]] = {
        **{name: partial(returning, PROBES["is_hip"]) for name in AMD_PROBES},
        "get_device_core_count": partial(returning, SM_COUNT),
    }
    graph_module = CUDA_GRAPH_CONFIG.removesuffix(".py").replace("/", ".")
    return {
        **{(module, name): make for module in UTILS_MODULES for name, make in utils.items()},
        **{("sglang.srt.configs.hybrid_arch", name): partial(returning, None) for name in HYBRID_ARCH},
        (FORWARD_MODE[0], inner): lambda: Sliced(tree, FORWARD_BATCH_INFO, (inner,))[inner],
        **{(graph_module, name): partial(lambda n: graphs().get(n, ABSENT), name) for name in CUDA_GRAPH_NAMES},
        **{("sglang.srt.runtime_context", f"get_{bag}"): partial(accessor, bag) for bag in ("exec", "schedule")},
    }


def cuda_graph_config(tree: Any, answer: Callable[[str, str], tuple[bool, Any]]) -> dict[str, Any]:
    """``CUDA_GRAPH_NAMES`` (those the release defines), SGLang's own, sliced from the tree, their config
    ``CudaGraphConfig()`` (the accessors they import answer it; the other names they import, ``is_cuda``, the
    stand-ins', ``answer``)."""
    view = types.SimpleNamespace()

    def config() -> Any:  # whichever of the three accessors the release's functions import
        return view

    def sglang_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        known = dict.fromkeys(("get_exec", "get_server_args", "get_global_server_args"), config)
        return types.SimpleNamespace(**{n: known[n] if n in known else answer(name, n)[1] for n in fromlist or ()})

    namespace: dict[str, Any] = dict(
        __name__=__name__,  # a module dataclasses finds (it resolves string annotations there)
        __builtins__={**builtins.__dict__, "__import__": sglang_import},
        dataclasses=dataclasses,
        dataclass=dataclasses.dataclass,
        field=dataclasses.field,
        replace=dataclasses.replace,
        get_exec=config,
    )
    found = slice_definitions(tree, CUDA_GRAPH_CONFIG, CUDA_GRAPH_NAMES, namespace, required=False)
    default = found["CudaGraphConfig"]()
    view.cuda_graph_config, view.graph = default, types.SimpleNamespace(cuda_graph_config=default)
    return found
