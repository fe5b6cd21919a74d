"""The serving configuration, with SGLang's argument names and its validation rules.

A ``ServingConfig`` can only exist if ``server_args`` would accept it: every
rule of the reference doc's "Valid configurations" is checked in
``__post_init__`` and an invalid combination raises ``ConfigError`` with a
one-line message naming the argument.  ``resolve()`` first fills the
defaults SGLang fills (auto (S, K, D) per algorithm, NGRAM's S = D // K, the
adaptive candidate steps), so a config built from partial arguments is the
config the server would run (``defaults``: SGLang's auto values).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_ADAPTIVE_CANDIDATE_STEPS",
    "adaptive_launch_steps",
    "chain_draft_tokens",
    "ConfigError",
    "SpecRuntime",
    "ServingConfig",
    "adaptive_runtime",
    "valid_launch_mask",
    "UNO_MAX_DRAFT_TOKENS",
    "UNO_MAX_TREE_NODES",
    "MAX_CANDIDATE_BITS",
]

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from . import algorithms as algo
from .defaults import DEFAULT_ADAPTIVE_CANDIDATE_STEPS, adaptive_launch_steps, chain_draft_tokens, fill_spec_defaults
from .pools import UNIFIED_SPEC, KVPool

# UNO's limits (server_args): Q = D <= 128 draft slots, Q * K <= 2048 tree nodes.
UNO_MAX_DRAFT_TOKENS = 128
UNO_MAX_TREE_NODES = 2048
# Adaptive candidate step sets as bitmasks (the closed form's grids): bit s set <=> s is a candidate.
MAX_CANDIDATE_BITS = 63


class ConfigError(ValueError):
    """A configuration SGLang's server_args validation would reject."""


@dataclass(frozen=True)
class SpecRuntime:
    """The speculative shape one decode batch runs with (adaptive spec moves it)."""

    num_steps: int
    num_draft_tokens: int


