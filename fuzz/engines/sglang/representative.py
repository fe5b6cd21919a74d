"""A bug group's representative case: the same group at a deployment people run, beside its minimal case.

A campaign's minimal case is what Hypothesis shrinks to (toward SGLang's defaults: the shortest context, the
fewest steps) or what the covering set met first: small contexts, odd speculative shapes.  ``search`` walks it
toward realistic values, one field at a time, and keeps each move whose case still fails as the same group
(the verdict pipeline's stages 1-2: check, then ``dcp>1`` only where the case without DCP passes):

1. the context to ``WORK_CONTEXT`` (the request's length moved with it, its distance from the scheduler's bound
   kept, or its place in the allocator's page);
2. the speculative settings to SGLang's defaults (``speculative_moves``: none at all, EAGLE's auto choices,
   the algorithm's own defaults, adaptive spec's default candidates), the first that keeps the group;
3. DCP off where the group is not DCP's, a DCP size of an 8-GPU node where it is;
4. a page an attention backend runs with (``BACKEND_PAGES``), the overlap scheduler on (SGLang's default), no
   KV capacity limit, the batch's launch step count, no earlier step;
5. the context up to the first of ``LEAD_CONTEXTS`` the group reaches.

Each replay counts against ``BUDGET`` (a count: the same walk on every run and machine).  A walk that reaches a
context of ``WORK_CONTEXT`` or more has found the representative case; it is then confirmed on SGLang's own
code as the minimal case is (the pipeline's stage 3), and a case that code does not break is a miss.  A group
found only on SGLang's own path is walked there.

``without_needless_dcp`` is the minimal case's own last step: a case whose group is not DCP's keeps no DCP size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from allocator_model import algorithms as algo
from allocator_model.config import ConfigError, ServingConfig
from allocator_model.defaults import BACKEND_PAGES, DSPARK_DEFAULT_GAMMA, EAGLE_AUTO_PARAMS
from allocator_model.regimes import Regime
from allocator_model.scenario import DecodeScenario, PriorStep, batch_runtime, max_device_lag, scenario_problem
from allocator_model.scheduler import decode_alloc_bound
from fuzz.findings.model import Finding, Search, Violation
from fuzz.verdict import PIPELINE, Unjudgeable

from .cases import SGLangCase
from .decode.check import DecodeCase
from .groups import scenario_of, serving_config
from .search_budget import BUDGET, DCP_SIZES, LEAD_CONTEXTS, WORK_CONTEXT
from .target_type import SGLangTarget


class _Spent(Exception):
    """The budget is spent: the walk stops where it stands."""


def without_needless_dcp(target: SGLangTarget, f: Finding) -> Finding:
    """``f`` without DCP where its group is not DCP's and the same case without DCP fails as the same group (the
    pipeline's stages 1-2, one replay): a printed case keeps no DCP size its group does not need."""
    if f.kind is not SGLangCase.DECODE or dcp_group(f) or serving_config(f).attn_dcp_size == 1:
        return f
    other = DecodeCase(scenario_of(f)).without_dcp(target)
    if other is None:
        return f
    v = _same_group(target, f, other.scenario, own=False)
    if v is None:
        return f
    out = other.finding(target, v, f.found_at)
    out.confirmation, out.confirmed = f.confirmation, f.confirmed  # not confirmed yet (None), or found there
    return out


def dcp_group(f: Finding) -> bool:
    """Whether ``f``'s group is DCP's (``dcp>1``, of any kind of pool): its cases keep their DCP size."""
    return f.signature.group.partition("@")[0] == Regime.DCP.value


def _same_group(
    target: SGLangTarget,
    f: Finding,
    s: DecodeScenario,
    own: bool,
    case_of: Callable[[DecodeScenario], Any] = DecodeCase,
) -> Violation | None:
    """The violation of ``f``'s group that ``s`` breaks, attributed (None: it breaks none, or cannot be run);
    ``case_of``: the case ``s`` is (a decode case, or a table's case of the same scenario)."""
    try:
        _, found = PIPELINE.checked(target, case_of(s), (f.signature.prop,), own)
    except Unjudgeable:
        return None
    return next((v for v in found if v.signature == f.signature), None)


@dataclass
class _Walk:
    target: SGLangTarget
    minimal: Finding
    own: bool = False  # the group is found only on SGLang's own path: the walk replays there
    replays: int = 0
    case_of: Callable[[DecodeScenario], Any] = DecodeCase
    period: int = 1  # tokens: a table's builder's own period in the context (a grid block), beside the page

    def fails(self, s: DecodeScenario) -> Violation | None:
        if self.replays >= BUDGET:
            raise _Spent
        self.replays += 1
        return _same_group(self.target, self.minimal, s, self.own, self.case_of)

    def first(self, candidates: Iterator[DecodeScenario]) -> tuple[DecodeScenario, Violation] | None:
        for s in candidates:
            v = self.fails(s)
            if v is not None:
                return s, v
        return None


