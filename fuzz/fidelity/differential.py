"""Differential fidelity (the engine of ``python -m fuzz fidelity``) and the replay of its case files.

The model is only worth its agreement with the code it stands for.  For
every configuration of a pool drawn from ``strategies.configs.serving_configs``
(10,000 distinct by default, the same pool for every release), every sizing
function is called on both sides and must return the same value.  That pool
follows the strategies' proportions (the standard KV pool most of the time);
``per_kind`` (``fidelity --per-kind N``, and ``matrix``) draws N distinct
configurations for each kind of KV pool the release builds instead, with the
kind pinned (``kind_case_pool``), and tallies the agreeing ones per kind:

    allocator_page_size                the page the kind's allocator is built with (read where SGLang
                                       builds it: ``fuzz.targets.sglang.allocators``)
    alloc_page_size                    (files that define it: 0.5.19+)
    alloc_len_per_decode, reserve      every run-time shape of the config (adaptive: each candidate)
    req_to_token_extra_context_len     launch shape
    req_to_token_row_width             launch shape (C + extra, or the file's own: SGLang main)
    page_aligned_decode_alloc_lens     request lengths near the limit (files that define it: 0.5.19+)

Where a file's design differs from the model's on purpose (``by_design``:
SGLang main page-aligns the row instead of adding P - 1 to the headroom),
those functions are listed as differing by design and not compared; the
rest must still agree.

A disagreement is a ``Finding`` of kind ``fidelity-case`` and class
``model-mismatch``, grouped by function (``model-mismatch/<function>``),
shrunk by Hypothesis to a minimal configuration; its case file replays with
``python -m fuzz repro`` (``replay_fidelity``, named in
``fuzz.findings.casefile.REPLAYERS``).  Printing and saving are the
command's (``fuzz.fidelity.cli``).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, find, given
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as Settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from allocator_model import algorithms as algo
from allocator_model.allocator import allocator_page_size
from allocator_model.config import ConfigError, ServingConfig, SpecRuntime
from allocator_model.pools import KVPool
from allocator_model.revisions import REFERENCE, REVISIONS, Revision
from allocator_model.scheduler import max_committed_len_at_decode_alloc
from allocator_model.sizing import ModelSizing
from fuzz.findings import casefile
from fuzz.findings.kinds import CaseKind, Property, Signature
from fuzz.findings.model import Finding, Violation, sizing_raised
from fuzz.findings.report import Status
from fuzz.targets.base import SizingSurface, Target, TargetCallError
from strategies import space
from strategies.configs import serving_configs
from strategies.uniform import RandomChooser

MODEL_MISMATCH = Property.MODEL_MISMATCH
DEFAULT_CONFIGS = 10_000
FUNCTIONS = (
    "allocator_page_size",
    "alloc_page_size",
    "alloc_len_per_decode",
    "alloc_reserve_per_decode",
    "req_to_token_extra_context_len",
    "req_to_token_row_width",
    "page_aligned_decode_alloc_lens",
)


PAGE_FOLLOWS_ALLOCATOR = "main sizes the decode reserve at the allocator's own page (resolve_kv_bookkeeping_page)"


def per_config_design(real: SizingSurface, cfg: ServingConfig) -> set[str]:
    """Functions that differ by design on this configuration only (``PAGE_FOLLOWS_ALLOCATOR``).

    Main hands its decode length and reserve the allocator's page; the
    model's revisions size them at page_size * attn_dcp_size, which a
    bare-page allocator (SWA, HiSparse) does not use under DCP.
    """
    generation = getattr(real, "generation", None)
    if generation is not None and generation.page_keyword and cfg.kv_pool.bare_page and cfg.attn_dcp_size > 1:
        return {"alloc_len_per_decode", "alloc_reserve_per_decode"}
    return set()


def by_design(real: SizingSurface) -> dict[str, str]:
    """The functions on which a real file differs from every modeled revision by design, and why.

    SGLang main (the row-width API generation) covers the rounding of the
    last page by page-aligning the row (get_req_to_token_row_width) and
    sizes the headroom as the largest reserve over the candidate pages; the
    model's revisions keep W = C + extra and add P - 1 to the headroom.  The
    two designs give different numbers for the same safe outcome, which
    ``run`` and ``prove`` check on the file itself.
    """
    generation = getattr(real, "generation", None)
    if generation is None or not generation.has_row_width:
        return {}
    why = "main page-aligns the row to the allocator page instead of adding P - 1 to the headroom"
    return {
        "req_to_token_extra_context_len": why,
        "req_to_token_row_width": why,
        "alloc_len_per_decode (bare-page kinds under DCP)": PAGE_FOLLOWS_ALLOCATOR,
    }


@dataclass(frozen=True)
class FidelityCase:
    """One configuration, and the (kv_committed_len, kv_allocated_len) pairs the aligned lens are compared on."""

    config: ServingConfig
    lens: tuple[tuple[int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"lens": [list(p) for p in self.lens]}

    @classmethod
    def from_dict(cls, config: ServingConfig, data: Any) -> FidelityCase:
        try:
            lens = tuple((int(c), int(a)) for c, a in data["lens"])
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"malformed fidelity case: {e}") from None
        return cls(config, lens)


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


def fidelity_cases(
    algorithms: Iterable[str], revision: Revision = REFERENCE, kind: KVPool | None = None
) -> st.SearchStrategy[FidelityCase]:
    """Cases over every kind of KV pool ``revision`` builds (each with the algorithms it runs there).

    ``kind``: that kind only, pinned (``kind_pins``), with the algorithms it runs.
    """
    if kind is None:
        pools = revision.pool_algorithm_map()
        configs = serving_configs(tuple(algorithms), pools=pools)
    else:
        runs = tuple(sorted(set(algorithms) & revision.pool_algorithms(kind)))
        configs = serving_configs(runs, pins=kind_pins(kind, revision), pools={kind: runs})
    return configs.filter(lambda cfg: revision.refuses(cfg) is None).map(lambda cfg: FidelityCase(cfg, lens_for(cfg)))


def dcp_allowed(kind: KVPool, revision: Revision) -> bool:
    """Whether ``revision`` launches ``kind`` with attn_dcp_size > 1 at all (``Revision.dcp``, ``unified_dcp``)."""
    return revision.dcp and not kind.refuses_dcp and (revision.unified_dcp or not kind.unified)


def kind_pins(kind: KVPool, revision: Revision) -> dict[str, Any]:
    """The fields a per-kind draw pins: the kind, and attn_dcp_size 1 where the revision refuses DCP on it."""
    return {"kv_pool": kind} if dcp_allowed(kind, revision) else {"kv_pool": kind, "attn_dcp_size": 1}


def _unique_runtimes(cfg: ServingConfig) -> list[SpecRuntime | None]:
    seen: list[SpecRuntime | None] = []
    for rt in list(cfg.runtimes()) + [cfg.launch_runtime]:
        if rt not in seen:
            seen.append(rt)
    return seen


def disagreements(real: SizingSurface, model: ModelSizing, case: FidelityCase) -> list[Violation]:
    """Every sizing function on which ``real`` and ``model`` differ for this case (one violation per function)."""
    cfg = case.config
    found: dict[str, Violation] = {}
    skipped = set(by_design(real)) | per_config_design(real, cfg)

    def compare(fn: str, args: str, call_real: Callable[..., Any], call_model: Callable[..., Any], *call: Any) -> None:
        """``call_real(*call)`` against ``call_model(*call)``; the first difference per function is kept."""
        if fn in found or fn in skipped:
            return
        try:
            got = call_real(*call)
        except TargetCallError as e:
            found[fn] = sizing_raised(cfg, e)
            return
        want = call_model(*call)
        if got != want:
            found[fn] = Violation(MODEL_MISMATCH, fn, f"{fn}({args}): real {got}, model {model.revision.name} {want}")

    in_file = getattr(real, "in_file", lambda name: True)
    if in_file("allocator_page_size"):
        compare("allocator_page_size", "", real.allocator_page_size, model.allocator_page_size, cfg)
    if in_file("alloc_page_size"):
        compare("alloc_page_size", "", real.alloc_page_size, model.alloc_page_size, cfg)
    for rt in _unique_runtimes(cfg):
        shape = "no spec" if rt is None else f"num_steps={rt.num_steps} num_draft_tokens={rt.num_draft_tokens}"
        compare("alloc_len_per_decode", shape, real.alloc_len_per_decode, model.alloc_len_per_decode, cfg, rt)
        compare(
            "alloc_reserve_per_decode", shape, real.alloc_reserve_per_decode, model.alloc_reserve_per_decode, cfg, rt
        )
    compare(
        "req_to_token_extra_context_len",
        "",
        real.req_to_token_extra_context_len,
        model.req_to_token_extra_context_len,
        cfg,
    )
    compare("req_to_token_row_width", "", real.req_to_token_row_width, model.req_to_token_row_width, cfg)
    if in_file("page_aligned_decode_alloc_lens"):
        page = allocator_page_size(cfg)
        for rt in _unique_runtimes(cfg):
            reserve = model.alloc_reserve_per_decode(cfg, rt)
            lens = list(case.lens)
            compare(
                "page_aligned_decode_alloc_lens",
                f"{lens}, reserve={reserve}, page={page}",
                real.page_aligned_decode_alloc_lens,
                model.page_aligned_decode_alloc_lens,
                lens,
                reserve,
                page,
            )
    return list(found.values())


# -- the configuration pool ---------------------------------------------------


def _settings(n: int) -> Settings:
    return Settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


_MASTER: dict[ServingConfig, FidelityCase] = {}  # one pool over every algorithm, grown on demand
_BATCHES = [0]


def _grow_master(examples: int) -> None:
    """Draw ``examples`` more cases into the master pool: derandomized first, then one fixed seed per batch."""
    batch = _BATCHES[0]
    strategy = fidelity_cases(algo.ALL)

    def collect(case: FidelityCase) -> None:
        _MASTER.setdefault(case.config, case)

    test = Settings(_settings(examples), derandomize=batch == 0)(given(strategy)(collect))
    (hypothesis_seed(batch)(test) if batch else test)()
    _BATCHES[0] += 1


def case_pool(algorithms: Iterable[str], n: int, revision: Revision | None = None) -> list[FidelityCase]:
    """``n`` cases with distinct configurations using only ``algorithms``; the same on every call and every run.

    Every release draws from one pool (memoized per process), so releases
    are compared on the same configurations, and the pool is paid for once.
    """
    allowed = set(algorithms) | {None}

    def usable() -> list[FidelityCase]:
        return [
            c
            for c in _MASTER.values()
            if c.config.speculative_algorithm in allowed and (revision is None or revision.refuses(c.config) is None)
        ]

    while len(usable()) < n and _BATCHES[0] < 50:
        share = max(len(usable()), 1) / max(len(_MASTER), 1) if _MASTER else len(allowed) / (len(algo.ALL) + 1)
        _grow_master(int((n - len(usable())) / share * 1.02) + 10)
    return usable()[:n]


class PreferringChooser(RandomChooser):
    """``random.Random`` behind the walk of ``strategies.space``, preferring as the strategies do.

    ``often`` takes its value half the time (as ``strategies.configs.DrawChooser``
    does), so a stratified draw keeps the strategies' weights (page 1, SGLang's
    default spec shapes) at a fraction of Hypothesis' cost per example.
    """

    def often(self, value: Any, values: Iterable[Any]) -> Any:
        return self.sampled_from(values) if self.booleans() else value


@dataclass
class _KindStream:
    """One kind's draws for one algorithm set: a seeded sampler and the distinct cases it has drawn so far."""

    chooser: PreferringChooser
    cases: list[FidelityCase] = field(default_factory=list)
    seen: set[ServingConfig] = field(default_factory=set)
    draws: int = 0


