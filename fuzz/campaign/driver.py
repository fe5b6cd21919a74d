"""A fuzz campaign: Hypothesis rounds against one target until a round finds no new bug group.

Each finding is raised as an exception class of its own signature, so
Hypothesis shrinks each group separately instead of sliding from the seed
bug to a simpler, different one.  Groups found in earlier rounds count as
passing (``Tracker``), so the next round hunts for a new one.

A ``Hunt`` may first run a deterministic covering set (``Hunt.cover``: the
decode campaign covers every regime cell before it searches); its findings
count like a round's.  Both kinds of campaign plug into the same driver
through ``Hunt``: the
decode properties (a ``@given`` test) and the lifecycle (a state machine).
Everything about settings is decided here, on Hypothesis' public API:

* ``report_multiple_bugs`` on: one round reports every group it meets;
* no explain phase: a campaign's report is its findings, not Hypothesis' own;
* a derandomized profile (``ci``) runs with a seed derived from the target
  (``stable_seed``): deterministic, yet each target explores its own inputs;
* ``--seed N`` turns derandomize off and applies ``hypothesis.seed``, and
  keeps the example database deliberately (``seed`` alone would switch it
  off: the settings are applied after it);
* the database, when the profile has one, is a directory per target and
  campaign kind, so examples saved for one target never replay on another.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pkgutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from hypothesis import Phase
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as Settings
from hypothesis.database import DirectoryBasedExampleDatabase

from fuzz.campaign.constants import pin_local_constants
from fuzz.common import interrupts
from fuzz.common.compat import BaseExceptionGroup  # novermin (on 3.10 the backport Hypothesis raises)
from fuzz.common.profiles import database_dir
from fuzz.findings.baseline import Judged
from fuzz.findings.cause import Cause
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Finding
from fuzz.findings.report import Status, status_of
from fuzz.targets.base import Target

MAX_ROUNDS = 8


class FindingRaised(AssertionError):
    """A finding, raised out of a Hypothesis test; subclassed per signature (``failure_class``)."""

    def __init__(self, finding: Finding):
        super().__init__(finding.violation.describe())
        self.finding = finding


_CLASSES: dict[Signature, type[FindingRaised]] = {}


def failure_class(signature: Signature) -> type[FindingRaised]:
    """One exception type per signature: Hypothesis tells distinct bugs apart by type and location."""
    if signature not in _CLASSES:
        _CLASSES[signature] = type(f"FindingRaised[{signature}]", (FindingRaised,), {})
    return _CLASSES[signature]


@dataclass
class Tracker:
    """Groups found in earlier rounds (passing now), and this round's newest failing case per new group.

    ``on_met`` sees a group's first failing example the moment the search
    meets it, before Hypothesis shrinks it (its case file can reach disk
    then: a kill during the shrink keeps the group).
    """

    found: dict[Signature, Finding] = field(default_factory=dict)
    latest: dict[Signature, Finding] = field(default_factory=dict)
    on_met: Callable[[Finding], None] | None = None
    elsewhere: Callable[[Signature], bool] | None = None  # a group another worker has (``fuzz.campaign.parallel``)

    def is_known(self, signature: Signature) -> bool:
        """Found in an earlier round, or by another worker of the campaign: passing now, so the search moves on."""
        return signature in self.found or bool(self.elsewhere and self.elsewhere(signature))

    def fail(self, f: Finding) -> None:
        """Raise ``f`` as its group's failure (the caller skips groups ``is_known`` says are found)."""
        prior = self.latest.get(f.signature)
        if prior is not None:
            f.found_at = prior.found_at  # when the group was first met, not when it was shrunk
        self.latest[f.signature] = f
        if prior is None and self.on_met:
            self.on_met(f)
        raise failure_class(f.signature)(f)

    @property
    def groups(self) -> int:
        return len(self.found) + len([s for s in self.latest if s not in self.found])


SEARCHING = "searching"  # the phase of a campaign's Hypothesis rounds (a hunt names the phases of its own)


