"""What a failing kvrow property test prints: its findings as ``run`` prints a target's, each with its repro line.

The plugin (``fuzz.pytest_plugin``) replaces the failure text of a property
test (pytest's ``longrepr``, which the terminal, JUnit and xdist all carry)
with ``failure_text``: the ROOT CAUSES section of the findings the test
raised, rendered by the one renderer (``fuzz.findings.render``) at
``columns.WIDTH``, each group's case file written first so that its block
ends in its repro line.  At most ``MAX_LINES`` lines: a cause's lead in its
full block where that fits, else each cause with its groups and its lead's
repro line (``run --quiet``'s detail).  Nothing of this tool's own source,
no reprs, no Hypothesis report of the drawn example: the case file holds the
example and the repro line replays it.

Who raises what: a ``@given`` property raises its first new finding as its
group's class (``campaign.driver.failure_class``, as a campaign does), so
Hypothesis shrinks each group apart and reports every group it met (an
exception group of them); a test that judges many findings at once (the
bounded proof, the lifecycle) raises one ``PropertyFailed``.  A failure
holding anything else (a crash of this tool) keeps pytest's own text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from fuzz.campaign.driver import FindingRaised
from fuzz.common.columns import WIDTH
from fuzz.common.compat import BaseExceptionGroup  # novermin (on 3.10 the backport Hypothesis raises)
from fuzz.findings.kinds import Signature
from fuzz.findings.model import Finding

MAX_LINES = 40  # a failing property test's text, at most (the bound: a maintainer reads it in a terminal)
COUNTEREXAMPLE = "COUNTEREXAMPLE"


class PropertyFailed(AssertionError):
    """A property test's findings on one target, judged at once: the bounded proof's witnesses, the lifecycle's
    groups.  ``word`` heads each block (WITNESS for the proof's), ``origin`` names their case files apart as
    ``prove``'s are, ``unsaved`` are the groups with no case file (a witness the engine's model disagrees with
    replays nothing); ``head`` and ``tail`` are lines of the test's own around the section."""

    def __init__(
        self,
        findings: Iterable[Finding],
        *,
        word: str = COUNTEREXAMPLE,
        origin: str | None = None,
        unsaved: Collection[Signature] = (),
        head: Iterable[str] = (),
        tail: Iterable[str] = (),
    ) -> None:
        self.findings = list(findings)
        self.word, self.origin, self.unsaved = word, origin, frozenset(unsaved)
        self.head, self.tail = list(head), list(tail)
        stories = [f"{f.signature} on {f.target}\n{f.violation.describe()}" for f in self.findings]
        super().__init__("\n".join([*self.head, *stories, *self.tail]))  # what a direct call (no plugin) shows


def raised(exc: BaseException) -> list[BaseException] | None:
    """The kvrow failures ``exc`` is: itself, or every leaf of an exception group (Hypothesis' several bugs);
    None when anything else is among them (that failure keeps pytest's text, a crash is never hidden)."""
    if isinstance(exc, (FindingRaised, PropertyFailed)):
        return [exc]
    inner = getattr(exc, "exceptions", None)
    if not isinstance(exc, BaseExceptionGroup) or not inner:
        return None
    out: list[BaseException] = []
    for e in inner:
        leaves = raised(e)
        if leaves is None:
            return None
        out += leaves
    return out


def failure_text(target: Any, exc: BaseException, cases: str) -> str | None:
    """The text of a property test that failed with ``exc`` on ``target`` (None: not a kvrow failure), its groups'
    case files written under ``cases`` first."""
    failures = raised(exc)
    if not failures:
        return None
    found: dict[Signature, Finding] = {}  # each group once, in the order raised (the last of a group: its final)
    word, origin, unsaved = COUNTEREXAMPLE, None, frozenset[Signature]()
    head: list[str] = []
    tail: list[str] = []
    for e in failures:
        if isinstance(e, PropertyFailed):
            word, origin, unsaved = e.word, e.origin, e.unsaved
            head, tail = head + e.head, tail + e.tail
            found.update((f.signature, f) for f in e.findings)
        else:
            assert isinstance(e, FindingRaised)
            found[e.finding.signature] = e.finding
    findings = list(found.values())
    saved = _save(findings, cases, origin, unsaved)
    return _fitted(target, findings, word, head + ([saved] if saved else []), tail)


def _save(findings: list[Finding], cases: str, origin: str | None, unsaved: Collection[Signature]) -> str:
    """Each finding's case file under ``cases`` (its repro line needs one); the line saying why not, if not."""
    from fuzz.common.errors import BadInput
    from fuzz.common.files import check_output_dir
    from fuzz.findings.output import save_case

    try:
        check_output_dir(cases, "--kvrow-cases")
    except BadInput as e:
        return f"no case file written: {e}"
    for f in findings:
        if f.signature not in unsaved and not f.case_path:
            save_case(f, cases, origin)  # a write that fails is one line on stderr, the block without its repro
    return ""


def _fitted(target: Any, findings: list[Finding], word: str, head: list[str], tail: list[str]) -> str:
    """The section at the most detail that fits ``MAX_LINES``; cut there, saying how much, if even the least
    does not."""
    from fuzz.common.columns import fold
    from fuzz.findings.render import Detail, causes_block, counterexample_block
    from fuzz.verdict import PIPELINE

    causes = PIPELINE.causes(target, findings)
    named = {s for c in causes for s in c.groups}
    lines: list[str] = []
    for detail in (Detail.LEADS, Detail.CAUSES):
        text = [causes_block(target.spec, causes, findings, detail=detail, width=WIDTH, word=word)] if causes else []
        text += [counterexample_block(f, word, width=WIDTH) for f in findings if f.signature not in named]
        lines = [fold(line) for line in head] + "\n".join(text).splitlines() + [fold(line) for line in tail]
        lines = "\n".join(lines).splitlines()
        if len(lines) <= MAX_LINES:
            return "\n".join(lines)
    cut = len(lines) - (MAX_LINES - 1)
    return "\n".join([*lines[: MAX_LINES - 1], f"... {cut} more line(s): each group's case file replays it whole"])
