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

import copy
import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from . import algorithms as algo
from .defaults import DEFAULT_ADAPTIVE_CANDIDATE_STEPS, adaptive_launch_steps, chain_draft_tokens, fill_spec_defaults
from .launch_rules import RULES, UNO_MAX_DRAFT_TOKENS, UNO_MAX_TREE_NODES, Launch, first_broken, holding
from .pools import KVPool

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
        for name in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"):
            if args.get(name) is not None:  # before the defaults do arithmetic with them
                _integer(name, args[name])
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

    def at_context_len(self, context_len: int) -> ServingConfig:
        """The same launch at another context length, checked as ``replace`` would check it: no launch rule reads
        context_len (``_validate`` only asks it be a positive integer), so only that and the limits are checked
        again, and the limits only where it grows (each bounds context_len from above): a sweep over context
        lengths builds millions of these."""
        _integer("context_len", context_len)
        _positive("context_len", context_len)
        new = copy.copy(self)
        object.__setattr__(new, "context_len", context_len)
        if context_len > self.context_len:
            _check_limits(new)
        return new

    def __post_init__(self) -> None:
        _check_limits(self)  # sizes first: a value past a bound is refused as that, whatever else is wrong
        _validate(self)
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
    if len(steps) > MAX_CANDIDATE_BITS or any(isinstance(s, int) and s >= MAX_CANDIDATE_BITS for s in steps):
        raise ConfigError(f"speculative_adaptive_candidate_steps: at most {MAX_CANDIDATE_BITS} steps, each below it")
    sizes = (c.max_running_requests, c.context_len)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in sizes):
        return  # not sizes at all: validation names the field
    entries = (c.max_running_requests + 1) * c.context_len
    if entries > TENSOR_BUDGET:
        raise ConfigError(
            f"(max_running_requests + 1) x context_len = {entries} req_to_token entries, past this "
            f"tool's budget of {TENSOR_BUDGET}"
        )


def _validate(c: ServingConfig) -> None:
    """server_args' validation: ConfigError, one line naming the argument, for what it would reject.

    First what only a Python value can get wrong (a type, a field set where
    it means nothing, the candidate list itself), then the launch rules of
    ``launch_rules.RULES``, whose tensor reading is ``valid_launch_mask``
    (held equal by ``tests/test_twins.py``).
    """
    for name in ("context_len", "page_size", "attn_dcp_size", "max_running_requests"):
        _integer(name, getattr(c, name))
    _positive("context_len", c.context_len)
    _positive("max_running_requests", c.max_running_requests)
    if c.tp_size is not None:
        _positive("tp_size", c.tp_size)
        if c.attn_dcp_size >= 1 and c.tp_size % c.attn_dcp_size:
            raise ConfigError(f"tp_size ({c.tp_size}) must be divisible by attn_dcp_size ({c.attn_dcp_size})")
    if c.max_total_num_tokens is not None:
        _positive("max_total_num_tokens", c.max_total_num_tokens)
    if not isinstance(c.enable_overlap, bool):
        raise ConfigError(f"enable_overlap must be true or false, got {c.enable_overlap!r}")
    if not isinstance(c.kv_pool, KVPool):
        raise ConfigError(f"kv_pool must be one of {', '.join(k.value for k in KVPool)}, got {c.kv_pool!r}")
    a = c.speculative_algorithm
    spec_fields = ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens")
    if a is None:
        for name in spec_fields:
            if getattr(c, name) is not None:
                raise ConfigError(f"{name} is set but speculative_algorithm is None")
        if c.speculative_adaptive:
            raise ConfigError("speculative_adaptive needs speculative_algorithm EAGLE or EAGLE3")
    else:
        if a not in algo.ALL:
            raise ConfigError(f"unknown speculative_algorithm {a!r} (known: {', '.join(algo.ALL)})")
        if a == algo.UNO and c.speculative_num_draft_tokens is None:  # SGLang raises too [cite: uno-needs-draft-tokens]
            raise ConfigError(
                "speculative_algorithm UNO needs speculative_num_draft_tokens (SGLang has no default for it)"
            )
        for name in spec_fields:
            _integer(name, getattr(c, name))
    cand = c.speculative_adaptive_candidate_steps
    if not c.speculative_adaptive and cand is not None:
        raise ConfigError("speculative_adaptive_candidate_steps is set but speculative_adaptive is off")
    if c.tp_size not in (None, 1) and a == algo.UNO:
        raise ConfigError("UNO needs tp_size 1 (so attn_dcp_size 1)")
    broken = first_broken(
        Launch(
            a,
            c.kv_pool,
            c.page_size,
            c.attn_dcp_size,
            c.speculative_num_steps or 0,
            c.speculative_eagle_topk or 0,
            c.speculative_num_draft_tokens or 0,
            c.speculative_adaptive,
            not cand or c.speculative_num_steps in cand,  # an empty list is its own error, below
        )
    )
    if broken:
        if c.speculative_adaptive and "adaptive candidate steps" in broken:
            broken = f"{broken} {list(cand or ())}"
        raise ConfigError(broken)
    if c.speculative_adaptive:
        if not cand:
            raise ConfigError("speculative_adaptive_candidate_steps must be a non-empty list")
        for steps in cand:
            _positive("speculative_adaptive_candidate_steps entries", steps, minimum=0)


def _integer(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {value!r}")


def pool_refusal(kind: KVPool, algorithm: str | None, attn_dcp_size: int, topk: int) -> str | None:
    """Why SGLang (0.5.23's launch rules, ``allocator_model.pools``) refuses a kind with these settings; None: accepted.

    The pool rules of ``launch_rules.RULES``.  Releases that accept less (``Revision.unified_spec``) narrow it further.
    """
    pool_rules = [r for r in RULES if r.applies(algorithm, kind) and "kv_pool" in r.message(_PROBE)]
    f = Launch(algorithm, kind, 1, attn_dcp_size, 1, topk, 1, False, True)
    broken = [r.message(f) for r in pool_rules if not bool(r.holds(f))]
    return broken[0] if broken else None


_PROBE = Launch(None, KVPool.STANDARD, 1, 1, 0, 0, 0, False, False)


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
    """Tensor reading of ``_validate``'s launch rules (``launch_rules.RULES``): which launch configurations of one
    algorithm exist.

    One element per configuration, fields with SGLang's names; unused ones
    (no speculation) hold 0 and ``candidates`` is the adaptive candidate
    step set as a bitmask (0: not adaptive).
    """
    adaptive = candidates != 0
    in_candidates = (candidates >> num_steps.clamp(0, MAX_CANDIDATE_BITS - 1)) & 1 == 1
    f = Launch(algorithm, kv_pool, page_size, attn_dcp_size, num_steps, topk, draft_tokens, adaptive, in_candidates)
    return holding(f, page_size)