_KIND_STREAMS: dict[tuple[KVPool, frozenset[str], bool], _KindStream] = {}
DRAWS_PER_CASE = 20  # draws per wanted case before a kind's space counts as exhausted (never reached in practice)


def kind_case_pool(kind: KVPool, algorithms: Iterable[str], n: int, revision: Revision) -> list[FidelityCase]:
    """``n`` cases with distinct configurations of KV pool ``kind``, drawn with the kind pinned.

    Every algorithm ``revision`` runs on the kind (``Revision.pool_algorithms``,
    within ``algorithms``), DCP where the revision allows it on the kind.  The
    draw is seeded by (kind, algorithms, DCP allowed), so releases that run the
    same algorithms on a kind are compared on the same configurations, run
    after run; memoized per process.  Fewer than ``n`` only if the space runs
    out (``DRAWS_PER_CASE``).
    """
    runs = frozenset(algorithms) & revision.pool_algorithms(kind)
    allowed = dcp_allowed(kind, revision)
    key = (kind, runs, allowed)
    if key not in _KIND_STREAMS:
        seed = f"{kind.value}|{','.join(sorted(runs))}|dcp={allowed}"
        _KIND_STREAMS[key] = _KindStream(PreferringChooser(random.Random(seed)))
    stream = _KIND_STREAMS[key]
    pins = kind_pins(kind, revision)
    while len(stream.cases) < n and stream.draws < DRAWS_PER_CASE * n:
        stream.draws += 1
        cfg = space.serving_config(stream.chooser, runs, pins, {kind: runs}, dcp=allowed)
        if cfg is None or cfg in stream.seen or revision.refuses(cfg) is not None:
            continue
        stream.seen.add(cfg)
        stream.cases.append(FidelityCase(cfg, lens_for(cfg)))
    return stream.cases[:n]