def search(
    target: SGLangTarget,
    f: Finding,
    confirm: bool,
    scenario: DecodeScenario | None = None,
    case_of: Callable[[DecodeScenario], Any] = DecodeCase,
    period: int = 1,
) -> Search | None:
    """The representative case of ``f``'s group (``Search``): the walk of the module docstring from ``f``'s case,
    at most ``BUDGET`` replays; ``confirm``: replayed on SGLang's own code as ``f`` was.  None for a finding that is
    no deployment's (a model mismatch, a kind other than a decode case).  ``scenario``, ``case_of``: a table's
    case of a decode scenario (its scenario, and the table's case of another one), walked the same way;
    ``period``: the tokens of context its builder works in (a failure may rest on the context's place in it)."""
    from fuzz.findings.kinds import Property

    if scenario is None and (f.kind is not SGLangCase.DECODE or f.signature.prop is Property.MODEL_MISMATCH):
        return None
    walk = _Walk(target, f, case_of=case_of, period=period)
    start = scenario if scenario is not None else scenario_of(f)
    here: tuple[DecodeScenario, Violation | None] = (start, None)
    try:
        if walk.fails(start) is None:  # found on SGLang's own path only (or not the model's at all): walk there
            walk.own = True
        here = _walk(walk, start)
    except _Spent:
        pass
    case, v = here
    if v is None or case.config.context_len < WORK_CONTEXT:
        why = "the budget was spent" if walk.replays >= BUDGET else "no move keeps the group"
        return Search(BUDGET, walk.replays, missed=f"{why} before a context of {WORK_CONTEXT} or more")
    found = case_of(case).finding(target, v, f.found_at)
    if confirm:
        found = PIPELINE.confirm(target, found)
        if found.confirmed is False:
            return Search(
                BUDGET, walk.replays, missed=f"SGLang's own code does not break the case found ({found.confirmation})"
            )
    return Search(BUDGET, walk.replays, found, deployment(case.config))


def _walk(walk: _Walk, start: DecodeScenario) -> tuple[DecodeScenario, Violation | None]:
    """The moves in order from ``start``; where each stands: the case, and its violation (None: not moved yet)."""
    case, v = start, None
    for move in (_to_work_context, _speculative, _dcp, _page, _overlap, _capacity, _steps, _to_work_context):
        got = walk.first(move(case, walk))
        if got is not None:
            case, v = got
    if v is None and case.config.context_len >= WORK_CONTEXT:  # the minimal case is at such a context already
        v = walk.fails(case)
    if WORK_CONTEXT <= case.config.context_len < WORK_CONTEXT + _alloc_page(case.config):
        for context in LEAD_CONTEXTS:
            got = walk.first(_at_context(case, context, walk))
            if got is not None:
                return got
    return case, v


# -- the moves: each yields the cases to try, most realistic first (nothing where the field is realistic already) --


