"""What fidelity compares on: cases (a configuration and request lengths), and the one sampler that draws them.

The sampler is pure in its seed: the cases a call returns depend only on
(seed, kind, the algorithms each kind runs in the revision, whether DCP is
drawn, n), never on what was sampled before in the process.  Each such key
has one stream of draws (``strategies.space``, walked by a ``random.Random``
seeded by the key, preferring SGLang's defaults as the strategies do); a
call takes the first ``n`` distinct configurations of its stream that the
revision launches.  So releases that launch the same things are compared on
the same configurations, run after run, and the memo of each stream's draws
(``_STREAMS``) only saves work: a prefix of the same stream, whatever came
before.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from allocator_model.allocator import allocator_page_size
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.pools import KVPool
from allocator_model.revisions import Revision
from allocator_model.scheduler import max_committed_len_at_decode_alloc
from fuzz.common import interrupts
from fuzz.common.bounds import ROW_HEADROOM_BOUND
from strategies import space
from strategies.configs import serving_configs
from strategies.uniform import RandomChooser

DRAWS_PER_CASE = 20  # draws per wanted case before a space counts as exhausted (never reached in practice)
MAX_LENS = 64  # request (kv_committed_len, kv_allocated_len) pairs in one fidelity case at the most
MAX_LEN = (1 << 20) + ROW_HEADROOM_BOUND  # a length is within the longest row this tool builds


@dataclass(frozen=True)
class FidelityCase:
    """One configuration, and the (kv_committed_len, kv_allocated_len) pairs the aligned lens are compared on."""

    config: ServingConfig
    lens: tuple[tuple[int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"lens": [list(p) for p in self.lens]}

    @classmethod
    def from_dict(cls, config: ServingConfig, data: Any) -> FidelityCase:
        """The case a case file holds; ConfigError (one line) for lens that are not 1..64 pairs of lengths
        0 <= kv_committed_len <= kv_allocated_len within the longest row."""
        lens = data.get("lens") if isinstance(data, Mapping) else None
        if not isinstance(lens, list) or not 1 <= len(lens) <= MAX_LENS:
            raise ConfigError(f'malformed fidelity case: "lens" must be a list of 1 to {MAX_LENS} pairs')
        pairs: list[tuple[int, int]] = []
        for pair in lens:
            if not (isinstance(pair, list) and len(pair) == 2 and all(_length(v) for v in pair)):
                raise ConfigError(f"malformed fidelity case: {pair!r:.80} is not [kv_committed_len, kv_allocated_len]")
            if pair[0] > pair[1]:
                raise ConfigError(f"malformed fidelity case: kv_committed_len {pair[0]} > kv_allocated_len {pair[1]}")
            pairs.append((pair[0], pair[1]))
        return cls(config, tuple(pairs))


def _length(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_LEN


def lens_for(cfg: ServingConfig) -> tuple[tuple[int, int], ...]:
    """Request lengths for page_aligned_decode_alloc_lens, near the committed-length bound b.

    One batch of three requests: fresh at the bound (a = c = b), mid-page
    (a = c + page - 1), and one already allocated past any reserve (the
    ``max(a, ...)`` branch that keeps an adaptive downswitch from shrinking).
    """
    page = allocator_page_size(cfg)
    b = max(1, max_committed_len_at_decode_alloc(cfg))
    slack = 2 * page + 4 * (cfg.max_speculative_num_draft_tokens or 1)
    return ((b, b), (max(1, b - 1), max(1, b - 1) + page - 1), (max(1, b - slack), b + slack))


def dcp_allowed(kind: KVPool, revision: Revision) -> bool:
    """Whether ``revision`` launches ``kind`` with attn_dcp_size > 1 at all (``Revision.dcp``, ``unified_dcp``)."""
    return revision.dcp and not kind.refuses_dcp and (revision.unified_dcp or not kind.unified)


def kind_pins(kind: KVPool, revision: Revision) -> dict[str, Any]:
    """The fields a per-kind search pins: the kind, and attn_dcp_size 1 where the revision refuses DCP on it."""
    return {"kv_pool": kind} if dcp_allowed(kind, revision) else {"kv_pool": kind, "attn_dcp_size": 1}


def fidelity_cases(
    algorithms: Iterable[str], revision: Revision, kind: KVPool | None = None
) -> st.SearchStrategy[FidelityCase]:
    """Hypothesis' cases over the kinds ``revision`` builds (``kind``: that kind only): what a group shrinks in."""
    if kind is None:
        configs = serving_configs(tuple(algorithms), pools=revision.pool_algorithm_map())
    else:
        runs = tuple(sorted(set(algorithms) & revision.pool_algorithms(kind)))
        configs = serving_configs(runs, pins=kind_pins(kind, revision), pools={kind: runs})
    return configs.filter(lambda cfg: revision.refuses(cfg) is None).map(lambda cfg: FidelityCase(cfg, lens_for(cfg)))


