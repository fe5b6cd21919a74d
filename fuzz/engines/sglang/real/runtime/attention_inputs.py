"""What a backend is handed (``attention``: FA3's, trtllm_mha's): the model runner it is built from, the forward
batch of a mode.

Strict stand-ins (``batch.Strict``): a name the backend reads that is not given stops the run naming it
(``StandInMissing``); the names the real object lacks raise ``AttributeError``, so ``getattr(x, name, default)``
gives SGLang's default.  What they stand for:

* the model: a dense MHA decoder (``ARCHITECTURE``), 8 heads of 128 (8 KV heads), bf16 weights and KV, no sliding
  window, no local attention, no encoder, not multimodal (the page tables depend on none of these but the KV layout
  being paged MHA);
* the KV pool: a standard MHA pool (``MHATokenToKVPool``: not SWA, not page-interleaved, not unified), so every
  ``isinstance`` against SGLang's other pool classes is False (``inert.known_isinstance``), its KV unquantized
  (``kv_pool``); the allocator is the release's own, built for the configuration (``SGLangRuntime.allocator``);
* the ``KVIndexTranslator`` (0.5.19+): SGLang's own, built by its own constructor from these, as the model runner
  builds it (a standard pool: not translating);
* the forward batch: one request (``batch_size`` 1) in ``req_to_token`` row ``row`` at device length ``seq``, its
  tokens' positions and slots; the modes' ``spec_info`` carry only what the builders read;
* the launch settings a backend reads that the published bags lack: the release's declared defaults
  (``LaunchDefaults``); ``ModelRunner``'s methods a backend calls: SGLang's own (``runner_methods``).
"""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from typing import Any, Optional

import torch

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.page_tables import Mode
from fuzz.common.pysource import parsed
from fuzz.targets.base import TargetError

from ...backends import KV_INDEX_TRANSLATOR
from ..stubs import StandInMissing
from .batch import Strict
from .inert import Inert
from .standins import slice_definitions

SENTINEL = -0x2A2A2A2A  # what a graph buffer is filled with before a replay: no page or slot id is negative
HEADS, HEAD_DIM = 8, 128
ATTENTION_ARCH = ("sglang.srt.configs.model_config", "AttentionArch")
ARCHITECTURE = "LlamaForCausalLM"  # a dense MHA decoder (FlashInfer sizes its workspace up for Qwen2/3 and MiMo only)
# An MLA decoder (the MLA backends') with DeepSeek-V3's attention shape (the latent KV of 512 plus the rotary 64,
# no-rope and value heads of 128) but a few heads, as the MHA model's: the heads only size the kernels' own buffers
# (trtllm_mla's padded query and output per graph row: DeepSeek-V3's 128 made gigabytes of them for a bucket of guard
# rows).  The page tables depend on none of these but the KV being MLA.
MLA_ARCHITECTURE = "DeepseekV3ForCausalLM"
# ``scaling``: the softmax scale, 1 / sqrt(qk_nope + qk_rope) (without YaRN's mscale: the tables never read it).
MLA_SHAPE: dict[str, Any] = dict(
    num_attention_heads=HEADS,
    kv_lora_rank=512,
    qk_nope_head_dim=128,
    qk_rope_head_dim=64,
    v_head_dim=128,
    scaling=(128 + 64) ** -0.5,
)


class BuildRefused(TargetError):
    """SGLang's own check refused the build (an ``assert`` of a ``Guard``'s function, ``check``:
    ``assert_buffer_fits``'s "used N > capacity W"): on a server the step raises there.  Not a run the target could
    not make: the caller judges it."""

    def __init__(self, message: str, check: str) -> None:
        super().__init__(message)
        self.check = check


def untouched_if_refused(owner: Any, cfg: Any, rt: Any, what: str, fn: Callable[[], Any], cells: Any) -> Any:
    """A replay (``owner.call``); one SGLang's own check refuses (``BuildRefused``) is a stopped build only where it
    wrote nothing: each of ``cells`` (filled with ``SENTINEL`` before it) still holds the sentinel, else the check
    came after a write and the replay is the target's failure, never a stopped build."""
    try:
        return owner.call(cfg, rt, what, fn, replay=True)
    except BuildRefused as e:
        if any(bool((c != SENTINEL).any()) for c in cells):
            raise TargetError(f"{e}: SGLang's check stopped the replay after it wrote its table") from None
        raise


