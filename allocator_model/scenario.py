"""A decode scenario: one request's last decode steps near the context limit, on a real pool.

The request under test (rid 1) is admitted after a neighbour (rid 0), so it
holds the row just above the neighbour's: a spill past its row width lands in
the neighbour's row, where it can be seen.  The scenario prefills it, runs an
optional earlier decode step and a verify, then the decode allocation at
``committed_len``, and records every row write with what changed outside the
writer's row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .allocator import TokenToKVPoolAllocator
from .config import ConfigError, ServingConfig, SpecRuntime, adaptive_runtime
from .decode import Refusal, Req, RowWrite, commit, draft_extent, prefill, prepare_for_decode
from .req_to_token import ReqToTokenPool, Spill
from .revisions import Revision
from .scheduler import decode_alloc_bound, reached_by
from .surface import Surface

SUBJECT, NEIGHBOUR = 1, 0


@dataclass(frozen=True)
class PriorStep:
    """An earlier decode step: allocated at committed_len - accepted, then verify accepted ``accepted``."""

    accepted: int
    num_steps: int | None = None  # adaptive: the step count that batch ran with


@dataclass(frozen=True)
class DecodeScenario:
    config: ServingConfig
    committed_len: int  # kv_committed_len at the decode allocation under test
    num_steps: int | None = None  # adaptive: this batch's step count (None: launch value)
    prior: PriorStep | None = None
    device_lag: int = 0  # overlap: device seq_len - committed_len (one accept run, <= D)

    def runtime(self, steps: int | None) -> SpecRuntime | None:
        return batch_runtime(self.config, steps)

    @property
    def start_len(self) -> int:
        """The request's length when its decode history here starts (before the prior step, if any)."""
        return self.committed_len - (self.prior.accepted if self.prior else 0)

    def without_dcp(self) -> DecodeScenario | None:
        """The same scenario on the same deployment without decode context parallelism (None: no such
        deployment): what a DCP finding is attributed against."""
        try:
            return DecodeScenario(
                self.config.replace(attn_dcp_size=1), self.committed_len, self.num_steps, self.prior, self.device_lag
            )
        except ConfigError:
            return None

    def reached_by(self) -> str:
        """How the scheduler gets a request into this scenario's first state (``scheduler.reached_by``)."""
        how = reached_by(self.config, self.start_len)
        return how + (f", then one decode step accepting {self.prior.accepted}" if self.prior else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "committed_len": self.committed_len,
            "num_steps": self.num_steps,
            "prior": None
            if self.prior is None
            else {"accepted": self.prior.accepted, "num_steps": self.prior.num_steps},
            "device_lag": self.device_lag,
        }

    @classmethod
    def from_dict(cls, config: ServingConfig, data: Mapping[str, Any]) -> DecodeScenario:
        if not isinstance(data, Mapping):
            raise ConfigError("the case must be a JSON object")
        try:
            prior = data.get("prior")
            return cls(
                config=config,
                committed_len=_int(data["committed_len"], "committed_len"),
                num_steps=None if data.get("num_steps") is None else _int(data["num_steps"], "num_steps"),
                prior=None
                if prior is None
                else PriorStep(
                    _int(prior["accepted"], "prior.accepted"),
                    None if prior.get("num_steps") is None else _int(prior["num_steps"], "prior.num_steps"),
                ),
                device_lag=_int(data.get("device_lag", 0), "device_lag"),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ConfigError(f"malformed case: missing or wrong field {e}") from None

    def describe(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def batch_runtime(cfg: ServingConfig, steps: int | None) -> SpecRuntime | None:
    """The spec shape a decode batch runs with: adaptive spec's ``steps`` if given, else the launch shape."""
    if not cfg.spec_on:
        return None
    if cfg.speculative_adaptive and steps is not None:
        return adaptive_runtime(steps)
    return cfg.launch_runtime


def max_device_lag(cfg: ServingConfig) -> int:
    """How far the device's seq_len may be ahead of kv_committed_len at a decode allocation.

    Overlap mode with speculation: up to one accept run, <= Dmax (what the
    2x reserve absorbs); otherwise the device is where the scheduler is.
    """
    dmax = cfg.max_speculative_num_draft_tokens
    return dmax if (cfg.enable_overlap and dmax is not None) else 0


def _int(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"{name} must be an integer, got {v!r}")
    return v


def scenario_problem(s: DecodeScenario, revision: Revision) -> str | None:
    """Why a scenario cannot happen under the target's scheduler rules (None: it can)."""
    cfg = s.config
    bound = decode_alloc_bound(cfg, revision)
    refusal = revision.refuses(cfg)  # an algorithm, a kind of pool or a DCP size the release does not run
    if refusal:
        return refusal
    if not 1 <= s.committed_len <= bound:
        return f"committed_len {s.committed_len} outside [1, {bound}] (the scheduler's bound at decode allocation)"
    for steps in (s.num_steps, s.prior.num_steps if s.prior else None):
        if steps is not None:
            if not cfg.speculative_adaptive:
                return "num_steps per batch needs speculative_adaptive"
            if steps not in cfg.candidate_steps:
                return f"num_steps {steps} is not an adaptive candidate"
    if s.prior is not None:
        if not cfg.spec_on:
            return "a prior decode step with accepted tokens needs speculative decoding"
        prior_rt = s.runtime(s.prior.num_steps)
        assert prior_rt is not None  # speculation is on
        prior_d = prior_rt.num_draft_tokens
        if not 1 <= s.prior.accepted <= prior_d:
            return f"prior.accepted {s.prior.accepted} outside [1, {prior_d}]"
        if s.committed_len - s.prior.accepted < 1:
            return "the prior step would start before the prompt"
    lag_max = max_device_lag(cfg)
    if not 0 <= s.device_lag <= lag_max:
        return f"device_lag {s.device_lag} outside [0, {lag_max}]"
    return None


@dataclass
class WriteObservation:
    """One row write and what it did to the pool."""

    step: str  # "prior decode" / "decode"
    req: Req
    write: RowWrite
    width: int
    row_owner: dict[int, int]  # row -> rid, for naming victims
    changed_outside: list[Spill] = field(default_factory=list)
    kv_committed_len: int = 0
    device_seq_len: int = 0
    draft_end: int = 0  # exclusive end of what the draft/verify phases touch
    slots_taken: int | None = None  # how many slots the allocator handed out for this write


@dataclass
class ScenarioRun:
    config: ServingConfig
    width: int
    extra: int
    alloc_page: int
    subject_row: int
    neighbour_row: int
    writes: list[WriteObservation]
    sizing_page: int | None = None  # the alloc page the sizing module believes in (None: it has no accessor)
    skipped: str | None = None  # the scheduler would not run this (out of memory): nothing to check
    sglang: Any = None  # a run on SGLang's own code: what only it has (``fuzz.engines.sglang.real.scenario``)


def run_scenario(s: DecodeScenario, sizing: Surface, revision: Revision) -> ScenarioRun:
    """Execute the scenario on a fresh pool; the caller checks the properties."""
    cfg = s.config
    extra = sizing.req_to_token_extra_context_len(cfg)
    width = sizing.req_to_token_row_width(cfg)
    page = sizing.allocator_page_size(cfg)
    bound = decode_alloc_bound(cfg, revision)
    pool = ReqToTokenPool(max(cfg.max_running_requests, 2), width)
    # Capacity: the scheduler's KV budget if set, else ample for the two requests.
    cap = cfg.kv_capacity() or 4 * (width + 2 * page)
    allocator = TokenToKVPoolAllocator(cap, page)
    rows = pool.alloc(), pool.alloc()
    assert rows[0] is not None and rows[1] is not None  # a fresh pool of at least two rows
    neighbour, subject = Req(NEIGHBOUR, rows[0]), Req(SUBJECT, rows[1])
    owners = {neighbour.req_pool_idx: NEIGHBOUR, subject.req_pool_idx: SUBJECT}
    run = ScenarioRun(
        cfg, width, extra, page, subject.req_pool_idx, neighbour.req_pool_idx, [], sizing.alloc_page_size(cfg)
    )
    # The neighbour: a short prompt, so its first columns (where a spill lands) hold its slots.
    if prefill(pool, allocator, neighbour, min(bound, page + 1)).refusal is not None:
        run.skipped = "out of memory at the neighbour's prefill"
        return run
    start = s.start_len
    if prefill(pool, allocator, subject, start).refusal is not None:
        run.skipped = "out of memory at prefill"
        return run
    steps: list[tuple[str, SpecRuntime | None, int | None, int]] = []
    if s.prior is not None:
        steps.append(("prior decode", s.runtime(s.prior.num_steps), s.prior.accepted, 0))
    steps.append(("decode", s.runtime(s.num_steps), None, s.device_lag))
    for label, rt, accepted, lag in steps:
        before, free = pool.snapshot(), allocator.available_size()
        w = prepare_for_decode(pool, allocator, subject, cfg, rt, sizing, revision)
        if w.refusal is Refusal.OUT_OF_MEMORY:
            run.skipped = w.refused
            return run
        device = subject.kv_committed_len + lag
        run.writes.append(
            WriteObservation(
                label,
                Req(**vars(subject)),
                w,
                width,
                owners,
                pool.changed_outside(before, subject.req_pool_idx),
                subject.kv_committed_len,
                device,
                draft_extent(cfg, rt, device, page),
                free - allocator.available_size(),
            )
        )
        if w.refusal is Refusal.GUARD:
            return run  # SGLang's own check raised: the server stops there, so no later step runs
        if accepted:
            commit(subject, accepted)
    return run
