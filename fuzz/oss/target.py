"""One decode property of one target as a fuzz target driven by bytes: the heavy half of the Atheris entry point.

``Entry(config)`` is a libFuzzer ``TestOneInput``: it hands the bytes to
Hypothesis' ``fuzz_one_input`` of a ``@given`` test over the strategies
the target's engine draws from (``Engine.fuzzed_draws``; SGLang's: ``run``'s decode scenarios), checked by the
same verdict pipeline (``fuzz.verdict``; so a failure is named for its cause, as ``run``
names it).  A failure is a ``FindingRaised`` of its group's class; before it
leaves ``Entry`` its case file is on disk (``fuzz.findings.casefile.save``,
the shape ``run`` writes), so whatever libFuzzer does next (record the crash,
exit) the finding is kept.

Invariant: the bytes alone decide the scenario (Hypothesis' bytestring
provider, no randomness), so a crash input replays to the same case on the
same kvrow-fuzz and Hypothesis versions; ``replay_bytes`` is that replay.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings

from fuzz.campaign.driver import FindingRaised, failure_class
from fuzz.causes.known import KnownCauses
from fuzz.common.errors import BadInput
from fuzz.common.files import check_output_dir
from fuzz.common.options import DEFAULT_CASES_DIR
from fuzz.engines import engine_of, engines
from fuzz.findings import baseline as baseline_file
from fuzz.findings import casefile
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.model import Finding
from fuzz.targets.base import Target, TargetError
from fuzz.targets.resolve import resolve_target
from fuzz.verdict import PIPELINE

from .settings import DEFAULT_PROPERTY as DEFAULT_PROPERTY_NAME
from .settings import DEFAULT_TARGET, ENV_BASELINE

DEFAULT_PROPERTY = Property(DEFAULT_PROPERTY_NAME)
DEFAULT_CASES = DEFAULT_CASES_DIR
ORIGIN = "atheris"  # case files of this engine are named apart from run's shrunk ones (casefile.case_file_name)


def fuzz_properties() -> tuple[Property, ...]:
    """The properties some loadable engine fuzzes (``Engine.fuzzed_properties``), in the engines' order: one fuzzer
    each (SGLang's: the decode properties of ``run``)."""
    return tuple(dict.fromkeys(p for engine in engines()[0] for p in engine.fuzzed_properties))


def fuzz_property(name: str, target: Target | None = None) -> Property:
    """The fuzzed property called ``name`` (its value, ``write-within-row``), of ``target``'s engine where one is
    given; BadInput for anything else."""
    fuzzable = fuzz_properties() if target is None else tuple(engine_of(target).fuzzed_properties)
    for prop in fuzzable:
        if name == prop.value:
            return prop
    on = "" if target is None else f" on {target.spec}"
    missing = (
        "" if target is not None else "".join(f"; engine {n} unavailable: {why}" for n, why in engines()[1].items())
    )
    raise BadInput(f"unknown property {name!r}{on} (fuzzable: {', '.join(p.value for p in fuzzable)}{missing})")


def parse_known(text: str) -> frozenset[Signature]:
    """Comma-separated signatures (``write-within-row/alloc-page-1,...``) that count as passing; BadInput if one is
    not ``PROPERTY/GROUP[OUTCOME]``."""
    known = set()
    for item in text.split(","):
        if item.strip():
            try:
                known.add(Signature.parse(item.strip()))
            except ValueError as e:
                raise BadInput(f"known group: {e}") from None
    return frozenset(known)


def read_baseline(path: str, target: Target) -> frozenset[baseline_file.Entry]:
    """The entries the baseline file at ``path`` (``kvrow-fuzz baseline write``) suppresses on ``target``
    (``baseline.load_for``, as every command reads one); BadInput (one line) if it is not one or does not cover
    the target."""
    try:
        return baseline_file.load_for(path, [target], ENV_BASELINE)[target.spec]
    except baseline_file.BaselineError as e:
        raise BadInput(str(e)) from None


@dataclass(frozen=True)
class FuzzConfig:
    """What one fuzzer checks: a target spec, one decode property, where case files go, what passes: the groups
    of ``known`` (deprecated) and the findings whose root cause ``baseline``'s entries know (None: no baseline)."""

    target: str = DEFAULT_TARGET
    prop: Property = DEFAULT_PROPERTY
    cases: str = DEFAULT_CASES
    known: frozenset[Signature] = field(default_factory=frozenset)
    baseline: str | None = None  # the baseline file (read on the resolved target: ``Entry``)

    @classmethod
    def parse(
        cls, target: str | None, prop: str | None, cases: str | None, known: str | None, baseline: str | None = None
    ) -> FuzzConfig:
        """From strings (environment, argv; ``baseline`` a file's path); an empty or absent one takes its default;
        BadInput if one is wrong."""
        if baseline:  # read now, so a file that is not a baseline is one line before any set-up; scoped at set-up
            try:
                baseline_file.load(baseline, ENV_BASELINE)
            except baseline_file.BaselineError as e:
                raise BadInput(str(e)) from None
        return cls(
            (target or "").strip() or DEFAULT_TARGET,
            fuzz_property(prop.strip()) if prop and prop.strip() else DEFAULT_PROPERTY,
            cases or DEFAULT_CASES,
            parse_known(known or ""),
            baseline or None,
        )


def resolved(spec: str) -> Target:
    """The target of ``spec``; a spec that cannot be resolved is BadInput (one line, exit 2)."""
    try:
        return resolve_target(spec)
    except TargetError as e:
        raise BadInput(str(e)) from None


def property_test(
    target: Target,
    prop: Property,
    known: frozenset[Signature] = frozenset(),
    baseline: frozenset[baseline_file.Entry] | None = None,
) -> Any:
    """A ``@given`` test of ``prop`` on ``target`` over the cases its engine's search draws (SGLang: ``run``'s decode
    scenarios), for ``fuzz_one_input``.

    It raises ``FindingRaised`` (its group's class, as the campaign raises
    it) with the finding for the first violation that is new: of a group
    not in ``known``, and whose root cause ``baseline`` does not know
    (``fuzz.causes.known``); a known one passes, so the fuzzer hunts for the
    next.  No example database: a forkserver fuzzer keeps its corpus itself.
    """
    knows = KnownCauses(target, baseline) if baseline is not None else None
    engine = engine_of(target)

    @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(engine.fuzzed_draws(target))
    def test(drawn: Any) -> None:
        for finding in PIPELINE.case(target, engine.fuzzed_case(drawn), (prop,), confirm=False).findings:
            if finding.signature in known:
                continue
            if knows is None or not knows(finding):  # the baseline's verdict, each case judged once
                raise failure_class(finding.signature)(finding)

    return test


class Entry:
    """``TestOneInput``: one input through ``fuzz_one_input``; a failure's case file on disk before it re-raises."""

    def __init__(self, config: FuzzConfig, target: Target | None = None, *, quiet: bool = False):
        check_output_dir(config.cases, "the case directory")  # before any input: a crash must find it writable
        self.config = config
        self.target = target or resolved(config.target)
        fuzz_property(config.prop.value, self.target)  # one its engine fuzzes: else one line, before any input
        self.baseline = None if config.baseline is None else read_baseline(config.baseline, self.target)
        test = property_test(self.target, config.prop, config.known, self.baseline)
        self.fuzz_one = test.hypothesis.fuzz_one_input
        self.inputs = 0  # inputs run so far, this one included
        self.started: float | None = None  # when the first input ran
        self.quiet = quiet

    def __call__(self, data: bytes) -> None:
        if self.started is None:
            self.started = time.monotonic()
        self.inputs += 1
        try:
            self.fuzz_one(bytes(data))
        except FindingRaised as e:
            path = self.save(e.finding)
            if not self.quiet:
                print(
                    f"kvrow-fuzz: {e.finding.signature} on {self.target.spec} after {self.inputs} inputs, "
                    f"{self.seconds:.2f}s: saved {path}",
                    file=sys.stderr,
                    flush=True,
                )
            raise

    @property
    def seconds(self) -> float:
        """Seconds since the first input (0 before it)."""
        return 0.0 if self.started is None else time.monotonic() - self.started

    def save(self, finding: Finding) -> str:
        finding.found_at = self.inputs
        return casefile.save(finding, self.config.cases, ORIGIN)


def replay_bytes(entry: Entry, data: bytes) -> Finding | None:
    """Run one input (a crash file's bytes) through the entry: its finding, its case file saved; None if it passes.

    An input Hypothesis cannot read as a scenario (too short, rejected) passes too.
    """
    try:
        entry(data)
    except FindingRaised as e:
        return e.finding
    return None


def entry_from_strings(
    target: str | None,
    prop: str | None,
    cases: str | None,
    known: str | None,
    baseline: str | None = None,
    *,
    quiet: bool = False,
) -> Entry:
    """An ``Entry`` from the strings of the environment or a command line (BadInput: one is wrong)."""
    return Entry(FuzzConfig.parse(target, prop, cases, known, baseline), quiet=quiet)
