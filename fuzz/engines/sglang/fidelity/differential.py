"""Differential fidelity (the engine of ``kvrow-fuzz fidelity``) and the replay of its case files.

The model is only worth its agreement with the code it stands for.  For
every configuration of a pool drawn by ``cases.sample_cases`` (10,000
distinct by default, the same configurations for every release that runs
them, whatever was sampled before), every entry of the declared sizing
surface that the target answers itself (``allocator_model.surface``:
``Provenance.READ``, ``Entry.compared``) is called on both sides and must return
the same value.  That pool follows the strategies' proportions (the standard
KV pool most of the time); ``per_kind`` (``fidelity --per-kind N``, and
``matrix``) draws N distinct configurations for each kind of KV pool the
release builds instead, the kind pinned, and tallies the agreeing ones per
kind.  The entries today:

    allocator_page_size                the page the kind's allocator is built with (read where SGLang
                                       builds it: ``fuzz.engines.sglang.real.allocators``)
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
``kvrow-fuzz repro`` (``replay.replay_fidelity``, named by its case type in
``fuzz.engines.sglang.cases``).  Printing and saving are the
command's (``fuzz.engines.sglang.fidelity.cli``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, Phase, find
from hypothesis import settings as Settings
from hypothesis.errors import NoSuchExample

from allocator_model.allocator import allocator_page_size
from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool
from allocator_model.revisions import Revision
from allocator_model.surface import Entry, EntryKind, Provenance, Shape, Surface, entries
from fuzz.common import interrupts
from fuzz.common.defaults import FIDELITY_CONFIGS
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.groups import sizing_raised
from fuzz.engines.sglang.own_path import has_sglang_path
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.model import Finding, Violation
from fuzz.findings.report import Status
from fuzz.targets.base import TargetCallError

from ..page_tables import GRAPH_TABLES
from .cases import FidelityCase, fidelity_cases, sample_cases
from .page_tables import TableTally, page_table_fidelity
from .writepath import PathTally, write_path_fidelity

MODEL_MISMATCH = Property.MODEL_MISMATCH
DEFAULT_CONFIGS = FIDELITY_CONFIGS


def compared(real: Surface) -> list[Entry]:
    """The entries fidelity compares on ``real``: declared comparable, answered by the target itself, and not
    different by design."""
    design = real.by_design()
    answered = (Provenance.READ, Provenance.MODEL)  # a model target compared with another revision answers every entry
    return [e for e in entries(EntryKind.SIZING) if e.compared and real.source(e) in answered and e.name not in design]


def _unique_runtimes(cfg: ServingConfig) -> list[SpecRuntime | None]:
    seen: list[SpecRuntime | None] = []
    for rt in list(cfg.runtimes()) + [cfg.launch_runtime]:
        if rt not in seen:
            seen.append(rt)
    return seen


def calls_of(entry: Entry, model: ModelSizing, case: FidelityCase) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """(what the message shows, the arguments) of every call fidelity makes of ``entry`` on ``case``."""
    cfg = case.config
    if entry.shape is Shape.LAUNCH:
        yield "", (cfg,)
    elif entry.shape is Shape.RUNTIME:
        for rt in _unique_runtimes(cfg):
            yield (
                ("no spec" if rt is None else f"num_steps={rt.num_steps} num_draft_tokens={rt.num_draft_tokens}"),
                (
                    cfg,
                    rt,
                ),
            )
    elif entry.shape is Shape.LENS:
        page = allocator_page_size(cfg)
        for rt in _unique_runtimes(cfg):
            reserve = model.alloc_reserve_per_decode(cfg, rt)
            lens = list(case.lens)
            yield f"{lens}, reserve={reserve}, page={page}", (lens, reserve, page)


def disagreements(real: Surface, model: ModelSizing, case: FidelityCase) -> list[Violation]:
    """Every compared entry on which ``real`` and ``model`` differ for this case (one violation per entry)."""
    cfg = case.config
    found: dict[str, Violation] = {}
    skipped = set(real.by_design(cfg))
    for entry in compared(real):
        if entry.name in skipped:
            continue
        for shown, args in calls_of(entry, model, case):
            try:
                got = real.call(entry, *args)
            except TargetCallError as e:
                found[entry.name] = sizing_raised(cfg, e)
                break
            want = model.call(entry, *args)
            if got != want:
                found[entry.name] = Violation(
                    MODEL_MISMATCH, entry.name, f"{entry.name}({shown}): real {got}, model {model.revision.name} {want}"
                )
                break
    return list(found.values())


def _settings(n: int) -> Settings:
    return Settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


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
    revision: Revision
    configs: int = 0  # in all (per-kind mode: the sum over the kinds)
    functions: list[str] = field(default_factory=list)  # compared against the file (the rest: not in the file)
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    differs_by_design: dict[str, str] = field(default_factory=dict)  # function -> why it is not compared
    per_kind: int | None = None  # configurations asked for each kind (None: one pool over every kind)
    kinds: dict[KVPool, KindTally] = field(default_factory=dict)  # in KVPool order
    # The decode write path against SGLang's own, per kind (``writepath``); empty: not compared (no SGLang path).
    write_path: dict[KVPool, PathTally] = field(default_factory=dict)
    # Each checked page table's builders against the model's twin, by table (``page_tables``); empty: not compared.
    page_tables: dict[str, TableTally] = field(default_factory=dict)
    interrupted: bool = False  # a signal stopped it: what it compared and found by then

    @property
    def status(self) -> Status:
        if self.findings:
            return Status.COUNTEREXAMPLE
        return Status.INTERRUPTED if self.interrupted else Status.CLEAN

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
            text = f"agrees on {self.configs} configs ({len(self.functions)} functions){per_kind}{design}"
            return text + self.write_path_text()
        groups = ", ".join(str(f.signature) for f in self.findings)
        return f"{len(self.findings)} mismatch group(s): {groups}{per_kind}{design}{self.write_path_text()}"

    def write_path_text(self) -> str:
        """``; write path on SGLang's code: standard 1000/1000 steps agree (EAGLE 120, ...), ...`` then each page
        table's ``; fa3_page_table: 1000/1000 builds agree (...)`` or why not ("" if none was compared)."""
        kinds = "; ".join(f"{k.value} {t.text()}" for k, t in self.write_path.items())
        text = f"; write path on SGLang's code: {kinds}" if kinds else ""
        return text + "".join(f"; {t.text()}" for t in self.page_tables.values())

    def to_json(self) -> dict[str, Any]:
        """The target's entry in a report (``fuzz.findings.report``)."""
        return {
            "target": self.target,
            "status": self.status.value,
            "seconds": round(self.seconds, 3),
            "revision": self.revision.name,
            "configs": self.configs,
            "functions": self.functions,
            "differs_by_design": self.differs_by_design,
            "per_kind": self.per_kind,
            "kinds": {k.value: t.to_json() for k, t in self.kinds.items()},
            "write_path": {k.value: t.to_json() for k, t in self.write_path.items()},
            "page_tables": {name: t.to_json() for name, t in self.page_tables.items()},
            "findings": [f.to_json() for f in self.findings],
        }