class PreferringChooser(RandomChooser):
    """``random.Random`` behind the walk of ``strategies.space``, preferring as the strategies do.

    ``often`` takes its value half the time (as ``strategies.configs.DrawChooser``
    does), so the stream keeps the strategies' weights (page 1, the standard
    pool, SGLang's default spec shapes) at a fraction of Hypothesis' cost.
    """

    def often(self, value: Any, values: Iterable[Any]) -> Any:
        return self.sampled_from(values) if self.booleans() else value


StreamKey = tuple[int, KVPool | None, tuple[tuple[KVPool, tuple[str, ...]], ...], bool]


@dataclass
class _Stream:
    """The draws of one stream so far (None: a draw the space refused)."""

    key: StreamKey
    chooser: PreferringChooser
    draws: list[ServingConfig | None] = field(default_factory=list)

    def draw(self, i: int) -> ServingConfig | None:
        _, kind, runs, dcp = self.key
        pools = {k: frozenset(a) for k, a in runs}
        algorithms = sorted({a for r in pools.values() for a in r}, key=str)
        pins: dict[str, Any] = {} if kind is None else {"kv_pool": kind}
        if not dcp:
            pins["attn_dcp_size"] = 1
        while len(self.draws) <= i:
            self.draws.append(space.serving_config(self.chooser, algorithms, pins, pools, dcp=dcp))
        return self.draws[i]


_STREAMS: dict[StreamKey, _Stream] = {}


def stream_key(revision: Revision, algorithms: Iterable[str], kind: KVPool | None, seed: int) -> StreamKey:
    """What a stream is drawn from: the seed, the kind (None: every kind), the algorithms each kind runs in
    ``revision`` (within ``algorithms``), whether DCP > 1 is drawn.  Releases that launch the same share it."""
    allowed = set(algorithms)
    kinds = [kind] if kind is not None else [k for k in KVPool if k in revision.pools]
    runs = tuple((k, tuple(sorted(revision.pool_algorithms(k) & allowed, key=str))) for k in kinds)
    dcp = revision.dcp if kind is None else dcp_allowed(kind, revision)
    return seed, kind, runs, dcp


def sample_cases(
    revision: Revision, algorithms: Iterable[str], n: int, *, kind: KVPool | None = None, seed: int = 0
) -> list[FidelityCase]:
    """The first ``n`` distinct configurations of the stream ``stream_key`` names that ``revision`` launches,
    as cases; fewer only if the space runs out (``DRAWS_PER_CASE`` draws per case).

    ``kind`` None: every kind of pool the revision builds, in the strategies' proportions; else that kind.
    """
    key = stream_key(revision, algorithms, kind, seed)
    if key not in _STREAMS:
        _STREAMS[key] = _Stream(key, PreferringChooser(random.Random(f"kvrow-fuzz fidelity|{key!r}")))
    stream = _STREAMS[key]
    cases: list[FidelityCase] = []
    seen: set[ServingConfig] = set()
    i = 0
    while len(cases) < n and i < DRAWS_PER_CASE * max(n, 1):
        interrupts.raise_if_requested()  # a safe point between draws (a no-op unless a signal is pending)
        cfg = stream.draw(i)
        i += 1
        if cfg is None or cfg in seen or revision.refuses(cfg) is not None:
            continue
        seen.add(cfg)
        cases.append(FidelityCase(cfg, lens_for(cfg)))
    return cases
