"""Decode scenarios judged on SGLang's own write path, and the model held to it.

A real target whose tree and triton are at hand answers the surface's
``decode_step`` entry with SGLang's code (``fuzz.engines.sglang.real.scenario``);
the properties judge that run with the same checks as the model's
(``decode.properties.violations``), plus what only a real tensor shows: a slot id
twice among the live rows, or off its page (``row-holds-own-slots``), and
what SGLang's code raised.  ``mismatch`` compares the two paths step by
step (the write's columns, a guard, the lengths, what changed outside the
writer's window, the slots the allocator took): a difference is a
``model-mismatch/decode_step`` finding naming the step.  ``confirm`` replays
a finding's case on SGLang's path and says what it did there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from allocator_model.regimes import regime
from allocator_model.scenario import DecodeScenario, ScenarioRun, WriteObservation
from allocator_model.surface import DECODE_STEPS, Provenance
from fuzz.common.compat import StrEnum
from fuzz.common.errors import BadInput
from fuzz.engines.sglang.names import SGLangProperty
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.kinds import Property
from fuzz.findings.model import Violation

from .decode.properties import PROPERTIES, reported_as, violations


class WritePathMode(StrEnum):
    """``--write-path``: where decode steps run besides the model (the search itself is always the model's)."""

    AUTO = "auto"  # SGLang's own where the target has it (its tree and triton), else the model's, said in one line
    SGLANG = "sglang"  # SGLang's own, or exit 2 saying why not
    MODEL = "model"  # the model's only


def has_sglang_path(target: SGLangTarget, mode: WritePathMode = WritePathMode.AUTO) -> bool:
    """Whether the target runs decode steps on SGLang's own code (else they are the model's); BadInput when
    ``mode`` asks for SGLang's and the target cannot."""
    if mode is WritePathMode.MODEL:
        return False
    if target.sizing.source(DECODE_STEPS) is Provenance.READ:
        return True
    if mode is WritePathMode.SGLANG:
        why = (
            "a model target"
            if target.is_model
            else next(
                (m for m in target.sizing.modeled() if m.startswith("the decode write path")), "no tree to run it from"
            )
        )
        raise BadInput(f"--write-path sglang: {target.spec} has no SGLang write path to run ({why})")
    return False


@dataclass
class SGLangCheck:
    """A scenario on SGLang's path: the run, what it breaks, and how the model's run differs from it."""

    run: ScenarioRun
    violations: list[Violation]
    mismatch: Violation | None = None

    @property
    def version(self) -> str:
        return str(self.run.sglang.version) if self.run.sglang else "?"

    def chain(self) -> str:
        entered = self.run.sglang.entered[-1] if self.run.sglang and self.run.sglang.entered else []
        shown = [n for n in entered if not n.startswith("SpeculativeAlgorithm.")]  # the enum's predicates: noise
        return " -> ".join(shown) if shown else "(not traced)"


def on_sglang(
    target: SGLangTarget, scenario: DecodeScenario, props: tuple[Property, ...] = PROPERTIES, *, trace: bool = False
) -> SGLangCheck:
    """``scenario`` on the target's own write path, judged (the caller checks ``has_sglang_path`` first)."""
    run: ScenarioRun = target.sizing.call(DECODE_STEPS, scenario, trace)
    found = [] if run.skipped else violations(run, props)
    steps = run.sglang
    cfg = scenario.config
    spilled = any(v.prop in (Property.WRITE_WITHIN_ROW, Property.NEIGHBOUR_ROWS_UNTOUCHED) for v in found)
    problem = steps.slot_problem if steps is not None else None
    if steps is not None and problem is None and not spilled and not run.skipped and not steps.raised:
        problem = batch_problem(target, scenario, run)
    if steps is not None and problem and not spilled:  # a spill's copied slots are that spill's
        found.append(
            Violation(
                SGLangProperty.ROW_HOLDS_OWN_SLOTS,
                regime(cfg, run.alloc_page).value,
                f"on sglang {steps.version}'s own write path, {problem}",
                [f"config: {cfg.short()}"],
                variant=cfg.kv_pool.variant,
            )
        )
    if steps is not None and steps.raised:
        found.append(
            Violation(
                Property.SIZING_RAISED,
                regime(cfg, run.alloc_page).value,
                f"sglang {steps.version}'s own write path raised {steps.raised}",
                [f"config: {cfg.short()}"],
            )
        )
    return SGLangCheck(run, found)


def batch_problem(target: SGLangTarget, scenario: DecodeScenario, run: ScenarioRun) -> str | None:
    """Slot ownership in one decode step of a batch of three requests on the target's own path, on the scenario's
    deployment (``runtime.writepath.batch_ownership``): the scenario decodes one request at a time, so a slot
    handed to one request and written into another's row shows only here."""
    path = getattr(target.sizing, "write_path", None)
    if path is None:
        return None
    from fuzz.engines.sglang.real.runtime import batch_ownership

    step = batch_ownership(
        path.runtime, scenario.config, scenario.runtime(scenario.num_steps), run.width, run.alloc_page
    )
    if step is None or step.ownership is None:
        return None
    rows = ", ".join(f"row {r.row} at kv length {r.allocated_before}" for r in step.requests)
    return f"in one decode step of a batch of {len(step.requests)} ({rows}): {step.ownership}"


def _step_shape(obs: WriteObservation) -> tuple[Any, ...]:
    w = obs.write
    if w.guard is not None:  # the server stops there (a crash): what the step left in the request is moot
        return (obs.step, w.cur, w.nxt, w.guard, obs.kv_committed_len, None, (), 0)
    outside = tuple(sorted((str(s.victim_row), s.col_start, s.col_end) for s in obs.changed_outside))
    return (obs.step, w.cur, w.nxt, w.guard, obs.kv_committed_len, obs.req.kv_allocated_len, outside, obs.slots_taken)


def _describe(shape: tuple[Any, ...]) -> str:
    step, cur, nxt, guard, committed, allocated, outside, taken = shape
    if guard:
        return f"kv_allocated_len {cur} asked {nxt}, kv_committed_len {committed}: stopped by {guard.value}"
    stopped = ""
    spilled = "; ".join(f"row {r} [{a}, {b})" for r, a, b in outside) or "nothing"
    return (
        f"kv_allocated_len {cur} -> {allocated} (asked {nxt}), kv_committed_len {committed}, "
        f"{taken} slots taken{stopped}, changed outside the window: {spilled}"
    )


def mismatch(model: ScenarioRun, real: ScenarioRun, where: str) -> Violation | None:
    """The first decode step on which the model's run and SGLang's differ (None: they agree)."""
    cfg = model.config
    if real.sglang is not None and real.sglang.raised:
        return None  # what SGLang's code raised is a finding of its own
    if real.skipped and "cannot run allocator page" in real.skipped:
        return None  # a deployment SGLang's kernels do not run: nothing to compare
    if bool(model.skipped) != bool(real.skipped):
        m, r = model.skipped or "runs", real.skipped or "runs"
        return _mismatch(cfg, f"the scenario: real {r}, model {m}", where)
    if model.skipped:
        return None
    pairs = list(zip(model.writes, real.writes, strict=False))
    for m_obs, r_obs in pairs:
        a, b = _step_shape(m_obs), _step_shape(r_obs)
        if a != b:
            return _mismatch(cfg, f"decode_step ({a[0]}): real {_describe(b)}; model {_describe(a)}", where)
    if len(model.writes) != len(real.writes):
        return _mismatch(cfg, f"decode_step: real {len(real.writes)} steps ran, model {len(model.writes)}", where)
    return None


def _mismatch(cfg: Any, headline: str, where: str) -> Violation:
    return Violation(
        Property.MODEL_MISMATCH,
        DECODE_STEPS.name,
        headline,
        [f"config: {cfg.short()}", f"SGLang's code: {where}"],
    )


def compared(target: SGLangTarget, scenario: DecodeScenario, model: ScenarioRun | None) -> SGLangCheck:
    """``on_sglang`` with the model's run of the same scenario held to it (``mismatch``)."""
    check = on_sglang(target, scenario)
    if model is not None:
        steps = check.run.sglang
        where = f"sglang {steps.version} ({steps.origin})" if steps else "sglang"
        check.mismatch = mismatch(model, check.run, where)
    return check


def confirmation(check: SGLangCheck, v: Violation) -> tuple[bool, str]:
    """Whether SGLang's own path breaks ``v``'s property on the case, and the line a report says it with.

    A neighbour-rows-untouched finding is reproduced by a write past the row that changed another row there
    too, which ``decode.properties.violations`` names once, as write-within-row (``decode.properties.reported_as``)."""
    same = [w for w in check.violations if w.prop in reported_as(Property(v.prop), check.run)]
    if check.run.skipped:
        return False, f"not run on sglang {check.version}'s own write path: {check.run.skipped}"
    if not same:
        return False, (
            f"NOT reproduced on sglang {check.version}'s own write path ({check.chain()}): its code does not break "
            f"{Property(v.prop).value} on this case, so the finding is the model's (a model defect)"
        )
    spills = [s.describe() for obs in check.run.writes for s in obs.changed_outside]
    overwritten = f"; {', '.join(spills)} overwritten" if spills else ""
    return True, f"confirmed on sglang {check.version}'s own write path: {check.chain()}{overwritten}"