@dataclass(frozen=True)
class ServingConfig:
    context_len: int
    page_size: int = 1
    attn_dcp_size: int = 1
    tp_size: int | None = None
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_adaptive: bool = False
    speculative_adaptive_candidate_steps: tuple[int, ...] | None = None
    # KV capacity in tokens as the scheduler sees it; None: never the limit.
    max_total_num_tokens: int | None = None
    max_running_requests: int = 4
    enable_overlap: bool = True
    # The deployment: which req_to_token pool and allocator SGLang builds (``allocator_model.pools``).
    kv_pool: KVPool = KVPool.STANDARD

    # -- construction -------------------------------------------------------

    @classmethod
    def resolve(cls, **args: Any) -> ServingConfig:
        """Build a config the way server_args would: defaults first, then validation."""
        unknown = sorted(set(args) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ConfigError(f"unknown configuration field {unknown[0]!r}")
        if "context_len" not in args:
            raise ConfigError("context_len is required")
        args = dict(args)
        args["speculative_algorithm"] = algo.normalize(args.get("speculative_algorithm"))
        if "kv_pool" in args:
            try:
                args["kv_pool"] = KVPool(args["kv_pool"])
            except ValueError:
                kinds = ", ".join(k.value for k in KVPool)
                raise ConfigError(f"unknown kv_pool {args['kv_pool']!r} (known: {kinds})") from None
        cand = args.get("speculative_adaptive_candidate_steps")
        if cand is not None:
            if isinstance(cand, (str, bytes)) or not hasattr(cand, "__iter__"):
                raise ConfigError("speculative_adaptive_candidate_steps must be a list of integers")
            args["speculative_adaptive_candidate_steps"] = tuple(sorted(set(cand)))
        fill_spec_defaults(args)
        return cls(**args)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ServingConfig:
        if not isinstance(data, Mapping):
            raise ConfigError("a configuration must be a JSON object of SGLang argument names")
        return cls.resolve(**dict(data))

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["kv_pool"] = self.kv_pool.value
        if d["speculative_adaptive_candidate_steps"] is not None:
            d["speculative_adaptive_candidate_steps"] = list(d["speculative_adaptive_candidate_steps"])
        return d

    def replace(self, **changes: Any) -> ServingConfig:
        return dataclasses.replace(self, **changes)

    def __post_init__(self) -> None:
        _validate(self)
        _check_limits(self)
        a = self.speculative_algorithm
        if a is not None and not isinstance(a, algo.Algorithm):  # a valid name: its enum member
            object.__setattr__(self, "speculative_algorithm", algo.Algorithm(a))

    # -- derived values -----------------------------------------------------

    @property
    def spec_on(self) -> bool:
        return self.speculative_algorithm is not None

    @property
    def topk(self) -> int:
        return self.speculative_eagle_topk or 1

    @property
    def candidate_steps(self) -> tuple[int, ...]:
        """The adaptive candidate step counts (empty when adaptive spec is off)."""
        return self.speculative_adaptive_candidate_steps or () if self.speculative_adaptive else ()

    @property
    def max_speculative_num_draft_tokens(self) -> int | None:
        """Dmax: the launch-time maximum of D; adaptive spec may switch up to it later."""
        if not self.spec_on:
            return None
        if self.speculative_adaptive:
            return chain_draft_tokens(max(self.candidate_steps))
        return self.speculative_num_draft_tokens

    @property
    def launch_runtime(self) -> SpecRuntime | None:
        if not self.spec_on:
            return None
        d = self.speculative_num_draft_tokens
        assert d is not None  # validated: speculation on sets D
        return SpecRuntime(self.speculative_num_steps or 0, d)

    def runtimes(self) -> Iterator[SpecRuntime | None]:
        """Every speculative shape a decode batch may run with after launch."""
        if not self.spec_on:
            yield None
        elif self.speculative_adaptive:
            for steps in self.candidate_steps:
                yield adaptive_runtime(steps)
        else:
            yield self.launch_runtime

    def kv_capacity(self) -> int | None:
        return self.max_total_num_tokens

    def short(self) -> str:
        """One line, SGLang argument names, only what is not default."""
        parts = [f"context_len={self.context_len}", f"page_size={self.page_size}"]
        if self.attn_dcp_size != 1:
            parts.append(f"attn_dcp_size={self.attn_dcp_size}")
        if self.spec_on:
            parts.append(f"speculative_algorithm={self.speculative_algorithm}")
            parts.append(
                f"(S,K,D)=({self.speculative_num_steps},{self.speculative_eagle_topk},"
                f"{self.speculative_num_draft_tokens})"
            )
            if self.speculative_adaptive:
                parts.append(f"adaptive_candidate_steps={list(self.candidate_steps)}")
        if self.max_total_num_tokens is not None:
            parts.append(f"max_total_num_tokens={self.max_total_num_tokens}")
        parts.append(f"overlap={'on' if self.enable_overlap else 'off'}")
        if self.kv_pool is not KVPool.STANDARD:
            parts.append(f"kv_pool={self.kv_pool.value} ({self.kv_pool.flags})")
        return " ".join(parts)


def adaptive_runtime(num_steps: int) -> SpecRuntime:
    """The shape of a batch adaptive spec switched to S = ``num_steps`` (topk 1: D = S + 1)."""
    return SpecRuntime(num_steps, chain_draft_tokens(num_steps))


def _positive(name: str, value: object, minimum: int = 1) -> int:
    """``value`` if it is an integer >= ``minimum``; ConfigError naming the argument otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")
    return value


# This tool's own limits (not SGLang's): every configuration is run on real tensors, so each size is
# bounded, and a case file or a pin past a bound is one line and exit 2, never an out-of-memory kill.
LIMITS: dict[str, int] = {
    "context_len": 1 << 20,
    "page_size": 4096,
    "attn_dcp_size": 64,
    "tp_size": 1024,
    "max_running_requests": 64,
    "max_total_num_tokens": 1 << 26,
    "speculative_num_steps": 64,
    "speculative_eagle_topk": 64,
    "speculative_num_draft_tokens": 1024,
}
# req_to_token holds (max_running_requests + 1) rows of about context_len columns: at most this many entries.
TENSOR_BUDGET = 1 << 26


def _check_limits(c: ServingConfig) -> None:
    """Every size within ``LIMITS`` and the pool within ``TENSOR_BUDGET`` (ConfigError, one line, otherwise)."""
    for name, most in LIMITS.items():
        value = getattr(c, name)
        if isinstance(value, int) and value > most:
            shown = str(value) if value < 10**15 else f"~1e{len(str(value)) - 1}"
            raise ConfigError(f"{name} {shown} is past this tool's limit of {most}")
    steps = c.speculative_adaptive_candidate_steps or ()
    if len(steps) > MAX_CANDIDATE_BITS or any(s >= MAX_CANDIDATE_BITS for s in steps):
        raise ConfigError(f"speculative_adaptive_candidate_steps: at most {MAX_CANDIDATE_BITS} steps, each below it")
    entries = (c.max_running_requests + 1) * c.context_len
    if entries > TENSOR_BUDGET:
        raise ConfigError(
            f"(max_running_requests + 1) x context_len = {entries} req_to_token entries, past this "
            f"tool's budget of {TENSOR_BUDGET}"
        )


def _validate(c: ServingConfig) -> None:
    """server_args' validation: ConfigError, one line naming the argument, for what it would reject.

    Its tensor twin is ``valid_launch_mask`` (below), for the closed form's
    grids of launch configurations; ``allocator_model.twins`` registers the
    pair and ``tests/test_twins.py`` checks that they accept the same
    configurations.
    """
    _positive("context_len", c.context_len)
    _positive("page_size", c.page_size)
    _positive("attn_dcp_size", c.attn_dcp_size)
    _positive("max_running_requests", c.max_running_requests)
    if c.tp_size is not None:
        _positive("tp_size", c.tp_size)
        if c.tp_size % c.attn_dcp_size:
            raise ConfigError(f"tp_size ({c.tp_size}) must be divisible by attn_dcp_size ({c.attn_dcp_size})")
    if c.max_total_num_tokens is not None:
        _positive("max_total_num_tokens", c.max_total_num_tokens)
    if not isinstance(c.enable_overlap, bool):
        raise ConfigError(f"enable_overlap must be true or false, got {c.enable_overlap!r}")
    if not isinstance(c.kv_pool, KVPool):
        raise ConfigError(f"kv_pool must be one of {', '.join(k.value for k in KVPool)}, got {c.kv_pool!r}")
    refusal = pool_refusal(c.kv_pool, c.speculative_algorithm, c.attn_dcp_size, c.speculative_eagle_topk or 1)
    if refusal:
        raise ConfigError(refusal)
    a = c.speculative_algorithm
    if a is None:
        for name in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"):
            if getattr(c, name) is not None:
                raise ConfigError(f"{name} is set but speculative_algorithm is None")
        if c.speculative_adaptive:
            raise ConfigError("speculative_adaptive needs speculative_algorithm EAGLE or EAGLE3")
        return
    if a not in algo.ALL:
        raise ConfigError(f"unknown speculative_algorithm {a!r} (known: {', '.join(algo.ALL)})")
    if a == algo.UNO and c.speculative_num_draft_tokens is None:  # 0.5.23 allocation_sizing.py 47-49 raises too
        raise ConfigError("speculative_algorithm UNO needs speculative_num_draft_tokens (SGLang has no default for it)")
    k = _positive("speculative_eagle_topk", c.speculative_eagle_topk)
    d = _positive("speculative_num_draft_tokens", c.speculative_num_draft_tokens)
    s = _positive(
        "speculative_num_steps",
        c.speculative_num_steps,
        minimum=0 if (a == algo.NGRAM or c.speculative_adaptive) else 1,
    )
    if c.speculative_adaptive:
        if a not in algo.ADAPTIVE:
            raise ConfigError(f"speculative_adaptive supports EAGLE and EAGLE3 only, not {a}")
        if k != 1:
            raise ConfigError(f"speculative_adaptive needs speculative_eagle_topk 1, got {k}")
        cand = c.speculative_adaptive_candidate_steps
        if not cand:
            raise ConfigError("speculative_adaptive_candidate_steps must be a non-empty list")
        for steps in cand:
            _positive("speculative_adaptive_candidate_steps entries", steps, minimum=0)
        if s not in cand:
            raise ConfigError(f"speculative_num_steps ({s}) must be one of the adaptive candidate steps {list(cand)}")
    elif c.speculative_adaptive_candidate_steps is not None:
        raise ConfigError("speculative_adaptive_candidate_steps is set but speculative_adaptive is off")
    if a in algo.EAGLE_FAMILY and k == 1 and d != chain_draft_tokens(s):
        raise ConfigError(
            f"{a} with speculative_eagle_topk 1 needs speculative_num_draft_tokens = num_steps + 1 "
            f"({chain_draft_tokens(s)}), got {d}"
        )
    if a in algo.DFLASH_FAMILY and (s != 1 or k != 1):
        raise ConfigError(f"{a} runs with speculative_num_steps 1 and speculative_eagle_topk 1, got ({s}, {k})")
    if a == algo.DSPARK and d < 2:
        raise ConfigError(f"DSPARK needs speculative_num_draft_tokens = gamma + 1 >= 2, got {d}")
    if a == algo.UNO:
        if c.attn_dcp_size != 1 or (c.tp_size or 1) != 1:
            raise ConfigError("UNO needs tp_size 1 (so attn_dcp_size 1)")
        if d < chain_draft_tokens(s):
            raise ConfigError(
                f"UNO needs speculative_num_draft_tokens >= num_steps + 1 ({chain_draft_tokens(s)}), got {d}"
            )
        if d > UNO_MAX_DRAFT_TOKENS:
            raise ConfigError(f"UNO needs speculative_num_draft_tokens <= {UNO_MAX_DRAFT_TOKENS}, got {d}")
        if d * k > UNO_MAX_TREE_NODES:
            raise ConfigError(f"UNO needs num_draft_tokens * topk <= {UNO_MAX_TREE_NODES}, got {d * k}")


def pool_refusal(kind: KVPool, algorithm: str | None, attn_dcp_size: int, topk: int) -> str | None:
    """Why SGLang (0.5.23's launch rules, ``allocator_model.pools``) refuses a kind with these settings; None: accepted.

    Releases that accept less (``Revision.unified_spec``) narrow it further.
    """
    if kind.refuses_dcp and attn_dcp_size != 1:
        return f"kv_pool {kind.value} refuses attn_dcp_size {attn_dcp_size} (unified memory with a hybrid SWA model)"
    if algorithm is None:
        return None
    if kind.unified and algorithm not in UNIFIED_SPEC:
        return f"kv_pool {kind.value} (unified memory) refuses speculative_algorithm {algorithm}"
    if kind.needs_topk_1 and topk != 1:
        return f"kv_pool {kind.value} needs speculative_eagle_topk 1 under speculation, got {topk}"
    return None


def valid_launch_mask(
    algorithm: str | None,
    page_size: Tensor,
    attn_dcp_size: Tensor,
    num_steps: Tensor,
    topk: Tensor,
    draft_tokens: Tensor,
    candidates: Tensor,
    kv_pool: KVPool = KVPool.STANDARD,
) -> Tensor:
    """Tensor twin of ``_validate`` (above): which launch configurations of one algorithm exist.

    One element per configuration, fields with SGLang's names; unused ones
    (no speculation) hold 0 and ``candidates`` is the adaptive candidate
    step set as a bitmask (0: not adaptive).  The rules are ``_validate``'s,
    in the same order; registered in ``allocator_model.twins``.
    """
    ok = (page_size >= 1) & (attn_dcp_size >= 1)
    a = algorithm
    adaptive = candidates != 0
    if kv_pool.refuses_dcp:  # pool_refusal, per element
        ok &= attn_dcp_size == 1
    if a is None:
        return ok & ~adaptive & (num_steps == 0) & (topk == 0) & (draft_tokens == 0)
    if kv_pool.unified and a not in UNIFIED_SPEC:
        ok &= False
    if kv_pool.needs_topk_1:
        ok &= topk == 1
    s, k, d = num_steps, topk, draft_tokens
    min_steps = 0 if a == algo.NGRAM else torch.where(adaptive, 0, 1)  # adaptive may run 0 steps
    ok &= (k >= 1) & (d >= 1) & (s >= min_steps)
    if a in algo.ADAPTIVE:
        in_candidates = (candidates >> s.clamp(0, MAX_CANDIDATE_BITS - 1)) & 1 == 1
        ok &= ~adaptive | ((k == 1) & in_candidates)
    else:
        ok &= ~adaptive
    if a in algo.EAGLE_FAMILY:
        ok &= (k != 1) | (d == chain_draft_tokens(s))
    if a in algo.DFLASH_FAMILY:
        ok &= (s == 1) & (k == 1)
    if a == algo.DSPARK:
        ok &= d >= 2
    if a == algo.UNO:
        ok &= (attn_dcp_size == 1) & (d >= chain_draft_tokens(s)) & (d <= UNO_MAX_DRAFT_TOKENS)
        ok &= d * k <= UNO_MAX_TREE_NODES
    return ok
