"""``python -m fuzz prove``: every configuration of a bounded space, checked in closed form.

Sampling finds bugs; it cannot say there are none.  The sizing arithmetic
is small enough to check completely: for every valid launch configuration
of the space (every algorithm, page size, DCP size, (S, K, D), adaptive
candidate set), every run-time shape, overlap on and off, and every residue
of the context length modulo the allocator page, at the longest committed
length a decode allocation can see, ``allocator_model.closed_form`` gives
the worst write end (write-within-row), the worst draft footprint
(drafts-within-allocation) and whether growth is page-aligned
(page-aligned-growth).  Violations are grouped by bug group, the same
signatures (property / regime) a fuzz campaign reports; each group's worst
configuration is then replayed on the step-by-step model, which must agree,
and saved as a case file ``repro`` replays.

Two ways to get the sizing numbers:
  * model targets: the revision's formulas, vectorized (no Python per configuration);
  * any other target: its sizing functions are called once per distinct
    launch configuration (and once per run-time shape for the reserve, once
    per distinct (reserve, page) for the growth rule); everything after is
    vectorized.  That is too many calls for the full space (about 12 million
    launch configurations), so these targets default to the ``small`` space;
    ``--space full`` widens it.

Assumptions, each checked where it can be: sizing does not depend on the
context length or on overlap (``SIZING_CONTEXT_LEN`` is passed); the
committed-length bound is C minus a constant (``closed_form.committed_gap``);
growth is page-rounded or exact (any other rule is reported as unproven).
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from allocator_model import algorithms as algo
from allocator_model import closed_form as cf
from allocator_model.allocator import allocator_page_size
from allocator_model.config import DEFAULT_ADAPTIVE_CANDIDATE_STEPS, ServingConfig
from allocator_model.decode import decode_alloc_ends, decode_reserve
from allocator_model.scenario import DecodeScenario
from allocator_model.sizing import ceil_to_page
from strategies.space import PAGE_SIZES

from fuzz.common.threads import one_torch_thread
from fuzz.findings.kinds import Property
from fuzz.findings.render import repro_line
from fuzz.run.properties import DRAFTS_WITHIN_ALLOCATION, PAGE_ALIGNED_GROWTH, WRITE_WITHIN_ROW
from fuzz.targets.base import Target, TargetCallError

SIZING_RAISED = Property.SIZING_RAISED.value
UNPROVEN = Property.UNPROVEN.value
NO_VIOLATION = "no violation in the bounded space"
SIZING_CONTEXT_LEN = 1 << 16  # any length: sizing does not read it
WITNESS_CONTEXT_LEN = 4096  # witnesses use a context length near this
REGIMES = ("alloc-page-1", "dcp>1", "tree", "adaptive", "dflash", "paged")  # fuzz.properties.regime, in order


# -- the bounded space --------------------------------------------------------------------


@dataclass(frozen=True)
class Space:
    """The dimensions swept; configurations outside server_args' rules are masked out."""

    name: str
    page_sizes: tuple[int, ...]
    dcp_sizes: tuple[int, ...]
    steps: tuple[int, ...]
    topks: tuple[int, ...]
    draft_tokens: tuple[int, ...]  # EAGLE topk > 1, NGRAM, DFLASH, DSPARK (EAGLE topk 1 uses S + 1)
    uno_draft_tokens: tuple[int, ...]
    # Adaptive candidate step sets: every subset of adaptive_steps with at most this many
    # members, plus SGLang's default set; every member as the launch step count.
    adaptive_max_candidates: int
    adaptive_steps: tuple[int, ...]

    def candidate_sets(self) -> list[tuple[int, ...]]:
        sets = {tuple(c) for n in range(1, self.adaptive_max_candidates + 1)
                for c in itertools.combinations(self.adaptive_steps, n)}
        sets.add(tuple(DEFAULT_ADAPTIVE_CANDIDATE_STEPS))
        return sorted(sets, key=lambda s: (len(s), s))

    def describe(self) -> str:
        return (f"{self.name}: page_size {_span(self.page_sizes)} x attn_dcp_size {_span(self.dcp_sizes)} x "
                f"steps {_span(self.steps)} x topk {_span(self.topks)} x draft tokens {_span(self.draft_tokens)} "
                f"(UNO {_span(self.uno_draft_tokens)}) x adaptive candidate sets (subsets of "
                f"{_span(self.adaptive_steps)} up to {self.adaptive_max_candidates}, and the default) "
                f"x every algorithm x overlap on/off x every residue of context_len mod the allocator page")


