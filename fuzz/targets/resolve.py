"""Target specs, resolved to a ``Target`` by the engine that claims them (``fuzz.engines``).

Which specs exist is each engine's to say (``kvrow-fuzz targets`` lists
them); this module only routes a spec and enforces the one rule every engine
shares: a case file is data, so a spec it carries is resolved only when that
runs no code the spec names.

Within ``one_target_per_spec()`` a spec resolves once: every case of a
command that replays many (``advisory``, ``judge-fix``) shares its target, and
with it what the target loaded (SGLang's modules, its runtime).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fuzz.common.errors import BadInput
from fuzz.engines import EngineUnavailable, engine_for, engines, runs_named_code
from fuzz.findings.kinds import case_type

from .base import Target, TargetError

_RESOLVED: list[dict[tuple[str, str | None], Target]] = []  # the memo of the innermost ``one_target_per_spec``


@contextmanager
def one_target_per_spec() -> Iterator[None]:
    """Within it, each (spec, version) resolves once and every later resolution returns that same target."""
    _RESOLVED.append({})
    try:
        yield
    finally:
        _RESOLVED.pop()


def resolve_target(spec: str, version: str | None = None) -> Target:
    """``spec`` resolved by its engine; ``version`` (``--sglang-version``) applied where the target takes one."""
    spec = (spec or "").strip()
    if _RESOLVED and (spec, version) in _RESOLVED[-1]:
        return _RESOLVED[-1][spec, version]
    target = _resolved(spec, version)
    if _RESOLVED:
        _RESOLVED[-1][spec, version] = target
    return target


def _resolved(spec: str, version: str | None) -> Target:
    try:
        return engine_for(spec).resolve(spec, version)
    except EngineUnavailable:
        raise
    except TargetError as e:  # an engine that could not load may be the one this spec is for: named
        unavailable = engines()[1]
        if not unavailable:
            raise
        missing = "; ".join(f"engine {n} unavailable: {why}" for n, why in unavailable.items())
        raise TargetError(f"{e} ({missing})") from None


def resolve_case_target(named: object, override: str | None, kind: str, engine: str | None = None) -> Target:
    """The target a ``kind`` case file replays on: the one it names, if that runs no named code, else ``override``;
    either way a target of the engine that declared ``kind`` (``engine``: of a core kind, the case's own).

    A case file is data (it travels as a CI artifact): a target that would
    execute a file it names is only used when the command line names it
    (``repro CASE --target SPEC``, or ``KVROW_FUZZ_TARGET`` for an emitted test).  A case is replayed only by
    its own engine's code: another engine's target would be handed to a replayer that does not know it.
    """
    target = _case_target(named, override)
    engine = engine or case_type(kind).engine  # a core kind's case names its engine (``CaseType.engine_of``)
    if target.engine != engine:
        raise TargetError(
            f"{target.spec!r} is a target of engine {target.engine}, and a {kind} case is engine {engine}'s: "
            "a case replays only on a target of its own engine"
        )
    return target


def _case_target(named: object, override: str | None) -> Target:
    if override:
        return resolve_target(override)
    if not isinstance(named, str) or not named.strip():
        raise TargetError(f"the case names no target (got {named!r})")
    if runs_named_code(named):
        raise TargetError(
            f"the case names {named!r}, which would run the Python code at that path; a case file never runs code "
            "it names: replay it with --target SPEC (or KVROW_FUZZ_TARGET=SPEC for an emitted test)"
        )
    return resolve_target(named)


def resolve_targets(specs: list[str], sglang_version: str | None = None) -> list[Target]:
    """Resolve command-line specs (``--sglang-version`` applied to file and installed targets); BadInput on error."""
    try:
        return [resolve_target(spec, sglang_version) for spec in specs]
    except TargetError as e:
        raise BadInput(str(e)) from None


def known_targets() -> list[tuple[str, str]]:
    """Every engine's targets, and a line for each engine that could not be loaded (its targets cannot be run)."""
    ready, unavailable = engines()
    rows = [row for engine in ready for row in engine.known_targets()]
    return rows + [(f"[{name}]", f"engine {name} unavailable: {why}") for name, why in unavailable.items()]