# -- a fidelity run -----------------------------------------------------------


@dataclass
class KindTally:
    """One kind of KV pool in a fidelity run: configurations compared, and on how many every function agreed."""

    configs: int = 0
    agree: int = 0

    def to_json(self) -> dict[str, int]:
        return {"configs": self.configs, "agree": self.agree}


@dataclass
class FidelityResult:
    """One target against one model revision: what was compared, and one finding per disagreeing function."""

    target: str
    revision: str
    configs: int = 0  # in all (per-kind mode: the sum over the kinds)
    functions: list[str] = field(default_factory=list)  # compared against the file (the rest: not in the file)
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    differs_by_design: dict[str, str] = field(default_factory=dict)  # function -> why it is not compared
    per_kind: int | None = None  # configurations asked for each kind (None: one pool over every kind)
    kinds: dict[KVPool, KindTally] = field(default_factory=dict)  # in KVPool order

    @property
    def status(self) -> Status:
        return Status.COUNTEREXAMPLE if self.findings else Status.CLEAN

    def kinds_text(self) -> str:
        """Per kind, the agreeing configurations of those compared: ``standard 10000/10000, swa 9998/10000``."""
        return ", ".join(f"{k.value} {t.agree}/{t.configs}" for k, t in self.kinds.items())

    def summary(self) -> str:
        design = ""
        if self.differs_by_design:
            reasons = sorted(set(self.differs_by_design.values()))
            design = f"; differs by design in {', '.join(self.differs_by_design)} ({'; '.join(reasons)})"
        per_kind = f" (per KV pool kind, agreeing/compared: {self.kinds_text()})" if self.per_kind is not None else ""
        if not self.findings:
            return f"agrees on {self.configs} configs ({len(self.functions)} functions){per_kind}{design}"
        groups = ", ".join(str(f.signature) for f in self.findings)
        return f"{len(self.findings)} mismatch group(s): {groups}{per_kind}{design}"

    def to_json(self) -> dict[str, Any]:
        """The target's entry in a report (``fuzz.findings.report``)."""
        return {
            "target": self.target,
            "status": self.status.value,
            "seconds": round(self.seconds, 3),
            "revision": self.revision,
            "configs": self.configs,
            "functions": self.functions,
            "differs_by_design": self.differs_by_design,
            "per_kind": self.per_kind,
            "kinds": {k.value: t.to_json() for k, t in self.kinds.items()},
            "findings": [f.to_json() for f in self.findings],
        }