def _span(values) -> str:
    v = sorted(values)
    if len(v) > 2 and v == list(range(v[0], v[-1] + 1)):
        return f"{v[0]}..{v[-1]}"
    return "{" + ",".join(map(str, v)) + "}"


SPACES = {
    "full": Space("full", PAGE_SIZES, tuple(range(1, 17)), tuple(range(1, 17)), tuple(range(1, 17)),
                  tuple(range(1, 65)), tuple(range(1, 129)), 3, tuple(range(16))),
    # For targets whose sizing is called per configuration: every regime, a few values per dimension.
    "small": Space("small", (1, 2, 3, 4, 16, 64, 256), (1, 2, 3, 4, 8, 16), (1, 2, 3, 4, 5, 8, 16), (1, 2, 4, 8, 16),
                   (1, 2, 3, 4, 6, 8, 9, 12, 16, 17, 24, 32, 64), (2, 4, 8, 9, 16, 17, 33, 64, 65, 128), 2,
                   tuple(range(16))),
    # For tests: seconds, still every regime.
    "tiny": Space("tiny", (1, 2, 3, 16, 64), (1, 2, 3, 8), (1, 2, 5), (1, 2, 4), (1, 4, 8, 17),
                  (3, 8, 17, 128), 1, (0, 1, 3, 7)),
}


def _product(**dims) -> dict[str, torch.Tensor]:
    names = list(dims)
    axes = [torch.as_tensor(list(dims[n]), dtype=cf.INT) for n in names]
    grids = torch.meshgrid(*axes, indexing="ij")
    return {n: g.flatten() for n, g in zip(names, grids)}


def launch_grid(space: Space, algorithm: str | None, page_size: int, *, valid_only: bool = True) -> cf.LaunchGrid:
    """Every valid launch configuration of ``algorithm`` at one page size: built by product, then masked."""
    p, dcp = [page_size], space.dcp_sizes
    a = algorithm
    if a is None:
        t = _product(page_size=p, attn_dcp_size=dcp)
        zero = torch.zeros_like(t["page_size"])
        g = cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], zero, zero, zero, zero)
    elif a in algo.EAGLE_FAMILY:
        drafts = sorted(set(space.draft_tokens) | {s + 1 for s in space.steps})  # topk 1 forces D = S + 1
        t = _product(page_size=p, attn_dcp_size=dcp, num_steps=space.steps, topk=space.topks, draft_tokens=drafts)
        g = cf.LaunchGrid(a, *t.values(), torch.zeros_like(t["page_size"]))
        if a in algo.ADAPTIVE:
            g = _concat(g, _adaptive_grid(space, a, page_size))
    elif a == algo.NGRAM:
        t = _product(page_size=p, attn_dcp_size=dcp, topk=space.topks, draft_tokens=space.draft_tokens)
        steps = t["draft_tokens"] // t["topk"]  # server_args: S = D // K
        g = cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], steps, t["topk"], t["draft_tokens"],
                          torch.zeros_like(steps))
    elif a in algo.DFLASH_FAMILY:
        t = _product(page_size=p, attn_dcp_size=dcp, draft_tokens=space.draft_tokens)
        one = torch.ones_like(t["page_size"])
        g = cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], one, one, t["draft_tokens"], 0 * one)
    else:
        t = _product(page_size=p, attn_dcp_size=dcp, num_steps=space.steps, topk=space.topks,
                     draft_tokens=space.uno_draft_tokens)
        g = cf.LaunchGrid(a, *t.values(), torch.zeros_like(t["page_size"]))
    return g.select(cf.valid_mask(g)) if valid_only else g


