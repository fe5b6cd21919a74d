"""A finding's root cause: the smallest fix that makes its own case pass, tried in a fixed order.

For each finding, replay its case (decode scenario or lifecycle step script)
on the target with one fix applied, in this order, until the case passes:

 1. each known bug's fix alone, then each pair of them
    (``allocator_model.known_bugs``: the bugs the target's release carries),
    applied to the release's model revision and, on a real target, in place
    of the target's answers to the functions the bug lives in, where the
    target's code is its release's at the case (else it differs there in a
    way no known bug names, and a known fix would hide it); a case only a
    pair fixes is listed under both causes as "needs both";
 2. the reference's version of a sizing piece (a sizing function the target
    answers, or the row its pool builder computes) and of every piece
    computed after it, from the first that differs from the reference: a
    case fixed here has a NEW cause, named for that piece, with its value
    and the reference's.

Findings with the same cause become one ``Cause`` with their groups as its
variants. Never a table from group labels to causes: a group's name (its
regime, ``dcp>1``) says where it fails, the counterfactual says why.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.known_bugs import KNOWN_FIX, KNOWN_FIXES, NEW, PIECES, KnownFix, fully_fixed, with_fixes
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool
from allocator_model.surface import ROW_WIDTH, Entry, Provenance, Shape, Surface
from fuzz.engines.sglang.cases import SGLangCase
from fuzz.engines.sglang.digests import code_digest
from fuzz.engines.sglang.groups import scenario_of, serving_config
from fuzz.engines.sglang.names import REQ_TO_TOKEN
from fuzz.engines.sglang.real.wheels import CONFIGURATOR_MODULE, MIXIN_MODULE, lone_sizing_path, repository_path
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.cause import Cause, CauseKind
from fuzz.findings.kinds import Property, Signature
from fuzz.findings.model import Finding
from fuzz.targets.base import TargetCallError, TargetKind

# How SGLang names each piece's value in a report.
VALUE_NAMES = dict(
    zip(
        PIECES,
        (
            "alloc page",
            "alloc_len_per_decode",
            "alloc_reserve_per_decode",
            "extra_max_context_len (the headroom)",
            "req_to_token row width",
        ),
        strict=True,
    )
)


class Patched(Surface):
    """A target's answers with ``entries`` answered by ``model`` instead (everything else is the target's)."""

    def __init__(self, base: Surface, model: Surface, entries: Iterable[Entry]):
        self.base, self.model, self.entries = base, model, frozenset(entries)

    def call(self, entry: Entry, *args: Any) -> Any:
        return (self.model if entry in self.entries else self.base).call(entry, *args)

    def source(self, entry: Entry) -> Provenance:
        return self.base.source(entry)

    def kv_allocator(self, cfg: ServingConfig, num_tokens: int, page_size: int) -> Any:
        return self.base.kv_allocator(cfg, num_tokens, page_size)

    def kv_allocator_takes(self, page_size: int) -> bool:
        return self.base.kv_allocator_takes(page_size)

    def builder_location(self, kind: KVPool) -> tuple[str, str, int] | None:
        return self.base.builder_location(kind)


@dataclass(frozen=True)
class Fix:
    """A candidate fix: known bugs' fixes and reference pieces, applied together."""

    known: tuple[KnownFix, ...] = ()
    pieces: tuple[Entry, ...] = ()
    # Known fixes the target's code already carries at the case (a checkout with one bug fixed): the base the
    # fix is tried on, never a cause of its own.
    applied: tuple[KnownFix, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        """The causes it names: each known bug, or the first piece (the rest are what that piece feeds)."""
        return tuple(k.key for k in self.known) + tuple(p.name for p in self.pieces[:1])


def fixed_target(target: SGLangTarget, fix: Fix) -> SGLangTarget:
    """``target`` with ``fix`` applied (see the module docstring); a model target is its fixed revision."""
    revision = with_fixes(target.revision, fix.applied + fix.known)
    if target.is_model:
        sizing: Surface = ModelSizing(revision)
        if fix.pieces:
            sizing = Patched(sizing, ModelSizing(fully_fixed(target.revision)), fix.pieces)
    else:
        sizing = target.sizing
        known = [e for k in fix.applied + fix.known for e in k.entries]
        if known:
            sizing = Patched(sizing, ModelSizing(revision), known)
        if fix.pieces:
            sizing = Patched(sizing, ModelSizing(fully_fixed(target.revision)), fix.pieces)
    return dataclasses.replace(target, sizing=sizing, revision=revision)


def _runtime(f: Finding) -> SpecRuntime | None:
    if f.kind is SGLangCase.DECODE:
        return scenario_of(f).runtime(f.case.get("num_steps"))
    return serving_config(f).launch_runtime


def piece_value(sizing: Surface, entry: Entry, cfg: ServingConfig, rt: SpecRuntime | None) -> int | None:
    """What ``sizing`` answers for ``entry`` at the case (None: it raised)."""
    try:
        value = sizing.call(entry, cfg) if entry.shape is Shape.LAUNCH else sizing.call(entry, cfg, rt)
    except TargetCallError:
        return None
    return int(value)


def fails(target: SGLangTarget, f: Finding) -> bool:
    """Whether ``f``'s own case still breaks its property on ``target``."""
    prop = Property(f.violation.prop)
    if f.kind is SGLangCase.DECODE:
        from fuzz.engines.sglang.decode.check import decode_violations

        _, found = decode_violations(target, scenario_of(f), (prop,))
        return any(v.prop == prop for v in found)
    if f.kind is SGLangCase.LIFECYCLE:
        from fuzz.engines.sglang.lifecycle.script import LifecycleCase, run_steps

        try:
            run = run_steps(
                target, LifecycleCase(serving_config(f), list(f.case.get("steps", []))), (prop,), story=False
            )
        except Exception:  # noqa: BLE001 - a step the fixed target cannot run: the case does not fail there
            return False
        return any(v.prop == prop for _, v in run.violations)
    return True  # another kind of case (fidelity's): no counterfactual


def _read_pieces(target: SGLangTarget) -> list[Entry]:
    return [] if target.is_model else [e for e in PIECES if target.sizing.source(e) is Provenance.READ]


def _differing(target: SGLangTarget, f: Finding, model: Surface) -> list[Entry]:
    """The target's pieces whose value at the case is not ``model``'s, in order of computation."""
    rt = _runtime(f)
    return [
        e
        for e in _read_pieces(target)
        if piece_value(target.sizing, e, serving_config(f), rt) != piece_value(model, e, serving_config(f), rt)
    ]


def candidates(target: SGLangTarget, f: Finding) -> list[Fix]:
    """The fixes to try for ``f``, in order (the module docstring).

    Known fixes only where the target's code is its release's at the case (every sizing piece it answers
    equals the release model's there), or its release's with known fixes already applied (``_applied``: a
    checkout where a maintainer fixed one): where it is neither, the code has changed in a way no known bug
    names, and a known fix would paper over it. A piece's fix is the reference's version of it and of every piece
    computed after it (a real function calls the next one itself: the row is sized from the headroom, the
    headroom from the reserve), tried from the first piece that differs from the reference.
    """
    out: list[Fix] = []
    known = [k for k in KNOWN_FIXES if k.applies(target.revision)]
    applied = _applied(target, f, known)
    if applied is not None:
        rest = [k for k in known if k not in applied]
        out += [Fix(known=(k,), applied=applied) for k in rest]
        out += [Fix(known=pair, applied=applied) for pair in itertools.combinations(rest, 2)]
    pieces = _read_pieces(target)
    for first in _differing(target, f, ModelSizing(fully_fixed(target.revision))):
        out.append(Fix(pieces=_from(pieces, first)))
    return out


def _applied(target: SGLangTarget, f: Finding, known: list[KnownFix]) -> tuple[KnownFix, ...] | None:
    """The fewest known fixes (none, one or two) whose release model answers every piece the target does at the
    case: the code is its release's with those fixed; None where no such set explains it (changed otherwise)."""
    for n in range(3):
        for subset in itertools.combinations(known, n):
            if not _differing(target, f, ModelSizing(with_fixes(target.revision, subset))):
                return subset
    return None


def cause_of(target: SGLangTarget, f: Finding) -> Fix | None:
    """The first fix (``candidates``) under which ``f``'s case passes; None: none does (or it is not a case the
    model replays: a model mismatch, a finding only SGLang's own write path shows)."""
    if f.violation.prop is Property.MODEL_MISMATCH or not fails(target, f):
        return None
    for fix in candidates(target, f):
        if not fails(fixed_target(target, fix), f):
            return fix
    return None


def _cause(target: SGLangTarget, key: str, f: Finding) -> Cause:
    known = {k.key: k for k in KNOWN_FIXES}
    if key in known:
        k = known[key]
        return Cause(key, CauseKind.KNOWN, k.bug, k.title, k.fix, REQ_TO_TOKEN, k.missing)
    entry = next((p for p in PIECES if p.name == key), None)
    if entry is not None:
        return Cause(
            key,
            CauseKind.PIECE,
            "new",
            f"{entry.mirrors}: differs from the reference, and the reference's alone makes the case pass",
            "compute it as the reference does",
            REQ_TO_TOKEN,
        )
    return Cause(key, CauseKind.UNEXPLAINED, "", _unexplained_title(f), table=REQ_TO_TOKEN)


def _unexplained_title(f: Finding) -> str:
    if f.violation.prop is Property.MODEL_MISMATCH:
        return f"the model and the target disagree ({f.violation.group}): a model defect or a new SGLang behaviour"
    if f.confirmation and "model's run passes" in f.confirmation:
        return "found on SGLang's own write path only (the model's run passes): the write path itself"
    return "no known fix, no reference piece and no pair of them makes the case pass"


def _values(target: SGLangTarget, fix: Fix, f: Finding) -> list[str]:
    """Each replaced piece's value in the case and the fixed one."""
    fixed = fixed_target(target, fix)
    rt = _runtime(f)
    entries = [e for k in fix.known for e in k.entries if e in VALUE_NAMES] + [p for p in fix.pieces]
    out = []
    for e in dict.fromkeys(entries):
        was, now = (
            piece_value(target.sizing, e, serving_config(f), rt),
            piece_value(fixed.sizing, e, serving_config(f), rt),
        )
        if was != now:
            out.append(f"e.g. {VALUE_NAMES.get(e, e.name)} {was}, fixed {now}, at {f.config.short()}")
    return out


def _where(target: SGLangTarget, fix: Fix, findings: list[Finding]) -> list[Any]:
    """The code each cause lives in (``SourceLine``s): the target's functions, and for the row width each pool's
    builder that sizes its own row (located as SARIF locates them)."""
    from fuzz.engines.sglang.locations import builder_location, locate

    entries = [e for k in fix.known for e in k.entries] + list(fix.pieces)
    out: list[Any] = []
    if entries == [ROW_WIDTH]:  # the cause lives in the builders (each that sizes its own row)
        for f in {serving_config(f).kv_pool: f for f in findings}.values():
            found = builder_location(target, f)
            if found is not None:
                out.append(found)
    functions = [fn for e in entries if e is not ROW_WIDTH for fn in e.functions[:1]]
    if functions and not (fix.known and all(not k.entries for k in fix.known)):
        out += locate(target, functions)
    return list(dict.fromkeys(out))


def code_path(target: SGLangTarget, uri: str) -> str:
    """Where a cause's code lives, as SGLang's repository names it, whatever directory the run started in: a file
    read outside any ``python/sglang/`` tree as the module its name stands for (a pool builder's
    ``kv_cache_configurator.py`` or the mixin, never the sizing file; else ``wheels.lone_sizing_path``), the
    model's own files as they are."""
    path = repository_path(uri)
    if target.kind is not TargetKind.FILE or path != uri:
        return path
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    builders = {m.rsplit("/", 1)[-1]: m for m in (CONFIGURATOR_MODULE, MIXIN_MODULE)}
    return "python/" + builders[name] if name in builders else lone_sizing_path(uri)


def aliases_of(target: SGLangTarget, known: KnownFix, findings: Iterable[Finding]) -> list[tuple[str, str, str, str]]:
    """The identity the piece counterfactual alone gives a known cause's variants (no known fix tried): for each
    variant, the first piece the known fix replaces that differs from the fully fixed reference at its case and
    whose reference version, with every piece computed after it, makes the case pass; the code that piece lives
    in there (``_where``), as (repository path, function, term, code digest). What the same variant is called
    on a tree where a known fix is refused because another piece changed (#33579 fixed, the unified rows not):
    a baseline keeps these with the known entry, and a piece cause with this identity is that bug
    (``baseline_entries.aliases``). None on a model (it reads no piece) nor for a fix that replaces none."""
    pieces = _read_pieces(target)
    mine = [e for e in pieces if e in known.entries]
    if not mine:
        return []
    reference = ModelSizing(fully_fixed(target.revision))
    out: list[tuple[str, str, str, str]] = []
    for f in findings:
        differing = _differing(target, f, reference)
        first = next(
            (e for e in mine if e in differing and not fails(fixed_target(target, Fix(pieces=_from(pieces, e))), f)),
            None,
        )
        if first is None:
            continue
        for s in _where(target, Fix(pieces=(first,)), [f]):
            d = code_digest(target, s.function)
            if d:
                out.append((code_path(target, s.uri), s.function, first.name, d))
    return sorted(set(out))


def _from(pieces: list[Entry], first: Entry) -> tuple[Entry, ...]:
    """``first`` and every piece computed after it (a piece's fix: a real function calls the next one itself)."""
    return tuple(pieces[pieces.index(first) :])


def _label(key: str) -> str:
    """How a report names another cause: its upstream number, else its key marked new."""
    fix = KNOWN_FIX.get(key)
    return fix.bug if fix is not None and fix.bug != NEW else f"{key} (new)"


def root_causes(target: SGLangTarget, findings: Iterable[Finding]) -> list[Cause]:
    """The target's findings grouped by root cause, worst outcome first (see the module docstring)."""
    by_key: dict[str, Cause] = {}
    seen: dict[str, list[Finding]] = {}
    fixes: dict[str, Fix] = {}
    alone: dict[str, list[Finding]] = {}  # the findings each cause alone explains (its variants)
    for f in findings:
        fix = cause_of(target, f)
        keys = fix.keys if fix is not None else ("unexplained",)
        for key in keys:
            cause = by_key.setdefault(key, _cause(target, key, f))
            seen.setdefault(key, []).append(f)
            if fix is not None:
                fixes.setdefault(key, fix)
            if len(keys) == 1:
                cause.variants.append(f.signature)
                alone.setdefault(key, []).append(f)
            else:
                other = " + ".join(_label(k) for k in keys if k != key)
                cause.needs_both.setdefault(other, []).append(f.signature)
            if fix is not None and not cause.values:
                cause.values = _values(target, fix, f)[:1]
    for key, cause in by_key.items():
        if key in fixes:
            single = Fix(
                known=tuple(k for k in fixes[key].known if k.key == key),
                pieces=tuple(p for p in fixes[key].pieces[:1] if p.name == key),
            )
            located = _where(target, single, seen[key])
            cause.where = [f"{s.uri}:{s.line} {s.function}" for s in located]
            cause.code = list(dict.fromkeys((code_path(target, s.uri), s.function) for s in located))
            if cause.kind is CauseKind.KNOWN and key in alone:
                cause.aliases = aliases_of(target, KNOWN_FIX[key], alone[key])
            if cause.kind is CauseKind.PIECE:
                cause.digests = {
                    (code_path(target, s.uri), s.function): code_digest(target, s.function) for s in located
                }
    return sorted(by_key.values(), key=lambda c: c.rank)


def signatures(causes: list[Cause]) -> set[Signature]:
    """Every group the causes explain (variants and needs-both)."""
    return {s for c in causes for s in c.groups}