def _minimal(
    real: SizingSurface,
    model: ModelSizing,
    signature: Signature,
    algorithms: Iterable[str],
    first: FidelityCase,
    kind: KVPool | None = None,
) -> FidelityCase:
    """Hypothesis's smallest case of a group (the pool's case if the search does not meet it again).

    ``kind``: the search keeps that kind of KV pool (a per-kind run's group is the kind's).
    """
    try:
        found: FidelityCase = find(
            fidelity_cases(tuple(sorted(algorithms, key=str)), model.revision, kind),
            lambda c: any(v.signature == signature for v in disagreements(real, model, c)),
            settings=Settings(_settings(2_000), phases=[Phase.generate, Phase.shrink]),
        )
        return found
    except NoSuchExample:
        return first


def fidelity(
    target: Target,
    *,
    revision: Revision | None = None,
    configs: int = DEFAULT_CONFIGS,
    per_kind: int | None = None,
) -> FidelityResult:
    """Compare ``target``'s sizing with ``revision`` (default: the modeled revision of its version).

    ``configs`` distinct configurations from one pool over every kind of KV
    pool (drawn in the strategies' proportions); or, with ``per_kind``, that
    many for each kind both sides build, drawn with the kind pinned
    (``kind_case_pool``).  Either way every kind's tally is kept.
    """
    revision = revision or target.revision
    model = ModelSizing(revision)
    real = target.sizing
    in_file = getattr(real, "in_file", lambda name: True)
    design = by_design(real)
    result = FidelityResult(
        target.spec,
        revision.name,
        functions=[f for f in FUNCTIONS if in_file(f) and f not in design],
        differs_by_design=design,
        per_kind=per_kind,
    )
    started = time.monotonic()
    algorithms = revision.algorithms & target.revision.algorithms  # what both sides size (main has no UNO branch)
    kinds = [k for k in KVPool if k in revision.pools and k in target.revision.pools]
    if per_kind is None:
        pools: list[tuple[KVPool | None, list[FidelityCase]]] = [(None, case_pool(algorithms, configs, revision))]
    else:
        released = {k: target.revision.pool_algorithms(k) for k in kinds}  # what the release itself runs there
        pools = [(k, kind_case_pool(k, algorithms & released[k], per_kind, revision)) for k in kinds]
    first: dict[Signature, tuple[int, FidelityCase, KVPool | None]] = {}
    found_at = 0
    for kind, pool in pools:
        for case in pool:
            tally = result.kinds.setdefault(case.config.kv_pool, KindTally())
            tally.configs += 1
            found = disagreements(real, model, case)
            tally.agree += not found
            for v in found:
                first.setdefault(v.signature, (found_at, case, kind))
            found_at += 1
    result.kinds = {k: result.kinds[k] for k in KVPool if k in result.kinds}
    for sig in sorted(first, key=str):
        at, pool_case, kind = first[sig]
        case = _minimal(real, model, sig, algorithms, pool_case, kind)
        v = next(v for v in disagreements(real, model, case) if v.signature == sig)  # sizing-raised: one per function
        result.findings.append(
            Finding(
                CaseKind.FIDELITY,
                target.spec,
                v,
                case.config,
                case.to_dict(),
                found_at=at,
                revision=revision.name,
            )
        )
    result.configs = found_at
    result.seconds = time.monotonic() - started
    return result