def _adaptive_grid(space: Space, a: str, page_size: int) -> cf.LaunchGrid:
    pairs = [(cf.bitmask(c), s) for c in space.candidate_sets() for s in c]
    masks = torch.tensor([m for m, _ in pairs], dtype=cf.INT)
    steps = torch.tensor([s for _, s in pairs], dtype=cf.INT)
    t = _product(page_size=[page_size], attn_dcp_size=space.dcp_sizes, pair=range(len(pairs)))
    s = steps[t["pair"]]
    return cf.LaunchGrid(a, t["page_size"], t["attn_dcp_size"], s, torch.ones_like(s), s + 1, masks[t["pair"]])


def _concat(a: cf.LaunchGrid, b: cf.LaunchGrid) -> cf.LaunchGrid:
    return cf.LaunchGrid(a.algorithm, *(torch.cat([getattr(a, n), getattr(b, n)])
                                        for n in ("page_size", "attn_dcp_size", "num_steps", "topk", "draft_tokens", "candidates")))


def regime_codes(g: cf.LaunchGrid, config: torch.Tensor, alloc_page: torch.Tensor) -> torch.Tensor:
    """``fuzz.properties.regime`` of each configuration index, as an index into REGIMES."""
    a = g.algorithm
    code = torch.full_like(config, REGIMES.index("dflash" if a in algo.DFLASH_FAMILY else "paged"))
    code = torch.where(g.adaptive[config], REGIMES.index("adaptive"), code)
    if a is not None and algo.has_draft_kv(a):
        code = torch.where(g.topk[config] > 1, REGIMES.index("tree"), code)
    code = torch.where(g.attn_dcp_size[config] > 1, REGIMES.index("dcp>1"), code)
    return torch.where(alloc_page == 1, REGIMES.index("alloc-page-1"), code)


# -- sizing numbers: vectorized model, or the target's own functions ------------------------


class CountingSizing:
    """A target's sizing surface that counts calls per function (what --calls costs)."""

    def __init__(self, sizing):
        self._sizing = sizing
        self.calls: dict[str, int] = {}

    def __getattr__(self, name):
        fn = getattr(self._sizing, name)
        if not callable(fn):
            return fn

        def counted(*args, **kw):
            self.calls[name] = self.calls.get(name, 0) + 1
            return fn(*args, **kw)

        return counted


@dataclass
class CalledRows:
    rows: cf.DecodeRows  # the rows with a recognised growth rule
    raised: torch.Tensor  # per configuration: a sizing function raised (a finding)
    unproven: torch.Tensor  # per configuration: some growth rule is neither page-rounded nor exact
    first_error: str | None = None


def called_rows(target: Target, sizing: CountingSizing, g: cf.LaunchGrid) -> CalledRows:
    """The sizing numbers of every configuration from the target's functions, one call per distinct point."""
    path = cf.write_path(g.algorithm)
    cols: dict[str, list[int]] = {k: [] for k in ("config", "steps", "drafts", "page", "reserve", "extra")}
    raised = torch.zeros(len(g), dtype=torch.bool)
    first_error = None
    for i in range(len(g)):
        cfg = ServingConfig.resolve(context_len=SIZING_CONTEXT_LEN, **g.config_kwargs(i))
        try:
            extra = int(sizing.req_to_token_extra_context_len(cfg))
            shapes = [(rt, int(decode_reserve(cfg, rt, sizing))) for rt in cfg.runtimes()]
        except TargetCallError as e:
            raised[i] = True
            first_error = first_error or f"{cfg.short()}: {e}"
            continue
        for rt, reserve in shapes:
            for k, v in zip(cols, (i, rt.num_steps if rt else 0, rt.num_draft_tokens if rt else 0,
                                   allocator_page_size(cfg), reserve, extra)):
                cols[k].append(v)
    kinds = {}
    for reserve, page in sorted(set(zip(cols["reserve"], cols["page"]))):
        try:
            kinds[reserve, page] = growth_kind(target, sizing, path, reserve, page)
        except TargetCallError as e:
            kinds[reserve, page] = "raised"
            first_error = first_error or f"page_aligned_decode_alloc_lens(reserve={reserve}, page={page}): {e}"
    kind = [kinds[k] for k in zip(cols["reserve"], cols["page"])]
    unproven = torch.zeros(len(g), dtype=torch.bool)
    for c, k in zip(cols["config"], kind):
        raised[c] |= k == "raised"
        unproven[c] |= k == "other"
    t = {k: torch.tensor(v, dtype=cf.INT) for k, v in cols.items()}
    rows = cf.DecodeRows(t["config"], t["steps"], t["drafts"], t["page"], t["reserve"], t["extra"],
                         torch.tensor([k == "aligned" for k in kind], dtype=torch.bool))
    unproven &= ~raised
    keep = ~(raised | unproven)[t["config"]] if len(kind) else torch.zeros(0, dtype=torch.bool)
    return CalledRows(rows.select(keep), raised, unproven, first_error)


