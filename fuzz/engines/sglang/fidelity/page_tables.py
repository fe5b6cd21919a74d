"""The model's twin of FA3's CUDA-graph builders against SGLang's own, build by build (``fidelity``, ``matrix``).

Decode scenarios are drawn as the write path's are (``writepath``): ``strategies.space.decode_scenario`` walked by
a ``random.Random`` seeded by the table (the same scenarios on every run), every algorithm the standard pool runs
that the table judges and no speculation in turn, overlap off and on in turn, lengths near the scheduler's bound,
the overlap lag drawn; on the deployments the table judges (``page_tables.takes``: the standard pool, no DCP, a
power-of-two page, here at topk 1, the only topk whose tables it builds).  The context length is drawn small
(up to ``SMALL_CONTEXT``, and one draw in ``LARGE_EVERY`` up to ``LARGE_CONTEXT``, so the verify builder's grid
spans several of its 4096-token blocks; one in ``TIGHT_EVERY`` where the table's width is tightest, its covering
set's contexts shifted by whole blocks): SGLang's builders run under triton's interpreter, whose cost grows with
the context, while the table breaks at the limit of any context.

Each scenario's decode step is built on both sides, the twin (``allocator_model.page_tables.fa3_builds``, with
the target's revision fields) and SGLang's own builders executed (``fuzz.engines.sglang.page_table_builds.builds``), on
the same ``req_to_token`` row width (the target's).  One mode's build is one step, compared on what a verdict
depends on: the buffer's width, the columns spilled past the row, the published length (and so the pages the
kernel reads) and whether SGLang's own check stopped it.  ``written`` is not compared: where a builder writes its
whole row the twin writes its used pages only (``tests/test_fa3_builders.py`` ``WHOLE_ROW``), and no verdict
reads it.  A scenario whose builds differ, or on which SGLang's builders raise, is a
``model-mismatch/fa3_page_table`` finding (the first kept), its case the decode scenario: ``repro`` builds it on
both again (``decode.replay``).
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from allocator_model.page_tables import Build, judged
from allocator_model.pools import KVPool
from allocator_model.scenario import DecodeScenario
from fuzz.common.defaults import PAGE_TABLE_STEPS
from fuzz.engines.sglang.decode.check import decode_finding
from fuzz.engines.sglang.page_table_builds import builds, model_builds, row_width_of, unjudged
from fuzz.engines.sglang.page_tables import FA3, GRAPH_TABLES, GraphTable
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property
from fuzz.findings.model import Finding, Violation
from fuzz.targets.base import TargetError
from fuzz.verdict import Unjudgeable
from strategies import space

from .cases import PreferringChooser

DEFAULT_STEPS = PAGE_TABLE_STEPS  # mode builds per release compared
DRAWS_PER_STEP = 20  # draws per wanted step before the space counts as exhausted
SMALL_CONTEXT = 2048  # most contexts stay below this (a build is milliseconds there)
LARGE_CONTEXT = 16384  # one draw in LARGE_EVERY goes up to this: four of the verify builder's 4096-token blocks
LARGE_EVERY = 8
# One draw in TIGHT_EVERY is a context of the table's covering set shifted by whole 4096-token blocks (up to
# LARGE_CONTEXT): where its width leaves the least room (trtllm_mla's, padded to whole blocks, only there).
TIGHT_EVERY = 4
TIGHT_BLOCK = 4096


@dataclass
class TableTally:
    """One table on one release: mode builds compared, how many agreed, per algorithm; or why none were."""

    table: str = FA3.name
    steps: int = 0
    agree: int = 0
    scenarios: int = 0
    per_algorithm: dict[str, int] = field(default_factory=dict)
    # Of SGLang's builds compared: those that published past the row's width, wrote past it, or were stopped by
    # SGLang's own check (the builds the table's verdicts are about).
    read_past: int = 0
    spilled: int = 0
    stopped: int = 0
    seconds: float = 0.0
    skipped: str | None = None  # why SGLang's builders were not run (nothing compared: never agreement)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "agree": self.agree,
            "scenarios": self.scenarios,
            "per_algorithm": self.per_algorithm,
            "read_past": self.read_past,
            "spilled": self.spilled,
            "stopped": self.stopped,
            "seconds": round(self.seconds, 3),
            "skipped": self.skipped,
        }

    def text(self) -> str:
        """``fa3_page_table: 1000/1000 builds agree (none 36, EAGLE 249, ...; 264 read past the width, ...)``, or
        why it was not compared."""
        if self.skipped is not None:
            return f"{self.table}: not compared ({self.skipped})"
        algorithms = ", ".join(f"{a} {n}" for a, n in self.per_algorithm.items())
        past = f"{self.read_past} read past the width, {self.spilled} wrote past it, {self.stopped} stopped"
        return f"{self.table}: {self.agree}/{self.steps} builds agree ({algorithms}; {past})"


def compared_algorithms(target: SGLangTarget) -> list[str | None]:
    """No speculation, then every algorithm the release runs on the standard pool whose FA3 tables this table
    builds at topk 1 (``page_tables.judged``: UNO's verify layout is its own)."""
    runs = target.revision.pool_algorithms(KVPool.STANDARD)
    return [None, *(a for a in sorted(runs, key=str) if judged(a, 1))]


def draw(
    chooser: PreferringChooser, target: SGLangTarget, a: str | None, overlap: bool, t: GraphTable = FA3
) -> DecodeScenario | None:
    """One scenario of the cell (algorithm, overlap), on a deployment the table judges (None: the draw clashed)."""
    page = chooser.often(t.pages[0], t.pages)
    if chooser.integers(1, TIGHT_EVERY) == 1:  # where the table's width leaves the least room (its covering set's)
        offset = t.cover_offsets[chooser.integers(0, len(t.cover_offsets) - 1)]
        context_len = (
            TIGHT_BLOCK * chooser.integers(0, LARGE_CONTEXT // TIGHT_BLOCK - 2) + TIGHT_BLOCK + (offset or page)
        )
    else:
        top = LARGE_CONTEXT if chooser.integers(1, LARGE_EVERY) == 1 else SMALL_CONTEXT
        lo, hi = space.context_pages_range(page)
        context_len = chooser.integers(lo, max(lo, min(hi, top // page))) * page + chooser.integers(0, page - 1)
    pins: dict[str, Any] = {
        "kv_pool": KVPool.STANDARD,
        "attn_dcp_size": 1,
        "page_size": page,
        "context_len": context_len,
        "speculative_algorithm": a,
        "enable_overlap": overlap,
    }
    if a is not None:
        pins["speculative_eagle_topk"] = 1
    s = space.decode_scenario(chooser, target.revision, pins=pins)
    return s if s is not None and t.takes(s.config) else None


def step_of(s: DecodeScenario) -> tuple[Any, int]:
    """The run-time shape and the device length of the scenario's step: what each mode's build is of (as the table
    observes it: ``fuzz.engines.sglang.page_tables.observe``)."""
    return s.runtime(s.num_steps), s.committed_len + s.device_lag


def _shown(b: Build) -> str:
    stopped = ", stopped by SGLang's own check" if b.stopped_by else ""
    return f"width {b.width}, spilled {b.spilled}, published {b.published} ({b.read_pages} pages){stopped}"


def differences(model: Sequence[Build], real: Sequence[Build]) -> list[str]:
    """Each mode whose builds differ in what a verdict reads (``Build.verdict``); one line for all where the
    two sides built different modes."""
    if [(b.mode, b.step) for b in model] != [(b.mode, b.step) for b in real]:
        modes = [", ".join(b.label for b in side) or "none" for side in (real, model)]
        return [f"the modes built: real {modes[0]}; model {modes[1]}"]
    return [
        f"{m.label} ({m.buffer}): real {_shown(r)}; model {_shown(m)}"
        for m, r in zip(model, real, strict=True)
        if m.verdict != r.verdict
    ]


@dataclass(frozen=True)
class Compared:
    """One scenario's builds on both sides: the model's, SGLang's (empty where they raised) and what differs."""

    model: list[Build]
    real: list[Build]
    differ: list[str]
    mismatch: Violation | None

    @property
    def steps(self) -> int:
        """The mode builds compared: the modes either side built."""
        return max(len(self.model), len(self.real))

    @property
    def agree(self) -> int:
        """The mode builds that agree: none where SGLang's raised or the modes differ, else each equal one."""
        same_modes = [(b.mode, b.step) for b in self.model] == [(b.mode, b.step) for b in self.real]
        return self.steps - len(self.differ) if self.real and same_modes else 0


def compare(target: SGLangTarget, s: DecodeScenario, t: GraphTable = FA3) -> Compared:
    """The scenario's step built by the twin and by SGLang's own builders (``Unjudgeable`` where they cannot run
    on the target: ``page_table_builds.unjudged``), with the mismatch (None: every mode agrees)."""
    cfg = s.config
    rt, seq = step_of(s)
    model = model_builds(target.revision, t.backend, cfg, rt, seq, row_width_of(target, cfg))
    source = getattr(getattr(target.sizing, "write_path", None), "source", target.spec)
    details = [
        f"config: {cfg.short()}",
        f"step: device seq_len {seq} (committed {s.committed_len} + overlap lag {s.device_lag})",
        f"SGLang's code: its {t.backend.label} builders, executed from {source}",
    ]
    try:
        real, _ = builds(target, t.backend, cfg, rt, seq)
    except TargetError as e:
        raised = str(e).splitlines()[0]
        headline = f"{t.name}: real raised: {raised}; model built {len(model)} mode(s)"
        return Compared(model, [], [raised], Violation(Property.MODEL_MISMATCH, t.name, headline, details))
    differ = differences(model, real)
    if not differ:
        return Compared(model, real, [], None)
    more = f" (and {len(differ) - 1} more mode(s))" if len(differ) > 1 else ""
    headline = f"{t.name} {differ[0]}{more}"
    return Compared(model, real, differ, Violation(Property.MODEL_MISMATCH, t.name, headline, details))


def mismatches(target: SGLangTarget, s: DecodeScenario) -> list[Violation]:
    """The scenario's page-table mismatches, per table that judges it where SGLang's builders run (a replay's)."""
    found = []
    for t in GRAPH_TABLES.values():
        if target.is_model or not t.takes(s.config) or unjudged(target, t.backend) is not None:
            continue
        mismatch = compare(target, s, t).mismatch
        found += [mismatch] if mismatch is not None else []
    return found


def page_table_fidelity(
    target: SGLangTarget, steps: int = DEFAULT_STEPS, seed: int = 0, table: GraphTable = FA3
) -> tuple[TableTally, list[Finding]]:
    """``steps`` mode builds of ``table`` on SGLang's code held to the twin's (the module docstring)."""
    tally = TableTally(table.name)
    findings: list[Finding] = []
    why = unjudged(target, table.backend) if not target.is_model else "a model target: the twin is the only builder"
    if why is not None:
        tally.skipped = why
        return tally, findings
    chooser = PreferringChooser(random.Random(f"kvrow-fuzz page tables|{seed}|{table.name}"))
    cells = itertools.cycle([(a, ov) for a in compared_algorithms(target) for ov in (False, True)])
    started, draws = time.monotonic(), 0
    while tally.steps < steps and draws < DRAWS_PER_STEP * max(steps, 1):
        draws += 1
        a, overlap = next(cells)
        s = draw(chooser, target, a, overlap, table)
        if s is None:
            continue
        try:
            c = compare(target, s, table)
        except Unjudgeable as e:  # the release's builders stopped running (``unjudged`` ran them once)
            tally.skipped = str(e)
            break
        if not c.steps:
            continue
        tally.scenarios += 1
        tally.steps += c.steps
        name = "none" if a is None else str(a)
        tally.per_algorithm[name] = tally.per_algorithm.get(name, 0) + c.steps
        tally.agree += c.agree
        tally.read_past += sum(b.read_pages > b.width and b.stopped_by is None for b in c.real)  # stopped: reads none
        tally.spilled += sum(b.spilled > 0 for b in c.real)
        tally.stopped += sum(b.stopped_by is not None for b in c.real)
        if c.mismatch is not None and not findings:
            findings.append(decode_finding(target.spec, c.mismatch, s, tally.scenarios))
    tally.seconds = time.monotonic() - started
    return tally, findings


__all__ = [
    "DEFAULT_STEPS",
    "TableTally",
    "compare",
    "mismatches",
    "page_table_fidelity",
]