# -- replay -------------------------------------------------------------------


def replay_fidelity(doc: dict[str, Any], where: str, named: str | None = None) -> casefile.Replay:
    """Replay a fidelity case file: the same configuration through the target's sizing and the model revision."""
    from fuzz.targets.base import TargetError
    from fuzz.targets.resolve import resolve_case_target

    try:
        case = FidelityCase.from_dict(ServingConfig.from_dict(doc["config"]), doc["case"])
    except (ConfigError, TypeError) as e:
        raise casefile.CaseFileError(f"{where}: {e}") from None
    name = doc.get("revision")
    if name not in REVISIONS:
        raise casefile.CaseFileError(f"{where}: unknown model revision {name!r} (known: {', '.join(REVISIONS)})")
    try:
        target = resolve_case_target(doc["target"], named)
    except TargetError as e:
        raise casefile.CaseFileError(f"{where}: {e}") from None
    found = disagreements(target.sizing, ModelSizing(REVISIONS[name]), case)
    lines = [
        f"target: {target.spec} against model {name}",
        f"config: {case.config.short()}",
        f"case:   {json.dumps(case.to_dict(), sort_keys=True)}",
    ]
    wanted = doc.get("signature")  # the JSON boundary: a signature as text
    same = [v for v in found if (str(v.signature) == wanted if wanted else v.prop.value == doc["property"])]
    if same:
        lines += [f"FAILS {same[0].signature}", same[0].describe()]
    else:
        lines.append(f"passes: {doc['property']} no longer fails on {target.spec}")
    return casefile.Replay(bool(same), "\n".join(lines))


__all__ = [
    "DEFAULT_CONFIGS",
    "MODEL_MISMATCH",
    "FidelityCase",
    "FidelityResult",
    "KindTally",
    "case_pool",
    "disagreements",
    "kind_case_pool",
    "fidelity",
    "replay_fidelity",
]