def growth_kind(target: Target, sizing, path: str, reserve: int, page: int) -> str:
    """How the target grows kv_allocated_len: "aligned" (ceil_P(c + R)), "exact" (c + R) or "other".

    One call over a whole page of committed lengths (a fresh request: a = c).
    """
    base = 1024 * page
    lens = [(base + j, base + j) for j in range(page)]
    got = [int(n) for n in decode_alloc_ends(path, lens, reserve, page, sizing, target.revision)]
    if got == [max(c, ceil_to_page(c + reserve, page)) for c, _ in lens]:
        return "aligned"
    if got == [max(c, c + reserve) for c, _ in lens]:
        return "exact"
    return "other"


# -- the sweep ---------------------------------------------------------------------------


@dataclass
class Witness:
    """A concrete configuration and decode scenario that reaches a group's worst value."""

    config: dict
    scenario: dict  # DecodeScenario.to_dict()
    value: int

    def decode_scenario(self) -> DecodeScenario:
        return DecodeScenario.from_dict(ServingConfig.from_dict(self.config), self.scenario)


@dataclass
class Group:
    """Configurations of one bug group (property / regime) that break their property."""

    signature: str
    configurations: int = 0
    worst: int | None = None  # columns past the end (write-within-row, drafts) / unrecorded tail (growth)
    witness: Witness | None = None
    first_at: int | None = None  # configurations swept before the first one of this group
    confirmed: str | None = None  # the step-by-step model's account of the witness
    mismatch: str | None = None
    case_path: str | None = None

    def to_json(self) -> dict:
        d = {"signature": self.signature, "configurations": self.configurations, "worst": self.worst,
             "first_at": self.first_at}
        if self.witness:
            d.update(config=self.witness.config, case=self.witness.scenario)
        if self.confirmed:
            d["model"] = self.confirmed
        if self.mismatch:
            d["mismatch"] = self.mismatch
        if self.case_path:
            d["repro"] = repro_line(self.case_path)
        return d


@dataclass
class ProveResult:
    target: str
    space: Space
    method: str
    launch_configurations: int = 0
    decode_shapes: int = 0  # launch configurations x run-time shapes
    configurations: int = 0  # x overlap on/off x residues of C mod the allocator page
    groups: dict[str, Group] = field(default_factory=dict)
    sizing_calls: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    stopped_early: bool = False
    first_error: str | None = None
    # min slack (row width - worst write end) per (page_size, attn_dcp_size), write-within-row
    heat: dict[tuple[int, int], int] = field(default_factory=dict)

    @property
    def violations(self) -> int:
        return sum(g.configurations for g in self.groups.values())

    @property
    def status(self) -> str:
        return "violations" if self.groups else "clean"

    def to_json(self) -> dict:
        return {
            "target": self.target, "status": self.status, "space": self.space.name, "method": self.method,
            "launch_configurations": self.launch_configurations, "decode_shapes": self.decode_shapes,
            "configurations": self.configurations, "violations": self.violations,
            "seconds": round(self.seconds, 3), "sizing_calls": self.sizing_calls,
            "groups": [g.to_json() for g in sorted(self.groups.values(), key=lambda g: g.signature)],
        }


def target_algorithms(target: Target, only: str | None = "all") -> list[str | None]:
    known = [None] + [a for a in algo.ALL if a in target.revision.algorithms]
    if only == "all":
        return known
    if only not in known:
        raise ValueError(f"{target.spec} has no speculative algorithm {only} (known: none, "
                         f"{', '.join(a for a in known if a)})")
    return [only]