@dataclass
class Progress:
    """What a long run reports: the phase it is in, examples (and per second in the phase), groups found, elapsed.

    A campaign runs in phases (a hunt's covering set, a proof, Hypothesis' search, a confirmation on the
    engine's own code); ``enter`` names each as it begins, with a line at once, so a phase that runs no
    example (a proof, a confirmation) is never shown as a stalled search."""

    target: str
    started: float
    on_line: Callable[[Progress], None] | None = None
    every: float = 2.0
    examples: int = 0
    groups: int = 0
    phase: str = SEARCHING
    clock: Callable[[], float] = time.monotonic
    _last: float = 0.0
    _phase_started: float = -1.0  # when the phase began (``started`` for the first)
    _phase_examples: int = 0  # the examples run before it

    def __post_init__(self) -> None:
        if self._phase_started < 0:
            self._phase_started = self.started

    @property
    def rate(self) -> float:
        """Examples per second in this phase."""
        return (self.examples - self._phase_examples) / max(self.clock() - self._phase_started, 1e-9)

    def line(self) -> str:
        pace = f", {self.rate:.0f}/s" if self.examples > self._phase_examples else ""  # none run in it: no pace
        return (
            f"[{self.target}] {self.phase}: {self.examples} examples{pace}, {self.groups} groups, "
            f"{self.clock() - self.started:.0f}s"
        )

    def enter(self, phase: str) -> None:
        """The run moves on to ``phase`` (the same one: nothing); said at once."""
        if phase == self.phase:
            return
        self.phase, self._phase_started, self._phase_examples = phase, self.clock(), self.examples
        if self.on_line:
            self._last = self._phase_started
            self.on_line(self)

    def tick(self, groups: int) -> None:
        """One more example; report when ``every`` seconds have passed since the last line.

        Also the campaign's safe point for a requested interrupt (``fuzz.common.interrupts``).
        """
        interrupts.raise_if_requested()
        self.update(self.examples + 1, groups)

    def update(self, examples: int, groups: int) -> None:
        """The counts so far (one more example, or the sum over workers); a line at most every ``every`` s."""
        self.examples = examples
        self.groups = groups
        now = self.clock()
        if self.on_line and now - max(self._last, self.started) >= self.every:
            self._last = now
            self.on_line(self)


@dataclass
class CampaignResult:
    target: str
    examples: int = 0
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    interrupted: bool = False
    stats: dict[str, Any] = field(default_factory=dict)  # what the kind of campaign counts besides examples
    causes: list[Cause] = field(default_factory=list)  # the findings by root cause (``Engine.root_causes``), once done
    baseline: Judged | None = None  # the causes against a --baseline (None: no baseline)

    @property
    def status(self) -> Status:
        return status_of(error=self.error, found=self.failing(), interrupted=self.interrupted)

    def failing(self, strict: bool = False) -> bool:
        """Whether it found what fails a run: a finding; against a baseline, a new root cause (or, ``strict``,
        an entry fixed since)."""
        if self.baseline is None:
            return bool(self.findings)
        return bool(self.baseline.new) or (strict and bool(self.baseline.fixed))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "target": self.target,
            "status": self.status.value,
            "examples": self.examples,
            "seconds": round(self.seconds, 3),
            "interrupted": self.interrupted,
            **self.stats,
            "findings": [f.to_json() for f in self.findings],
        }
        if self.causes:
            d["causes"] = [c.to_json() for c in self.causes]
        if self.baseline is not None:
            d["baseline"] = self.baseline.to_json()
        if self.error:
            d["error"] = self.error
        return d


class Hunt(Protocol):
    """What a kind of campaign gives the driver."""

    name: str  # the database directory of this kind of campaign

    def round_test(
        self, settings: Settings, seed: int | None, tracker: Tracker, progress: Progress
    ) -> Callable[[], None]:
        """One round as a callable that raises what Hypothesis reports (settings and seed already decided)."""
        ...

    def cover(self, tracker: Tracker, progress: Progress) -> Iterable[Finding]:
        """Findings of a deterministic covering set run before any search, each as soon as it is met."""
        ...

    def finish(self, f: Finding) -> Finding:
        """A group's finding once its round is over (the lifecycle shortens its step script here).

        A hunt whose ``finish`` is a phase of its own names it in an attribute ``finishing`` (SGLang's decode
        hunt: its confirmation on SGLang's code); the driver enters it before it finishes a round's groups."""
        ...

    def stats(self) -> dict[str, Any]:
        """Counts for the report, besides examples."""
        ...


def project_packages() -> list[str]:
    """The project's top-level packages: ``fuzz`` and each loadable engine's own (``Engine.packages``)."""
    from fuzz.engines import engines

    ready, _ = engines()
    return list(dict.fromkeys([*(p for engine in ready for p in getattr(engine, "packages", ())), "fuzz"]))


@functools.cache
def load_project_modules() -> int:
    """Import every module of the project once: ``fuzz`` and each loadable engine's own top-level packages
    (``Engine.packages``; SGLang's model and strategies); the number imported.

    Hypothesis mixes constants it finds in the source of loaded local modules
    into its draws (about one draw in twenty).  Which of our modules happen
    to be loaded (a lazily imported command, a test that ran before) would
    then change what a derandomized campaign explores.  Loading all of them
    first makes the pool of constants, and so every seeded or derandomized
    run, the same whatever ran before it.  Where an engine cannot be loaded,
    the modules that cannot be imported without it are left out (the same
    ones on every run there).
    """
    from fuzz.engines import engines

    _, unavailable = engines()
    count = 0
    packages = project_packages()
    for package in packages:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            leaf = info.name.rpartition(".")[2]
            if leaf.startswith("test_") or leaf == "__main__":
                continue
            try:
                importlib.import_module(info.name)
            except ImportError:
                if not unavailable:  # every engine loads: a module of ours that does not import is a defect
                    raise
                continue  # one that needs an engine unavailable here
            count += 1
    return count


