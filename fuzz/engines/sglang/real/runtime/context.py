"""The runtime context and server args SGLang's accessors answer with, set per case.

``RuntimeContext.bound(cfg, rt)`` publishes, for the duration of one step,
what ``stubs.publish`` maps a ``ServingConfig`` and its run-time
``SpecRuntime`` onto (``get_schedule()``, ``get_parallel()``,
``get_spec()``, ``get_memory()``, ``get_server_args()``,
``max_speculative_num_draft_tokens()``), plus what the decode write path
reads beyond the sizing file:

    get_exec().kernel      attention_backend (and the split prefill/decode ones, None: fall back), which
                           ``attention_backends()`` pairs [cite: attention-backends]
                           [cite: attention-backends-of]
    get_exec().deterministic  deterministic inference off (``ATTENTION_SERVER_ARGS``)
    get_exec().features    multi-item scoring off (``ATTENTION_SERVER_ARGS``: FlashInfer's backend reads it)
    get_exec().overlap     two-batch overlap off (``ATTENTION_SERVER_ARGS``: the CUDA-graph batch alignment)
    get_model()            is_embedding False: a generation model
    get_parallel()         also ``ATTENTION_PARALLEL`` and attn_tp_size (the attention backends read them)
    get_exec().mamba       the Mamba extra buffer off (no Mamba state is modeled): read by
                           ``spec_prepare_for_decode`` [cite: spec-prepare-reads-mamba-lazy]
    get_flags().attn       0.5.15: the same backends [cite: attn-flags]
    get_serving()          strip_thinking_cache False (the tail free [cite: tail-free-strip-thinking])
    get_memory()           also disable_radix_cache (``mamba_extra_buffer_lazy_enabled`` reads it
                           [cite: mamba-extra-buffer-lazy])
    get_global_server_args()  0.5.13-0.5.15's accessor: the server_args bag
                           (speculative/eagle_info_v2.py [cite: eagle-tree-row-assert])

Reading a leaf that is not published raises naming it (``Bag``); reading
any accessor outside ``bound`` raises ``NotPublished``, as SGLang's do
before publish.  Environment variables: every ``SGLANG_*`` switch the path
reads answers SGLang's declared default (``standins.Environment``), unless
the case sets it in ``env``: the process environment never leaks in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime

from ..stubs import Bag, NotPublished, StandInMissing, publish

# The attention backend published when the case names none: a CUDA backend with triton dispatch
# (any backend but "ascend"/"torch_native" takes get_last_loc's triton kernel [cite: get-last-loc-dispatch];
# "torch_native"/"intel_amx" turn support_triton() off [cite: support-triton]).
DEFAULT_ATTENTION_BACKEND = "triton"


# What the attention backends read of the parallel layout, for the one-rank attention the model runs: no context
# parallelism, no attention data parallelism, so attention's TP is the TP (``derive_attn_tp_size``: tp // attn_dp //
# attn_cp [cite: derive-attn-tp-size]).
ATTENTION_PARALLEL = dict(
    attn_cp_size=1, enable_prefill_cp=False, attn_dp_enabled=False, enable_dp_attention=False, attn_dcp_rank=0
)
# The launch defaults the attention backends read: a generation model (not --is-embedding), no
# --enable-deterministic-inference, --kv-cache-dtype auto [cite: server-args-is-embedding-default]
# [cite: server-args-deterministic-default] [cite: server-args-kv-cache-dtype-default]; no --enable-mis (multi-item
# scoring: ``enable_mis`` defaults to False in every release's server_args, and 0.5.20+'s exec.features); no
# --enable-two-batch-overlap (False by default; server_args, 0.5.18+'s exec.overlap: the CUDA-graph batch alignment).
ATTENTION_SERVER_ARGS = dict(
    is_embedding=False,
    enable_deterministic_inference=False,
    kv_cache_dtype="auto",
    enable_mis=False,
    enable_two_batch_overlap=False,
)


# What FlashInfer's MLA backend (FlashMLA's base) reads of the launch, at their defaults: no PD disaggregation
# [cite: disagg-mode-default], the chunked prefix cache on [cite: chunked-prefix-cache-default], the ragged prefill
# wrapper on [cite: flashinfer-mla-ragged-default] (off server_args to 0.5.17; get_disagg(), get_schedule(),
# get_exec().kernel after).
MLA_SERVER_ARGS = dict(
    disaggregation_mode="null", disable_chunked_prefix_cache=False, flashinfer_mla_disable_ragged=False
)


class StrictBag(Bag):
    """A published bag whose missing leaf is ``StandInMissing`` (exit 2), not a plain AttributeError.

    SGLang's own bags have every leaf; a leaf kvrow-fuzz does not publish
    means the path read a setting nobody decided, so the run stops naming it.
    """

    def _missing(self, leaf: str) -> Exception:
        return StandInMissing(
            f"the write path reads {self._name}.{leaf}, which kvrow-fuzz does not publish "
            f"(published: {', '.join(sorted(self._leaves))})"
        )


@dataclass(frozen=True)
class Settings:
    """What a case sets beyond the ``ServingConfig``: the attention backends and environment switches."""

    attention_backend: str = DEFAULT_ATTENTION_BACKEND
    prefill_attention_backend: str | None = None
    decode_attention_backend: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # SGLANG_* values; unset ones take SGLang's default


def attention_backends_of(cfg: Any) -> tuple[str, str]:
    """(prefill, decode) of anything carrying the three backend fields: split fields fall back to attention_backend
    [cite: attention-backends-of] (also 0.5.17's ``ServerArgs.get_attention_backends()``)."""
    prefill = cfg.prefill_attention_backend or cfg.attention_backend
    decode = cfg.decode_attention_backend or cfg.attention_backend
    return prefill, decode


def bags(cfg: ServingConfig, rt: SpecRuntime | None, settings: Settings) -> dict[str, Any]:
    """Every bag of one call: ``stubs.publish``'s, made strict, and the write path's own."""
    published = publish(cfg, rt)
    out: dict[str, Any] = {"dmax": published["dmax"]}
    backends = dict(
        attention_backend=settings.attention_backend,
        prefill_attention_backend=settings.prefill_attention_backend,
        decode_attention_backend=settings.decode_attention_backend,
    )
    for name, bag in published.items():
        if isinstance(bag, Bag):
            leaves = dict(bag._leaves)
            if name in ("memory", "server_args"):
                leaves.setdefault("disable_radix_cache", False)
            if name == "schedule":
                leaves.setdefault("disable_chunked_prefix_cache", MLA_SERVER_ARGS["disable_chunked_prefix_cache"])
            if name in ("parallel", "server_args"):
                leaves.update(ATTENTION_PARALLEL, attn_tp_size=leaves["tp_size"])
            if name == "server_args":  # 0.5.13-0.5.17's attention backends read these off server_args
                leaves.update(ATTENTION_SERVER_ARGS, **MLA_SERVER_ARGS)
                # no --speculative-draft-window-size (None: full draft attention), read by FlashInfer's multi-step draft
                leaves.setdefault("speculative_draft_window_size", None)
            if (
                name == "server_args"
            ):  # 0.5.13-0.5.17 read the backends off server_args [cite: backend-triton-check] [cite: backend-last-loc]
                leaves.update(backends, strip_thinking_cache=False)
                leaves["get_attention_backends"] = lambda: attention_backends_of(settings)
                # true only for mamba_radix_cache_strategy "extra_buffer_lazy" [cite: mamba-extra-buffer-lazy]
                # (no Mamba state is modeled); spec_prepare_for_decode asks it [cite: spec-prepare-reads-mamba-lazy].
                leaves["enable_mamba_extra_buffer_lazy"] = lambda: False
            out[name] = StrictBag(name, **leaves)
    ragged = MLA_SERVER_ARGS["flashinfer_mla_disable_ragged"]
    kernel = StrictBag("exec.kernel", **backends, flashinfer_mla_disable_ragged=ragged)
    mamba = StrictBag(
        "exec.mamba",
        enable_mamba_extra_buffer=False,
        enable_mamba_extra_buffer_lazy=False,
        mamba_radix_cache_strategy="no_buffer",
    )
    deterministic = StrictBag(
        "exec.deterministic", enable_deterministic_inference=ATTENTION_SERVER_ARGS["enable_deterministic_inference"]
    )
    features = StrictBag("exec.features", enable_mis=ATTENTION_SERVER_ARGS["enable_mis"])
    overlap = StrictBag("exec.overlap", enable_two_batch_overlap=ATTENTION_SERVER_ARGS["enable_two_batch_overlap"])
    out["exec"] = StrictBag(
        "exec", kernel=kernel, mamba=mamba, deterministic=deterministic, features=features, overlap=overlap
    )
    out["model"] = StrictBag("model", is_embedding=ATTENTION_SERVER_ARGS["is_embedding"])
    out["disagg"] = StrictBag("disagg", disaggregation_mode=MLA_SERVER_ARGS["disaggregation_mode"])
    # 0.5.15's flags: the resolved attention backends [cite: attn-flags], read by mem_cache/common.py
    # [cite: backend-triton-check] [cite: backend-last-loc].
    attn = StrictBag(
        "flags.attn",
        backend=settings.attention_backend,
        prefill_backend=settings.prefill_attention_backend,
        decode_backend=settings.decode_attention_backend,
    )
    out["flags"] = StrictBag("flags", attn=attn)
    # The tail free asks it [cite: tail-free-strip-thinking]: no thinking-token stripping is modeled.
    out["serving"] = StrictBag("serving", strip_thinking_cache=False)
    return out


class RuntimeContext:
    """The published configuration of the current step; the accessors' stand-ins read it."""

    def __init__(self) -> None:
        self._bags: dict[str, Any] | None = None
        self.cfg: ServingConfig | None = None
        self.rt: SpecRuntime | None = None
        self.settings = Settings()

    @contextlib.contextmanager
    def bound(self, cfg: ServingConfig, rt: SpecRuntime | None, settings: Settings | None = None) -> Iterator[None]:
        saved = self._bags, self.cfg, self.rt, self.settings
        self.settings = settings or Settings()
        self._bags, self.cfg, self.rt = bags(cfg, rt, self.settings), cfg, rt
        try:
            yield
        finally:
            self._bags, self.cfg, self.rt, self.settings = saved

    @property
    def is_bound(self) -> bool:
        return self._bags is not None

    def read(self, what: str) -> Any:
        if self._bags is None:
            raise NotPublished(f"{what} read before the runtime context was published (at import time?)")
        return self._bags[what]

    def attention_backends(self) -> tuple[str, str]:
        """(prefill, decode): split fields fall back to attention_backend [cite: attention-backends-of]."""
        return attention_backends_of(self.read("exec").kernel)

    def env(self, name: str) -> str | None:
        """The case's value of an environment switch (None: unset, SGLang's default applies)."""
        return self.settings.env.get(name)