def prove(
    target: Target,
    space: Space | str = "full",
    *,
    algorithm: str | None = "all",
    calls: bool | None = None,
    stop_when: Callable[[ProveResult], bool] | None = None,
) -> ProveResult:
    """Sweep the space on ``target``; ``calls`` (default: not a model target) uses its sizing functions.

    One torch thread: the tensors are large enough that a second thread
    would help on an idle machine, but its spin-waits make the sweep several
    times slower on a shared one (a CI runner, parallel test workers).
    """
    with one_torch_thread():
        return _prove(target, space, algorithm, calls, stop_when)


def _prove(target, space, algorithm, calls, stop_when) -> ProveResult:
    space = SPACES[space] if isinstance(space, str) else space
    calls = not target.is_model if calls is None else calls
    result = ProveResult(target.spec, space, "sizing calls per configuration" if calls else "vectorized model")
    sizing = CountingSizing(target.sizing)
    t0 = time.monotonic()
    gaps = {ov: cf.committed_gap(target.revision, ov) for ov in (False, True)}
    for a in target_algorithms(target, algorithm):
        for page_size in space.page_sizes:
            g = launch_grid(space, a, page_size)
            if not len(g):
                continue
            result.launch_configurations += len(g)
            if calls:
                got = called_rows(target, sizing, g)
                result.first_error = result.first_error or got.first_error
                _record_configs(result, g, got.raised, SIZING_RAISED, True)
                _record_configs(result, g, got.unproven, f"{UNPROVEN}/growth-rule", False)
                rows = got.rows
            else:
                rows = cf.model_decode_rows(g, target.revision)
            _sweep_block(result, g, rows, gaps)
            if stop_when and stop_when(result):
                result.stopped_early = True
                break
        if result.stopped_early:
            break
    result.sizing_calls = dict(sizing.calls)
    result.seconds = time.monotonic() - t0
    return result


def _sweep_block(result: ProveResult, g: cf.LaunchGrid, rows: cf.DecodeRows, gaps: dict[bool, int]) -> None:
    if not len(rows):
        return
    a = g.algorithm
    page = rows.alloc_page
    regime = regime_codes(g, rows.config, rows.alloc_page)
    topk = g.topk[rows.config]
    result.decode_shapes += len(rows)
    for overlap in (False, True):
        before = result.configurations
        result.configurations += int(page.sum())
        offsets = before + torch.cumsum(page, 0, dtype=torch.int64) - page  # configurations swept before each row
        gap = gaps[overlap]
        worst, spilling = cf.worst_write_overshoot(rows, gap)
        _record(result, g, rows, regime, WRITE_WITHIN_ROW, spilling, worst, offsets,
                lambda i: _write_witness(g, rows, i, gap, overlap, int(worst[i])))
        _record_heat(result, g, rows, -worst)
        if a is None:
            continue
        lag = g.max_draft_tokens[rows.config] if overlap else torch.zeros_like(page)
        dworst, dcommitted = cf.worst_draft_overshoot(rows, a, topk, lag)
        _record(result, g, rows, regime, DRAFTS_WITHIN_ALLOCATION, torch.where(dworst > 0, page, 0), dworst, offsets,
                lambda i: _draft_witness(g, rows, i, gap, overlap, int(dworst[i]), int(dcommitted[i]), int(lag[i])))
        tail = cf.unaligned_growth(rows, a)
        _record(result, g, rows, regime, PAGE_ALIGNED_GROWTH, torch.where(tail, page, 0), page - 1, offsets,
                lambda i: _write_witness(g, rows, i, gap, overlap, int(page[i]) - 1))


def _record(result, g, rows, regime, prop, counts, values, offsets, witness: Callable[[int], Witness]) -> None:
    bad = counts > 0
    if not bool(bad.any()):
        return
    for code in torch.unique(regime[bad]).tolist():
        mask = bad & (regime == code)
        sig = f"{prop}/{REGIMES[code]}"
        grp = result.groups.setdefault(sig, Group(sig))
        grp.configurations += int(counts[mask].sum())
        if grp.first_at is None:
            grp.first_at = int(offsets[mask.nonzero()[0, 0]])
        masked = torch.where(mask, values, torch.iinfo(cf.INT).min)
        i = int(torch.argmax(masked))
        if grp.worst is None or int(values[i]) > grp.worst:
            grp.worst = int(values[i])
            grp.witness = witness(i)