def stable_seed(kind: str, target: Target) -> int:
    """A derandomized profile's seed: fixed per campaign kind and target, the same on every run and machine.

    Keyed on ``Target.identity``, not on where a local file sits: the same checkout in another directory (a fresh
    clone, a temporary tree) explores the same inputs, and so finds what it found before.
    """
    return int.from_bytes(hashlib.sha256(f"kvrow-fuzz:{kind}:".encode() + target.identity).digest()[:8], "big")


def round_settings(hyp: Settings, target: Target, kind: str, seed: int | None) -> Settings:
    """The settings a round runs with (see the module docstring)."""
    # No explain phase: its output is Hypothesis' own failure report, which a campaign replaces with its findings
    # (its shrunk examples are the same without it; it only re-runs each one's variations, seconds per group).
    s = Settings(hyp, report_multiple_bugs=True, phases=tuple(p for p in hyp.phases if p is not Phase.explain))
    if seed is not None:
        s = Settings(s, derandomize=False)
    if s.database is not None:
        s = Settings(s, database=DirectoryBasedExampleDatabase(os.path.join(database_dir(), kind, target.slug)))
    return s


def seeded(test: Any, seed: int | None) -> Any:
    """``hypothesis.seed(seed)`` applied to a test (or a state machine factory); None leaves it as it is."""
    return test if seed is None else hypothesis_seed(seed)(test)


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            yield from _leaves(e)
    else:
        yield exc


def run_campaign(
    target: Target,
    hunt: Hunt,
    hyp: Settings,
    *,
    seed: int | None = None,
    max_rounds: int = MAX_ROUNDS,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: float = 2.0,
    on_finding: Callable[[Finding], None] | None = None,
    on_met: Callable[[Finding], None] | None = None,
    elsewhere: Callable[[Signature], bool] | None = None,
) -> CampaignResult:
    """Fuzz ``target`` in rounds until one finds no new group (or ``max_rounds``).

    ``on_met`` sees a group's first failing example as soon as the search
    meets it, before it is shrunk; ``on_finding`` sees each group once it
    is final: a covering-set finding at once, a searched one shrunk when
    its round is over (so its case file can be written first unshrunk,
    then replaced by the shrunk one: a kill, even SIGKILL, loses no group
    already met).  On KeyboardInterrupt the newest failing case of every
    group not yet shrunk is kept.  ``elsewhere`` names groups another worker
    of the same campaign has claimed: they count as found (not shrunk twice).
    """
    load_project_modules()
    pin_local_constants(project_packages())  # the same draws whatever this process ran before (``constants``)
    result = CampaignResult(target.spec)
    tracker = Tracker(on_met=on_met, elsewhere=elsewhere)
    progress = Progress(target.spec, time.monotonic(), on_progress, progress_every)
    if seed is None and hyp.derandomize:
        seed = stable_seed(hunt.name, target)  # derandomized, but each target explores its own inputs
    settings = round_settings(hyp, target, hunt.name, seed)

    def keep(f: Finding) -> None:
        tracker.found[f.signature] = f
        if on_finding:
            on_finding(f)

    with interrupts.deferred():
        try:
            for f in hunt.cover(tracker, progress):
                keep(f)  # kept at once: an interrupt during the covering set loses nothing found
            for _ in range(max_rounds):
                tracker.latest = {}
                progress.enter(SEARCHING)
                try:
                    hunt.round_test(settings, seed, tracker, progress)()
                    break  # a clean round: nothing new is left to find
                except Exception as exc:  # noqa: BLE001 - sorted below: ours are findings, the rest an error
                    new = 0
                    progress.enter(getattr(hunt, "finishing", None) or progress.phase)
                    for leaf in _leaves(exc):
                        if not isinstance(leaf, FindingRaised):
                            result.error = f"{type(leaf).__name__}: {leaf}".splitlines()[0]
                            continue
                        f = leaf.finding
                        if f.signature not in tracker.found:
                            prior = tracker.latest.get(f.signature)
                            f.found_at = prior.found_at if prior else f.found_at
                            keep(hunt.finish(f))
                            new += 1
                    if result.error or not new:
                        break
        except KeyboardInterrupt:
            result.interrupted = True
            pending = [f for sig, f in tracker.latest.items() if sig not in tracker.found]
            try:
                for f in list(pending):
                    keep(hunt.finish(f))
                    pending.remove(f)
            except KeyboardInterrupt:  # a second signal while shrinking: keep the rest as the search met them
                for f in pending:
                    keep(f)
    result.examples = progress.examples
    result.seconds = time.monotonic() - progress.started
    result.stats = hunt.stats()
    result.findings = sorted(tracker.found.values(), key=lambda f: str(f.signature))
    return result
