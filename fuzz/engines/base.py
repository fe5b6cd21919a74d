"""What the core asks of an engine: one interface, filled in by each engine package.

An engine is one serving system (SGLang) as this tool checks it: the target
specs it claims and resolves, whether a spec runs code it names, and what a
target of it still takes from the engine's model.  The core holds only this
interface and the registry (``fuzz.engines``); everything that names an
engine's code lives in its package.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from fuzz.targets.base import Target, TargetKind


class Config(Protocol):
    """An engine's serving configuration, as a finding carries it: written to reports and case files as data."""

    def to_dict(self) -> dict[str, Any]:
        """The configuration as the engine's own argument names (what a case file records and replays)."""
        ...

    def short(self) -> str:
        """One line a counterexample prints."""
        ...


class Semantics(Protocol):
    """A model revision a finding was judged against (fidelity): named in reports, recorded whole in case files."""

    @property
    def name(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Attribution:
    """A group a violation keeps only where the same case without one feature passes; a case that fails without the
    feature too does not fail because of it (SGLang: ``dcp>1`` only when the case without DCP passes).

    Typed loosely (a ``Violation``, a verdict ``Case``): the findings import
    this module's interfaces, so it cannot import them back.
    """

    applies: Callable[[Any], bool]  # whether a violation's group is one this feature must earn
    drop: Callable[[Any, Target], Any]  # the case without the feature (None: the target cannot run it)
    regroup: Callable[[Any, list[Any], bool], Any]  # the violation named by what the case does without it (explain?)


@dataclass(frozen=True)
class RunOptions:
    """What ``run`` hands an engine's own hunt (``Engine.hunt``) on one target."""

    pins: Mapping[str, Any] | None = None  # ``--pin``
    cover_part: tuple[int, int] = (0, 1)  # (k, K): this worker runs covering cases k, k + K, ...
    write_path: str = "auto"  # ``--write-path``: auto, the engine's own code, model
    proof: bool = True  # the engine's bounded proof stage after its covering set, where it has one


@dataclass(frozen=True)
class LifecycleOptions:
    """What ``lifecycle`` (and the plugin's lifecycle test) hands an engine's lifecycle hunt on one target."""

    steps: int  # ``--steps``: steps per state-machine run at most
    pins: Mapping[str, Any] | None = None  # ``--pin``
    write_path: str = "auto"  # ``--write-path``: allocate and free through the engine's own code where it runs


class Engine(Protocol):
    name: str  # the registry's key, and ``Target.engine`` of every target it resolves
    packages: tuple[str, ...]  # its own top-level packages beside ``fuzz`` (its model, its strategies), if any

    def claims(self, spec: str) -> bool:
        """Whether ``spec`` names a target of this engine (the registry offers a spec to each engine in turn)."""
        ...

    def resolve(self, spec: str, version: str | None = None) -> Target:
        """The target ``spec`` names, ``version`` (``--sglang-version``) applied where it takes one; ``TargetError``
        for a spec it cannot resolve, said in one line."""
        ...

    def runs_named_code(self, spec: str) -> bool:
        """Whether resolving ``spec`` executes code the spec names (a file, a checkout, the installed package):
        a case file's spec is resolved only when it does not."""
        ...

    def known_targets(self) -> list[tuple[str, str]]:
        """``(spec, summary)`` for each target ``targets`` lists."""
        ...

    def config_from_dict(self, data: Mapping[str, Any]) -> Config:
        """The configuration a case file records (``Config.to_dict``'s shape), checked; ``ValueError`` (one line)
        for one this engine cannot have."""
        ...

    def check_pins(self, pins: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` (one line) for ``--pin NAME=VALUE``s no configuration of this engine can have."""
        ...

    def pins_refused(self, target: Target, pins: Mapping[str, Any]) -> str | None:
        """Why ``target`` launches no configuration with these pins (one line: a release without the pinned
        feature), None where some may: a campaign whose every draw the target refuses would end in an error.
        Optional: an engine without it is asked nothing (its draws decide)."""
        ...

    def target_class(self, spec: str) -> TargetKind | None:
        """The kind of target ``spec`` names, read from its text alone (a shard's spec: what it names need not
        exist here), strictly; None where ``spec`` is no canonical spec of this engine's."""
        ...

    def printed_target(self, kind: TargetKind, spec: str) -> str | None:
        """What a repro line passes as ``--target`` for a case on ``spec``, a target of a ``kind`` that runs code
        its spec names: the spec where every character of it is one this engine recognises as no path (an
        installed package), else ``fuzz.findings.repro.PLACEHOLDER`` (with what the engine reads from the spec)."""
        ...

    attributions: tuple[Attribution, ...]  # the verdict pipeline's stage 2, in order
    # The counts a command's report entry for one of its targets adds (``fuzz.findings.report.ENTRY_FIELDS``'s
    # shape: command -> field -> ``Field``), which ``merge`` checks and carries over.
    report_fields: Mapping[Any, Mapping[str, Any]]

    def confirm(self, target: Target, finding: Any, mode: str = "auto", check: Any = None) -> Any:
        """The verdict pipeline's stage 3: ``finding`` replayed on the engine's own code where the target has it
        (``mode``: the command's ``--write-path``), saying what that code did (``Finding.confirmation``)."""
        ...

    def has_own_path(self, target: Target, mode: str = "auto") -> bool:
        """Whether ``target``'s write path runs on the engine's own code under ``mode`` (a command's ``--write-path``:
        auto, the engine's own, model), else on the model's; ``BadInput`` (one line, exit 2) where ``mode`` asks for
        the engine's own code and the target has none, so a command refuses before any work."""
        ...

    def hunt(self, target: Target, options: RunOptions) -> Any:
        """``run``'s own hunt on ``target`` (a ``fuzz.campaign.driver.Hunt``; the caller adds the hunts of the tables
        checked on their own)."""
        ...

    @property
    def fuzzed_properties(self) -> tuple[Any, ...]:
        """The properties (``Property``) its drawn cases are judged on: one pytest test of the plugin and one
        Atheris fuzzer each."""
        ...

    def fuzzed_draws(self, target: Target) -> Any:
        """The Hypothesis strategy its search draws from on ``target`` (SGLang: decode scenarios); the plugin's
        property tests and the Atheris entry draw from it too (the bytes alone decide the draw), each draw made the
        verdict pipeline's case by ``fuzzed_case``. Drawn raw, not mapped: a mapped strategy adds a span, which
        steers Hypothesis' generation elsewhere and changes what a derandomized run finds."""
        ...

    def fuzzed_case(self, drawn: Any) -> Any:
        """The verdict pipeline's case (``fuzz.verdict.Case``) of a value ``fuzzed_draws`` drew."""
        ...

    def case_score(self, run: Any) -> tuple[float, str] | None:
        """What a drawn case's run scores for Hypothesis' ``target()``, and its label (None: nothing to climb)."""
        ...

    def campaign_lines(self, target: Target, command: Any, result: Any) -> list[str]:
        """What a campaign of ``command`` (a ``fuzz.findings.report.Command``) on ``target`` prints after its verdict
        of what the hunt counted (``result``: its ``fuzz.campaign.driver.CampaignResult``)."""
        ...

    def lifecycle_hunt(self, target: Target, options: LifecycleOptions) -> Any:
        """``lifecycle``'s hunt on ``target`` (a ``fuzz.campaign.driver.Hunt``): requests admitted, decoded, retracted
        and finished as a state machine, its invariants checked after every step; ``BadInput`` (one line) where the
        engine has no lifecycle (the command exits 2, the plugin's lifecycle test skips)."""
        ...

    @property
    def quick_space(self) -> str | None:
        """The bounded space every quick verdict proves first (``run``, the plugin); None: it proves none."""
        ...

    def prover(self, target: Target, options: Any) -> Any:
        """``prove``'s bounded proof of ``target`` for ``options`` (``fuzz.prove.proof``: a ``ProveOptions`` in, a
        ``Prover`` out), every option checked: ``ValueError`` (one line) for one the target cannot take, before any
        work; ``BadInput`` where the engine has no bounded proof."""
        ...

    def releases(self, text: str | None) -> list[str]:
        """The releases ``text`` names (a command's ``--releases``: ``A..B``, the modeled releases from A to B;
        ``A,B``, each as given; None, every modeled release), in the order named, each once; ``ValueError`` (one
        line) for a text that names none or holds no release number. One expansion for every command that takes
        a range (``baseline write --releases``, and SGLang's own ``matrix``), so a document written over a range
        is the one a command reads back over the same range (``matrix --expect``)."""
        ...

    def code_paths(self, target: Target) -> list[str]:
        """Every file of the engine's code ``target`` reads, as the engine's repository names them (``paths``: a CI
        workflow's filter); ``BadInput`` where it reads none (a model)."""
        ...

    def root_causes(self, target: Target, findings: list[Any]) -> list[Any]:
        """The verdict pipeline's stage 4: the ``Cause`` of each finding's group."""
        ...

    def replayed(self, doc: dict[str, Any], where: str = "the case") -> tuple[Target, Any] | None:
        """A case document (``fuzz.findings.casefile``, validated) replayed on its own target, checked first as
        ``repro`` checks it: the target and the finding of the case's property that replay shows (None: the case
        passes there now); ``CaseFileError`` (one line) for a case it cannot replay. The finding is rebuilt from
        the checked values, never taken from the document, so what is decided from it (``merge``'s root causes of
        its shards' case files) is decided on this tool's own replay."""
        ...

    def judges(self, target: Target, table: str, command: Any, stats: Mapping[str, Any]) -> str | None:
        """How ``command`` (a ``fuzz.findings.report.Command``) judged this engine's ``table`` on ``target``, in a
        few words (``stats``: what the command's run counted); None where it does not judge it."""
        ...

    def locations(self, target: Target, finding: Any, cwd: str | None = None) -> list[Any]:
        """The code a finding indicts, as ``fuzz.findings.sarif.SourceLine``s, the primary first."""
        ...

    def portable_target(self, target: Target, cwd: str | None = None) -> str:
        """How a baseline names ``target``, the same on every machine and checkout (never an absolute path)."""
        ...

    def launch_line(self, config: Any, table: str | None = None) -> str | None:
        """The command that starts the engine with ``config`` (None: the engine has none to give); ``table``: the
        checked table a finding is on, where the line must choose what builds it (an attention backend)."""
        ...

    def modeled_line(self, target: Target, own_write_path: bool = True) -> str | None:
        """What a real target still takes from the model, as the lines every command prints (None: nothing)."""
        ...