def _minimal(
    real: Surface,
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
            lambda c: _at_a_safe_point() and any(v.signature == signature for v in disagreements(real, model, c)),
            settings=Settings(_settings(2_000), phases=[Phase.generate, Phase.shrink]),
        )
        return found
    except NoSuchExample:
        return first


def _at_a_safe_point() -> bool:
    """Take a pending signal here (``fuzz.common.interrupts``), between two comparisons; True to go on."""
    interrupts.raise_if_requested()
    return True


def fidelity(
    target: SGLangTarget,
    *,
    revision: Revision | None = None,
    configs: int = DEFAULT_CONFIGS,
    per_kind: int | None = None,
    write_path_steps: int = 0,
    page_table_steps: int = 0,
) -> FidelityResult:
    """Compare ``target``'s sizing with ``revision`` (default: the modeled revision of its version).

    ``configs`` distinct configurations from one pool over every kind of KV
    pool (drawn in the strategies' proportions); or, with ``per_kind``, that
    many for each kind both sides build, drawn with the kind pinned
    (``cases.sample_cases``).  Either way every kind's tally is kept.
    ``write_path_steps``: that many decode steps per kind also run on SGLang's own write path and held to the
    model's (``writepath``), where the target has it; ``page_table_steps``: FA3's page-table builds alike
    (``page_tables``; where SGLang's builders cannot run, the tally says why).
    """
    revision = revision or target.revision
    model = ModelSizing(revision)
    real = target.sizing
    result = FidelityResult(
        target.spec,
        revision,
        functions=[e.name for e in compared(real)],
        differs_by_design=real.by_design(),
        per_kind=per_kind,
    )
    started = time.monotonic()
    algorithms = revision.algorithms & target.revision.algorithms  # what both sides size (main has no UNO branch)
    kinds = [k for k in KVPool if k in revision.pools and k in target.revision.pools]
    first: dict[Signature, tuple[int, FidelityCase, KVPool | None]] = {}
    with interrupts.deferred():  # a signal is taken between two draws or comparisons, never lost in a gc callback
        try:
            if per_kind is None:
                pools: list[tuple[KVPool | None, list[FidelityCase]]] = [
                    (None, sample_cases(revision, algorithms, configs))
                ]
            else:
                released = {k: target.revision.pool_algorithms(k) for k in kinds}  # what the release runs there
                pools = [(k, sample_cases(revision, algorithms & released[k], per_kind, kind=k)) for k in kinds]
            _compare(real, model, pools, result, first)
        except KeyboardInterrupt:
            result.interrupted = True
        result.kinds = {k: result.kinds[k] for k in KVPool if k in result.kinds}
        for sig in sorted(first, key=str):
            at, pool_case, kind = first[sig]
            try:
                case = pool_case if result.interrupted else _minimal(real, model, sig, algorithms, pool_case, kind)
            except KeyboardInterrupt:  # stopped while shrinking: this group and the rest as the sample met them
                result.interrupted, case = True, pool_case
            v = next(v for v in disagreements(real, model, case) if v.signature == sig)  # sizing-raised: one each
            result.findings.append(
                Finding(
                    SGLangCase.FIDELITY, target.spec, v, case.config, case.to_dict(), found_at=at, revision=revision
                )
            )
    if write_path_steps and has_sglang_path(target) and revision is target.revision and not result.interrupted:
        result.write_path, mismatches = write_path_fidelity(target, write_path_steps)
        result.findings += mismatches
    if page_table_steps and not target.is_model and revision is target.revision and not result.interrupted:
        for table in GRAPH_TABLES.values():
            tally, mismatches = page_table_fidelity(target, page_table_steps, table=table)
            result.page_tables[tally.table] = tally
            result.findings += mismatches
    result.seconds = time.monotonic() - started
    return result


def _compare(
    real: Surface,
    model: ModelSizing,
    pools: list[tuple[KVPool | None, list[FidelityCase]]],
    result: FidelityResult,
    first: dict[Signature, tuple[int, FidelityCase, KVPool | None]],
) -> None:
    """Compare every case of every pool, counting in ``result`` (its configs, each kind's agreement) and keeping
    each group's first case in ``first``: what a signal leaves stays counted."""
    for kind, pool in pools:
        for case in pool:
            _at_a_safe_point()
            tally = result.kinds.setdefault(case.config.kv_pool, KindTally())
            found = disagreements(real, model, case)
            tally.configs += 1
            tally.agree += not found
            for v in found:
                first.setdefault(v.signature, (result.configs, case, kind))
            result.configs += 1


__all__ = [
    "DEFAULT_CONFIGS",
    "MODEL_MISMATCH",
    "FidelityCase",
    "FidelityResult",
    "KindTally",
    "disagreements",
    "fidelity",
]