def _to_work_context(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    if s.config.context_len < WORK_CONTEXT:
        yield from _at_context(s, WORK_CONTEXT, walk)


def _at_context(s: DecodeScenario, context: int, walk: _Walk) -> Iterator[DecodeScenario]:
    """``s`` at ``context``, then (a failure that rests on where the row ends in the allocator's page, or in the
    period a table's builder works in: ``_Walk.period``) at the context as far past ``context`` as ``s``'s is
    past a whole one."""
    cfg = s.config
    period = max(_alloc_page(cfg), walk.period)
    for c in dict.fromkeys((context, context + cfg.context_len % _alloc_page(cfg), context + cfg.context_len % period)):
        yield from _placed(s, _changed(cfg, context_len=c), walk.target)


def _alloc_page(cfg: ServingConfig) -> int:
    return cfg.page_size * cfg.attn_dcp_size


def _speculative(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    for _, cfg in speculative_moves(s.config):
        if _same_spec(cfg, s.config):
            return  # where it stands is as realistic as any move left
        yield from _placed(s, cfg, walk.target)


def _dcp(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    cfg = s.config
    if cfg.attn_dcp_size == 1:
        return
    if not dcp_group(walk.minimal):  # off where the group is not DCP's (as it may be at this context only)
        yield from _placed(s, _changed(cfg, attn_dcp_size=1), walk.target)
    if cfg.attn_dcp_size not in DCP_SIZES:
        for size in DCP_SIZES:
            yield from _placed(s, _changed(cfg, attn_dcp_size=size), walk.target)


def _page(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    if s.config.page_size not in BACKEND_PAGES:
        for page in BACKEND_PAGES:
            yield from _placed(s, _changed(s.config, page_size=page), walk.target)


def _overlap(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    if not s.config.enable_overlap:
        yield from _placed(s, _changed(s.config, enable_overlap=True), walk.target)


def _capacity(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    if s.config.max_total_num_tokens is not None:
        yield from _placed(s, _changed(s.config, max_total_num_tokens=None), walk.target)


def _steps(s: DecodeScenario, walk: _Walk) -> Iterator[DecodeScenario]:
    if s.num_steps is not None or s.prior is not None:
        bare = DecodeScenario(s.config, s.committed_len, None, None, s.device_lag)
        yield from _placed(bare, s.config, walk.target, s)


def _changed(cfg: ServingConfig | None, **changes: Any) -> ServingConfig | None:
    if cfg is None:
        return None
    try:
        return cfg.replace(**changes)
    except ConfigError:
        return None


def _placed(
    s: DecodeScenario, cfg: ServingConfig | None, target: SGLangTarget, anchor: DecodeScenario | None = None
) -> Iterator[DecodeScenario]:
    """``s`` on ``cfg``, its other fields fitted to it, its request's length placed two ways: as far below the
    scheduler's bound as ``anchor``'s (``s`` itself by default), and at the same place in the allocator's page
    below that: the two a failure at the row's end may rest on."""
    if cfg is None:
        return
    anchor = anchor or s
    rev = target.revision
    num_steps = s.num_steps if cfg.speculative_adaptive and s.num_steps in cfg.candidate_steps else None
    prior = None
    if s.prior is not None and cfg.spec_on:
        steps = s.prior.num_steps if cfg.speculative_adaptive and s.prior.num_steps in cfg.candidate_steps else None
        runtime = batch_runtime(cfg, steps)
        prior = PriorStep(min(s.prior.accepted, runtime.num_draft_tokens if runtime else 1), steps)
    lag = min(s.device_lag, max_device_lag(cfg))
    try:
        first = decode_alloc_bound(cfg, rev) - (decode_alloc_bound(anchor.config, rev) - anchor.committed_len)
    except ConfigError:
        return
    page = _alloc_page(cfg)
    for committed in dict.fromkeys((first, first - (first - anchor.committed_len) % page)):
        case = DecodeScenario(cfg, committed, num_steps, prior, lag)
        if committed >= 1 and scenario_problem(case, rev) is None:
            yield case


# -- SGLang's speculative defaults, most realistic first --------------------------------------------------------


def speculative_moves(cfg: ServingConfig) -> list[tuple[str, ServingConfig]]:
    """The speculative settings ``cfg``'s case is moved toward, each as the deployment it makes and what it is,
    most realistic first: none at all (SGLang's default); EAGLE at SGLang's auto choices (EAGLE3 where the case
    runs EAGLE3); the case's own algorithm at its defaults; adaptive EAGLE at its default candidates.  A setting
    SGLang's launch rules refuse with the rest of ``cfg`` is left out."""
    a = cfg.speculative_algorithm
    eagle = algo.EAGLE3 if a == algo.EAGLE3 else algo.EAGLE
    wanted: list[tuple[str, dict[str, Any]]] = [("no speculative decoding (SGLang's default)", {})]
    for who, (steps, topk, drafts) in EAGLE_AUTO_PARAMS:
        shape = dict(speculative_num_steps=steps, speculative_eagle_topk=topk, speculative_num_draft_tokens=drafts)
        wanted.append((f"{eagle} {_shape(steps, topk, drafts)}, SGLang's auto choice for {who}", {"a": eagle, **shape}))
    if a is not None and a not in (algo.EAGLE, algo.EAGLE3, algo.UNO):  # UNO has no default D
        own: dict[str, Any] = {"a": a}
        if a == algo.STANDALONE:
            steps, topk, drafts = EAGLE_AUTO_PARAMS[0][1]  # its auto choice whatever the model
            own.update(speculative_num_steps=steps, speculative_eagle_topk=topk, speculative_num_draft_tokens=drafts)
        if a == algo.DSPARK:
            own["speculative_num_draft_tokens"] = DSPARK_DEFAULT_GAMMA + 1
        wanted.append((f"{a} at SGLang's defaults", own))
    wanted.append((f"{eagle} adaptive at SGLang's default candidate steps", {"a": eagle, "speculative_adaptive": True}))
    out = []
    for what, spec in wanted:
        moved = _respecified(cfg, spec)
        if moved is not None:
            shown = f"{what}" if "(" in what or moved.speculative_algorithm is None else f"{what} {_shape_of(moved)}"
            out.append((shown, moved))
    return out


def _respecified(cfg: ServingConfig, spec: dict[str, Any]) -> ServingConfig | None:
    fields = cfg.to_dict()
    for name in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens"):
        fields[name] = None
    fields.update(speculative_adaptive=False, speculative_adaptive_candidate_steps=None)
    spec = dict(spec)
    fields["speculative_algorithm"] = spec.pop("a", None)
    fields.update(spec)
    try:
        return ServingConfig.resolve(**fields)
    except ConfigError:
        return None


def _shape(steps: Any, topk: Any, drafts: Any) -> str:
    return f"(S,K,D)=({steps},{topk},{drafts})"


def _shape_of(cfg: ServingConfig) -> str:
    return _shape(cfg.speculative_num_steps, cfg.speculative_eagle_topk, cfg.speculative_num_draft_tokens)


def _same_spec(a: ServingConfig, b: ServingConfig) -> bool:
    names = (
        "speculative_algorithm",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "speculative_adaptive",
        "speculative_adaptive_candidate_steps",
    )
    return all(getattr(a, n) == getattr(b, n) for n in names)


def deployment(cfg: ServingConfig) -> str:
    """What a representative case's deployment is, field by field: its context, its speculative settings (which
    default of SGLang's, else as the minimal case has them), its page (which backend's), its DCP size (a group's
    that needs it only), its overlap scheduler."""
    spec = next((what for what, moved in speculative_moves(cfg) if _same_spec(moved, cfg)), None)
    off = cfg.context_len % _alloc_page(cfg)
    context = f"context {cfg.context_len}"
    if off and cfg.context_len - off in (WORK_CONTEXT, *LEAD_CONTEXTS):
        context += f" (not {cfg.context_len - off}: the group needs context_len mod {_alloc_page(cfg)} = {off})"
    parts = [
        context,
        spec or f"{cfg.speculative_algorithm} {_shape_of(cfg)} (no default of SGLang's keeps the group)",
    ]
    page = BACKEND_PAGES.get(cfg.page_size)
    parts.append(f"page {cfg.page_size}" + (f" ({page})" if page else " (no backend's page keeps the group)"))
    if cfg.attn_dcp_size > 1:
        parts.append(f"DCP {cfg.attn_dcp_size} (the group needs it)")
    parts.append("overlap on (SGLang's default)" if cfg.enable_overlap else "overlap off")  # [cite: overlap-default-on]
    return ", ".join(parts)


def summary_line(findings: list[Finding]) -> str | None:
    """What ``run`` says of its groups' representative cases: how many found, the budget, the groups missed."""
    searched = [f for f in findings if f.search is not None]
    if not searched:
        return None
    missed = [str(f.signature) for f in searched if f.search is not None and f.search.found is None]
    line = (
        f"   representative cases: {len(searched) - len(missed)} of {len(searched)} groups at context {WORK_CONTEXT}+, "
        f"each a walk of at most {BUDGET} replays"
    )
    return line + (f"; missed: {', '.join(missed)}" if missed else "")


def at_deployment(cfg: ServingConfig) -> bool:
    """Whether a case's deployment is one a representative case has: a context of ``WORK_CONTEXT`` or more."""
    return cfg.context_len >= WORK_CONTEXT


def deployment_rank(cfg: ServingConfig) -> tuple[bool, int]:
    """How ``advisory`` orders the cases it may show a cause by: a representative case first (``at_deployment``),
    the most common speculative settings among them first (``speculative_moves``' order: 0 for none at all, then
    EAGLE's auto choices...; past them all where none matches)."""
    if not at_deployment(cfg):
        return True, 0
    moves = speculative_moves(cfg)
    return False, next((i for i, (_, moved) in enumerate(moves) if _same_spec(moved, cfg)), len(moves))


def minimal_of(findings: list[Finding], shown: Finding) -> Finding | None:
    """Among ``findings`` (one target's cases), the minimal case of the group ``shown`` is of, where ``shown`` is
    its representative case: the smallest context of the group's cases below ``WORK_CONTEXT``."""
    decode = [f for f in findings if f.kind is SGLangCase.DECODE and f.signature == shown.signature]
    if shown.kind is not SGLangCase.DECODE or not at_deployment(serving_config(shown)):
        return None
    same = [f for f in decode if not at_deployment(serving_config(f))]
    return min(same, key=lambda f: serving_config(f).context_len, default=None)