def _record_heat(result, g, rows, slack) -> None:
    dcp = g.attn_dcp_size[rows.config].long()  # an index
    top = torch.iinfo(cf.INT).max
    low = torch.full((int(dcp.max()) + 1,), top, dtype=cf.INT).scatter_reduce(0, dcp, slack, "amin")
    p = int(g.page_size[0])
    for d in (low < top).nonzero().flatten().tolist():
        v = int(low[d])
        result.heat[p, d] = min(v, result.heat.get((p, d), v))


def _record_configs(result, g, which: torch.Tensor, group: str, regimed: bool) -> None:
    """Whole configurations (every residue, overlap on and off) in one group: raised, or unproven."""
    if not bool(which.any()):
        return
    i = which.nonzero().flatten()
    page = g.page_size[i] * g.attn_dcp_size[i]
    regime = regime_codes(g, i, page)
    for code in torch.unique(regime).tolist():
        m = regime == code
        sig = f"{group}/{REGIMES[code]}" if regimed else group
        grp = result.groups.setdefault(sig, Group(sig))
        grp.configurations += 2 * int(page[m].sum())
        result.configurations += 2 * int(page[m].sum())
        if grp.witness is None:
            k = int(i[m.nonzero()[0, 0]])
            grp.witness = Witness(_witness_config(g, k, int(page[m][0]), 0, False), {"committed_len": 1}, 0)


def _witness_config(g, i: int, page: int, residue: int, overlap: bool) -> dict:
    pages = max(2, -(-WITNESS_CONTEXT_LEN // page))
    return {"context_len": pages * page + residue, "enable_overlap": overlap, **g.config_kwargs(i)}


def _runtime_steps(g, rows, r: int) -> int | None:
    return int(rows.num_steps[r]) if bool(g.adaptive[rows.config[r]]) else None


def _write_witness(g, rows, r: int, gap: int, overlap: bool, value: int) -> Witness:
    page, reserve = int(rows.alloc_page[r]), int(rows.reserve[r])
    residue = (1 - reserve + gap) % page  # c + R = 1 mod P: the rounding adds P - 1
    config = _witness_config(g, int(rows.config[r]), page, residue, overlap)
    case = {"committed_len": config["context_len"] - gap, "num_steps": _runtime_steps(g, rows, r),
            "prior": None, "device_lag": 0}
    return Witness(config, case, value)


def _draft_witness(g, rows, r: int, gap: int, overlap: bool, value: int, committed: int, lag: int) -> Witness:
    page = int(rows.alloc_page[r])
    config = _witness_config(g, int(rows.config[r]), page, 0, overlap)
    bound = config["context_len"] - gap
    c = bound - (bound - committed) % page  # the longest committed length with the worst page offset
    return Witness(config, {"committed_len": c, "num_steps": _runtime_steps(g, rows, r), "prior": None,
                            "device_lag": lag}, value)


# -- confirmation on the step-by-step model ------------------------------------------------


def confirm(target: Target, result: ProveResult) -> None:
    """Replay each group's witness on the step-by-step model: same group, same worst value."""
    from fuzz.run.engine import check_scenario

    for grp in result.groups.values():
        prop = grp.signature.split("/")[0]
        if prop in (SIZING_RAISED, UNPROVEN) or grp.witness is None:
            continue
        scenario = grp.witness.decode_scenario()
        _, found = check_scenario(target, scenario, props=(Property(prop),))
        same = [v for v in found if str(v.signature) == grp.signature]
        if not same:
            got = ", ".join(str(v.signature) for v in found) or "no violation"
            grp.mismatch = f"the step-by-step model reports {got} for the witness"
            continue
        v = same[0]
        grp.confirmed = v.describe()
        if prop != PAGE_ALIGNED_GROWTH and v.overshoot != grp.worst:
            grp.mismatch = f"closed form says {grp.worst} columns, the step-by-step model {v.overshoot}"