class Absent(Strict):
    """A stand-in whose listed names the real object lacks (``getattr(x, name, default)`` gives the default)."""

    def __init__(self, name: str, absent: tuple[str, ...], **values: Any) -> None:
        super().__init__(name, **values)
        self.__dict__["_absent"] = frozenset(absent)

    def __getattr__(self, attr: str) -> Any:
        if attr in self.__dict__.get("_absent", ()):
            raise AttributeError(f"{self._name} has no {attr} (as SGLang's own has none)")
        return super().__getattr__(attr)


class MHAPool(Absent):
    """The KV pool, a standard MHA pool: ``isinstance`` against an SGLang pool class answers from this hierarchy."""

    __sglang_stands_for__ = frozenset({"MHATokenToKVPool", "KVCache", "ABC", "object"})


def model_runner(
    *,
    backend: str,
    arch: Any,
    context_len: int,
    page_size: int,
    req_to_token: torch.Tensor,
    allocator: Any,
    translator_class: Any,
    parallel: Any,
    server_args: Any,
    draft: bool,
    spec_algorithm: Any,
    kv_pool: Absent,
    mla: bool = False,
    methods: dict[str, Callable[..., Any]] | None = None,
) -> Absent:
    """The model runner (the target's, or the draft worker's: ``draft``) of the ``backend`` launch.

    ``prefill_aware_swa``: absent (set only for prefill-aware SWA models); ``hf_text_config.attn_logit_softcapping``:
    absent (no softcapping).  ``server_args`` (to 0.5.17), ``ps`` (the parallel state, 0.5.16-0.5.20),
    ``tp_size``/``attn_cp_size`` (0.5.13-0.5.15): the published bags, as each release reads them.
    ``spec_algorithm``: SGLang's own ``SpeculativeAlgorithm`` of the configuration (the target's and the draft
    worker's runner carry the server's).  ``prefill_attention_backend_str`` / ``decode_attention_backend_str``: the
    launch's backend (no split backends).  ``dtype``: the model's, bf16 (the KV cache's "auto" dtype is the model's).
    ``max_running_requests``: the ``req_to_token`` pool's requests (SGLang sizes the pool from it: its rows but the
    padding row).  ``model``: a decoder-only model, whose modules the backend scans only for an ENCODER_ONLY
    attention layer: none (the stand-in lists no module).  ``methods``: ``ModelRunner``'s own (``runner_methods``).
    """
    hf_absent = ("attn_logit_softcapping", "num_attention_heads_per_layer")
    heads = int(MLA_SHAPE["num_attention_heads"]) if mla else HEADS
    hf = Absent("hf_text_config", hf_absent, num_attention_heads=heads)
    # no sliding-window heads of their own: SGLang's swa_(v_)head_dim fall back to the head_dim
    dense = dict(v_head_dim=HEAD_DIM, num_attention_heads=HEADS, swa_head_dim=HEAD_DIM, swa_v_head_dim=HEAD_DIM)
    shape: dict[str, Any] = dict(MLA_SHAPE) if mla else dense
    model_config = Strict(
        "model_config",
        is_encoder_decoder=False,
        context_len=context_len,
        attention_arch=arch.MLA if mla else arch.MHA,
        head_dim=HEAD_DIM,
        hidden_size=HEADS * HEAD_DIM,
        hf_text_config=hf,
        hf_config=Strict("hf_config", architectures=[MLA_ARCHITECTURE if mla else ARCHITECTURE]),
        **shape,
        get_num_kv_heads=lambda tp, dcp=1: max(1, HEADS // max(1, tp // (1 if draft else dcp))),
        get_max_num_attention_heads=lambda: HEADS,
        is_local_attention_model=False,
        is_multimodal=False,
    )
    pool = Strict("req_to_token_pool", req_to_token=req_to_token, size=req_to_token.shape[0] - 1)
    translator = None  # before 0.5.19 the backend reads none
    if translator_class is not None:
        kwargs: dict[str, Any] = dict(
            req_to_token=req_to_token,
            token_to_kv_pool_allocator=allocator,
            token_to_kv_pool=kv_pool,
            page_size=page_size or 1,
            device="cpu",
        )
        if "is_draft_worker" in inspect.signature(translator_class).parameters:  # 0.5.22+
            kwargs["is_draft_worker"] = draft
        translator = translator_class(**kwargs)
    runner = Absent(
        "model_runner",
        ("prefill_aware_swa",),
        sliding_window_size=None,
        model_config=model_config,
        model=Strict("model", modules=lambda: iter(())),
        device="cpu",
        gpu_id=0,  # one GPU per rank, the first
        dtype=torch.bfloat16,
        req_to_token_pool=pool,
        max_running_requests=pool.size,
        token_to_kv_pool=kv_pool,
        token_to_kv_pool_allocator=allocator,
        kv_cache_dtype=torch.bfloat16,
        kv_cache_dtype_str="auto",
        page_size=page_size,
        kv_index_translator=translator,
        is_draft_worker=draft,
        spec_algorithm=spec_algorithm,
        prefill_attention_backend_str=backend,
        decode_attention_backend_str=backend,
        attention_chunk_size=None,
        attn_cp_size=parallel.attn_cp_size,
        dcp_size=parallel.dcp_size,  # 0.5.15's runner: the launch's DCP, this rank the first (tp_rank % dcp_size)
        dcp_rank=0,
        tp_size=parallel.tp_size,
        server_args=server_args,
        ps=parallel,
        **dict.fromkeys(("hybrid_gdn_config", "kimi_linear_config", "linear_attn_model_spec")),  # a dense decoder
    )
    runner.__dict__.update({name: types.MethodType(fn, runner) for name, fn in (methods or {}).items()})
    return runner


def graph_runner(owner: Any, cfg: ServingConfig, req_to_token: torch.Tensor, draft: bool, allocator: Any) -> Absent:
    """The model runner (the draft worker's where ``draft``) ``owner``'s backend (``attention.GraphBuilders``) is
    built from for ``cfg``: called inside ``owner.call`` (it reads the published configuration)."""
    runtime, spec = owner.runtime, owner.spec
    translator = owner.loader.modules.get(KV_INDEX_TRANSLATOR)
    return model_runner(
        backend=spec.backend.flag,
        arch=owner.sglang(*ATTENTION_ARCH),
        context_len=cfg.context_len,
        page_size=cfg.page_size,
        req_to_token=req_to_token,
        allocator=allocator,
        translator_class=getattr(translator, "KVIndexTranslator", None),
        parallel=runtime.context.read("parallel"),
        server_args=LaunchDefaults(runtime.tree, "server_args", runtime.context.read("server_args")),
        draft=draft,
        spec_algorithm=runtime.speculative_algorithm(cfg.speculative_algorithm),
        kv_pool=owner.kv_pool(),
        mla=spec.mla,
        methods=runner_methods(runtime.tree, owner.sglang),
    )


def kv_pool(quant_method: Any | None, get_quant_method: Callable[..., Any] | None) -> MHAPool:
    """The KV pool: a standard MHA pool, no composite parts (``full_kv_pool``/``swa_kv_pool`` absent).  0.5.16+: its
    ``quant_method`` is the release's ``UnquantizedKVCacheMethod()`` (what ``MHATokenToKVPool`` takes when the
    launch names no KV quantization: ``--kv-cache-dtype auto``) and ``get_kv_cache_quant_method`` is SGLang's own
    ``KVCache`` method, sliced from its memory_pool.py and bound to the pool.  Its layers start at 0 (no pipeline
    stages); ``get_value_buffer(layer)``: a layer's V buffer as far as a backend reads it, its token's shape (HEADS,
    HEAD_DIM) on the meta device, no rows (any read of values raises)."""
    value = torch.empty((0, HEADS, HEAD_DIM), dtype=torch.bfloat16, device="meta")
    pool = MHAPool("token_to_kv_pool", ("full_kv_pool", "swa_kv_pool"), start_layer=0)
    pool.__dict__["get_value_buffer"] = lambda layer_id: value
    if quant_method is not None and get_quant_method is not None:
        pool.__dict__["quant_method"] = quant_method
        pool.__dict__["get_kv_cache_quant_method"] = types.MethodType(get_quant_method, pool)
    return pool


# The batch's optional fields a graph runner leaves unset (each None where the release has it): absent, so that
# ``getattr(batch, name, None)`` (a multi-step draft backend's ``build_inner_fb_view``) gives None.
UNSET_BATCH_FIELDS = (
    "out_cache_loc_dsv4",
    "out_cache_loc_virtual",
    "kv_loc_cols",
    "origin_out_cache_loc",
    "max_seq_len_host",
)


def forward_batch(
    forward_mode: Any, mode: Mode, rt: SpecRuntime | None, seq: int, row: int, rows: torch.Tensor
) -> Strict:
    """The ``ForwardBatch`` a graph runner hands the backend: one request in ``req_to_token`` row ``row`` (0: a
    capture's padding row), ``seq`` its device length (a draft extend's, the length after its D tokens, as the
    worker sets ``seq_lens`` before the draft extends [cite: draft-extend-seq-lens-include-drafts]).

    Positions and slots: decode the last token, a draft step the next, verify and draft extend the D tokens past
    the committed length; ``out_cache_loc`` their slots in the request's row (read by SWA pools only).
    """
    d = rt.num_draft_tokens if rt is not None else 1
    tokens = 1 if mode in (Mode.DECODE, Mode.DRAFT_DECODE) else d
    first = {Mode.DECODE: seq - 1, Mode.DRAFT_DECODE: seq, Mode.TARGET_VERIFY: seq}.get(mode, seq - d)
    positions = torch.arange(first, first + tokens, dtype=torch.int64).clamp(min=0)
    flat = rows.reshape(-1).to(torch.int64)
    out_cache_loc = flat[(row * rows.shape[1] + positions).clamp(max=flat.numel() - 1)]
    spec: Strict | None = None
    if mode is Mode.DRAFT_DECODE:
        # no window rail (the model has no sliding window): its EagleDraftInput fields keep their None; an
        # EagleDraftInput is a draft input (its type EAGLE_DRAFT: ``SpecInput.is_draft_input``), with no ragged
        # verify layout (``SpecInput``'s class default, None)
        draft = dict(window_kv_indptr=None, window_kv_indices=None, ragged_verify_layout=None)
        spec = Strict("spec_info (EagleDraftInput)", is_draft_input=lambda: True, **draft)
    elif mode is Mode.TARGET_VERIFY:
        spec = Strict("spec_info (EagleVerifyInput)", ragged_verify_layout=None)
    elif mode is Mode.DRAFT_EXTEND:
        spec = Strict(
            "spec_info (EagleDraftInput)", num_tokens_per_req=d, extend_seq_lens_tensor=None, extend_seq_lens_cpu=None
        )
    seq_lens = torch.tensor([seq], dtype=torch.int64)
    return Absent(
        "forward_batch",
        UNSET_BATCH_FIELDS,
        forward_mode=forward_mode,
        spec_info=spec,
        batch_size=1,
        seq_lens=seq_lens,
        seq_lens_cpu=seq_lens.clone(),
        seq_lens_sum=seq,
        req_pool_indices=torch.tensor([row], dtype=torch.int64),
        encoder_lens=None,
        kv_loc_plan=None,
        out_cache_loc=out_cache_loc,
        positions=positions,
        extend_seq_lens=torch.tensor([tokens], dtype=torch.int32),
        extend_seq_lens_cpu=[tokens],
        input_ids=Inert("forward_batch.input_ids (the tokens: no page-table builder reads them)"),
    )


# The launch settings a backend reads that the published bags do not carry, by the bag SGLang reads each from
# (``server_args`` to 0.5.18, and 0.5.19's ``enable_lean_attention``; ``get_exec()``/``get_schedule()`` after), each
# answered by the release's declared default (``declared_default``): the launch names none of them.  triton's:
# its decode kernel's KV splits and split tile, Lean decode (None: auto-gated), the dLLM algorithm (None: no dLLM),
# ``disable_cuda_graph`` (False: the decode runs CUDA graphs, whose table is measured) and ``chunked_prefill_size``
# (declared None; a launch sizes it from the GPU's memory, never -1 for a generation model: it only decides, with
# the prefill graph, ``allow_bidirectional_attention_in_extend``, an extend's switch no page-table builder reads).
TRITON_SETTINGS = ("triton_attention_num_kv_splits", "triton_attention_split_tile_size", "enable_lean_attention")
LAUNCH_DEFAULTS: dict[str, tuple[str, ...]] = {
    "server_args": (*TRITON_SETTINGS, "chunked_prefill_size", "disable_cuda_graph"),
    "exec": ("kernel", "dllm"),
    "exec.kernel": TRITON_SETTINGS,
    "exec.dllm": ("dllm_algorithm",),
    "schedule": ("chunked_prefill_size",),
}
# Where a release declares its launch fields: ``ServerArgs`` to 0.5.19, its field groups after.
SETTINGS_FILES = tuple(
    f"sglang/srt/{m}.py" for m in ("server_args", "arg_groups/fields/exec_", "arg_groups/fields/schedule")
)


_DECLARED: dict[tuple[str, str], Any] = {}


def declared_default(tree: Any, leaf: str) -> Any:
    """The default a release declares for launch field ``leaf`` (``name: T = value`` in a class of
    ``SETTINGS_FILES``), a literal; none: ``StandInMissing``."""
    key = (tree.origin, leaf)
    if key not in _DECLARED:
        _DECLARED[key] = _declared(tree, leaf)
    return _DECLARED[key]


def _declared(tree: Any, leaf: str) -> Any:
    for member in SETTINGS_FILES:
        source = tree.read(member)
        for node in ast.walk(parsed(source, member)) if source else ():
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                        if item.target.id == leaf:
                            return ast.literal_eval(item.value)
    raise StandInMissing(f"{tree.origin} declares no default for the launch field {leaf}")


class LaunchDefaults:
    """A published bag (``name``) whose ``LAUNCH_DEFAULTS`` leaves it lacks answer the release's declared defaults;
    a group (``exec.kernel``) is a bag of its own; any other leaf is the published bag's (or its refusal)."""

    def __init__(self, tree: Any, name: str, bag: Any) -> None:
        self.__dict__.update(_tree=tree, _name=name, _bag=bag)

    def __getattr__(self, leaf: str) -> Any:
        if leaf.startswith("__"):
            raise AttributeError(leaf)
        own = leaf in LAUNCH_DEFAULTS.get(self._name, ())
        try:
            if self._bag is None:
                raise StandInMissing(f"the backend reads {self._name}.{leaf}, which kvrow-fuzz does not publish")
            value = getattr(self._bag, leaf)
        except StandInMissing:
            if not own:
                raise
            value = None if f"{self._name}.{leaf}" in LAUNCH_DEFAULTS else declared_default(self._tree, leaf)
        group = f"{self._name}.{leaf}"
        return LaunchDefaults(self._tree, group, value) if group in LAUNCH_DEFAULTS else value


RUNNER_FILE = "sglang/srt/model_executor/model_runner.py"
# ``ModelRunner``'s methods a backend calls (where the release defines them): ``decode_num_tokens_per_req`` (0.5.16+;
# triton's constructor, 0.5.21+).
RUNNER_METHODS = ("ModelRunner.decode_num_tokens_per_req",)


def runner_methods(tree: Any, sglang: Callable[[str, str], Any]) -> dict[str, Callable[..., Any]]:
    """``RUNNER_METHODS``, SGLang's own, sliced from the tree's model_runner.py, each name they use that the file
    imports from SGLang answered as the backend's loader answers it (``sglang(module, name)``: an executed
    module's, or its stand-in's)."""
    source = tree.read(RUNNER_FILE)
    if source is None:
        return {}
    imported: dict[str, str] = {}
    for node in parsed(source, RUNNER_FILE).body:
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("sglang."):
            imported.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    namespace: dict[str, Any] = {"Optional": Optional, "__name__": "model_runner"}
    found = slice_definitions(tree, RUNNER_FILE, RUNNER_METHODS, namespace, required=False)
    for fn in found.values():
        for name in set(fn.__code__.co_names) & set(imported):
            module, _, real = imported[name].rpartition(".")
            namespace[name] = sglang(module, real)
    return {name.rpartition(".")[2]: fn for name, fn in found.items()}


def run_graph(backend: Any, batch: Any, in_capture: bool) -> Any:
    """A capture or a replay of a mode's metadata: the graph runner's call, then the part the graph holds (the
    backend back, its metadata in it)."""
    backend.init_forward_metadata_out_graph(batch, in_capture=in_capture)
    backend.init_forward_metadata_in_graph(batch)
    return backend
