"""``RealSizing``: SGLang's own code behind the declared sizing surface, a checking wrapper around plain callers.

Every declared entry (``allocator_model.surface.SURFACE``) gets a plain
caller from the loaded target, or is absent from it:

* an entry the sizing module answers directly (``Entry.functions``) is
  called by name if the file defines it, its arguments by parameter name
  (``arguments``); SGLang main's guard answers True where it asserts;
* the allocator page of each kind is read where SGLang builds the allocator
  (``allocators``), the row width where its pool builders size the row
  (``builders``); a kind whose building code was not read is answered by the
  model of the target's version for that call (``Modeled``);
* anything else is absent, and the model of the target's version answers it
  (listed by ``modeled``), except where SGLang's own history says what a
  missing function means (``ABSENT_MEANS``).

The checking wrapper (``_checked``) is the only place results and failures
are judged: whatever the real code raises is a ``TargetCallError`` naming the
function and the configuration (a finding: ``sizing-raised``), a result
that is not what the entry declares is one too, and a piece of SGLang with
no stand-in is ``StandInMissing`` (exit 2).  ``plain()`` is the same surface
without the wrapper: prove hands it traced values and reads every path's
outcome itself.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.model_sizing import ModelSizing
from allocator_model.pools import KVPool
from allocator_model.revisions import Revision
from allocator_model.surface import (
    ALLOCATOR_PAGE_SIZE,
    DECODE_STEPS,
    ROW_GUARD,
    ROW_WIDTH,
    SIZING_ALLOC_PAGE,
    Entry,
    Provenance,
    Result,
    Shape,
    Surface,
    entries,
)
from fuzz.targets.base import TargetCallError, TargetError

from .boundary import RAISED_BY_TARGET, TARGET_BASE_EXCEPTIONS, TargetRaised, bounded_call, depth, out_of_range
from .callers import Caller, Modeled, context, integer, raised_where
from .loader import MODEL_CONFIG, PAGE_SIZE, Generation, SizingModule, server_args_parameter
from .runtime.bounds import SGLangTimeout
from .runtime.request import ReqAttributeMissing
from .scenario import SGLangPath
from .stubs import Bag, StandInMissing, Unsupplied

ROW_WIDTH_FUNCTION = "get_req_to_token_row_width"  # main: the row width is the file's, page-aligned


# What a missing sizing function means, where SGLang's history says it (else the model of the version answers).
ABSENT_MEANS: dict[str, Callable[..., Any]] = {
    # Before get_alloc_page_size (0.5.19) the sizing formulas round with page_size alone (0.5.18
    # allocation_sizing.py reads get_schedule().page_size; 0.5.13-0.5.15 common.py server_args.page_size).
    SIZING_ALLOC_PAGE.name: lambda cfg: cfg.page_size,
}


class RealSizing(Surface):
    """The declared surface answered by a loaded SGLang sizing file and the builders read beside it."""

    def __init__(self, module: SizingModule, revision: Revision):
        self.module = module
        self.revision = revision
        self._model = ModelSizing(revision)  # what the target does not answer
        self._checked = True
        self.callers: dict[Entry, Caller | None] = {e: self._caller(e) for e in entries()}

    def plain(self) -> RealSizing:
        """The same callers, without the checking wrapper: what the code raises or returns passes through."""
        plain = copy.copy(self)
        plain._checked = False
        plain.callers = {e: plain._caller(e) for e in entries()}  # their inner calls go through the plain one too
        return plain

    # -- answering ----------------------------------------------------------------------------------

    def call(self, entry: Entry, *args: Any) -> Any:
        caller = self.callers.get(entry)
        if caller is None:
            absent = ABSENT_MEANS.get(entry.name)
            return absent(*args) if absent is not None else self._model.call(entry, *args)
        try:
            with self._time_bound(entry, caller, args):
                return caller.run(*args) if not self._checked else self._checked_call(entry, caller, args)
        except Modeled:
            return self._model.call(entry, *args)
        except TARGET_BASE_EXCEPTIONS as e:  # the plain callers' too: never obeyed, passed on as what it raised
            raise TargetRaised(f"{type(e).__name__}: {e}") from e
        except SGLangTimeout as e:
            raise TargetError(f"{e}: a sizing function that never returns") from None

    def _time_bound(self, entry: Entry, caller: Caller, args: tuple[Any, ...]) -> Any:
        """``SIZING_SECONDS`` on the outermost call into the sizing code (its inner calls share it); none on a
        decode step, which SGLang's write path bounds itself."""
        if entry.result is Result.RUN or depth():
            return contextlib.nullcontext()
        return bounded_call(lambda: caller.named(args), self.module.filename)

    def _checked_call(self, entry: Entry, caller: Caller, args: tuple[Any, ...]) -> Any:
        try:
            value = caller.run(*args)
        except (Modeled, TargetError) as e:  # TargetCallError and StandInMissing included
            if isinstance(e, StandInMissing) and entry.shape is not Shape.SCENARIO:
                raise StandInMissing(f"{caller.named(args)}: {e} {context(entry, args)}") from None
            raise
        except ReqAttributeMissing as e:  # the file reads a request field its release's Req does not have: not a bug
            raise StandInMissing(f"{caller.named(args)}: {e}") from None
        except RAISED_BY_TARGET as e:  # noqa: BLE001 - whatever the real code raises is the finding
            where = raised_where(self.module, caller, args, e)
            raise TargetCallError(f"{where} {type(e).__name__}: {e} {context(entry, args)}".replace("\n", " ")) from e
        return self._result(entry, caller, value, args)

    def _result(self, entry: Entry, caller: Caller, value: Any, args: tuple[Any, ...]) -> Any:
        """``value`` if it is what ``entry`` declares; a ``TargetCallError`` (a finding) otherwise.

        The call is worded (``caller.named``, ``context``) only for an error: a proof checks about 10^5 answers."""
        if entry.result is Result.RUN:
            return value
        if isinstance(value, Unsupplied):  # a name the slice left out (a local it does not follow): not the code's
            raise StandInMissing(f"{caller.named(args)}: it reads {value!r}")
        if entry.result is Result.FLAG:
            return bool(value)
        if entry.result is Result.LENS:
            lens = args[0]
            try:
                cur, nxt, need = value
                cur, nxt = list(cur), list(nxt)
            except (TypeError, ValueError):
                cur, nxt, need = value, [], None
            if len(cur) != len(lens) or len(nxt) != len(lens) or not all(map(integer, [*cur, *nxt, need])):
                raise TargetCallError(
                    f"{caller.named(args)} returned {value!r}, not per-request integers, {context(entry, args)}"
                )
            return cur, nxt, need
        if caller.what is not None and (not integer(value) or value < entry.least):
            raise TargetCallError(
                f"{caller.named(args)} gave {caller.what} {value!r}, not an integer >= {entry.least} "
                f"{context(entry, args)}"
            )
        if not integer(value):
            raise TargetCallError(f"{caller.named(args)} returned {value!r}, not an integer {context(entry, args)}")
        out_of_range(value, lambda: caller.named(args), lambda: context(entry, args))
        return value

    # -- the callers ------------------------------------------------------------------------------------

    def _caller(self, entry: Entry) -> Caller | None:
        special = {
            ALLOCATOR_PAGE_SIZE: self._allocator_page_caller,
            ROW_WIDTH: self._row_width_caller,
            DECODE_STEPS: self._write_path_caller,
        }.get(entry)
        if special is not None:
            return special()
        name = next((f for f in entry.functions if f in self.module.functions), None)
        if name is None:
            return None
        where = f"{name}() of {self.module.origin}"
        if entry.shape is Shape.LENS:
            return Caller(where, self._lens_runner(name), name)
        if entry.shape is Shape.GUARD:
            return Caller(where, self._guard_runner(name), name)
        page = self._decode_page if entry.shape is Shape.RUNTIME and self.module.generation.page_keyword else None
        return Caller(where, self._function_runner(name, entry.shape, page), name)

    def _function_runner(
        self, name: str, shape: Shape, page: Callable[[ServingConfig], int] | None
    ) -> Callable[..., Any]:
        fn, published = self.module.functions[name], self.module.published

        def run(cfg: ServingConfig, rt: SpecRuntime | None = None) -> Any:
            with published.bound(cfg, rt if shape is Shape.RUNTIME else cfg.launch_runtime):
                args, kwargs = self.arguments(name, cfg, page(cfg) if page is not None else None)
                return fn(*args, **kwargs)

        return run

    def _guard_runner(self, name: str) -> Callable[..., Any]:
        fn, published = self.module.functions[name], self.module.published

        def run(cfg: ServingConfig, max_alloc_len: Any, row_width: Any) -> bool:
            with published.bound(cfg, cfg.launch_runtime):
                try:
                    fn(max_alloc_len=max_alloc_len, row_width=row_width)
                except AssertionError:
                    return True  # SGLang's guard stops the allocation
            return False

        return run

    def _lens_runner(self, name: str) -> Callable[..., Any]:
        fn = self.module.functions[name]
        requests = self.module.requests

        def run(lens: Any, reserve: Any, page: Any) -> Any:
            return fn([requests(c, a) for c, a in lens], reserve=reserve, page_size=page)

        return run

    def _decode_page(self, cfg: ServingConfig) -> int:
        """The page the decode path hands a file whose length/reserve take one (main): the allocator's own.

        Main's ``resolve_kv_bookkeeping_page(allocator)`` answers the
        allocator's ``page_size``: the kind's page, ``page_size`` itself for
        the bare-page kinds under DCP.
        """
        value: int = self.call(ALLOCATOR_PAGE_SIZE, cfg)
        return value

    def _allocator_page_caller(self) -> Caller | None:
        read = self.module.alloc_pages
        if read is None or not read.pages:
            return None

        def run(cfg: ServingConfig) -> Any:
            if cfg.kv_pool not in read.pages:
                raise Modeled
            with self.module.published.bound(cfg, cfg.launch_runtime):
                return read.pages[cfg.kv_pool]()

        def where(cfg: ServingConfig) -> str:
            return f"the {cfg.kv_pool.value} allocator page, read from {read.origins[cfg.kv_pool]}"

        return Caller(where, run, what="allocator page")

    def _row_width_caller(self) -> Caller:
        """Always the target's: a standard row is C + the file's own extra even where no builder was read."""
        extras, fns = self.module.row_extras, self.module.functions
        width_fn = self._function_runner(ROW_WIDTH_FUNCTION, Shape.LAUNCH, None) if ROW_WIDTH_FUNCTION in fns else None

        def run(cfg: ServingConfig) -> Any:
            """The row of ``cfg.kv_pool``: its builder's own extra if it has one, else the sizing file's row
            (main: its page-aligned ``get_req_to_token_row_width()``; else C + extra)."""
            kind = cfg.kv_pool
            if kind is not KVPool.STANDARD and extras is not None and kind in extras:
                with self.module.published.bound(cfg, cfg.launch_runtime):
                    return cfg.context_len + extras[kind]()
            if kind is not KVPool.STANDARD and extras is None and kind in self.revision.narrow_rows:
                raise Modeled  # the version's builder, as modeled (a lone file)
            if width_fn is None:
                return cfg.context_len + self.req_to_token_extra_context_len(cfg)
            return width_fn(cfg)

        def where(cfg: ServingConfig) -> str:
            if cfg.kv_pool is not KVPool.STANDARD and extras is not None and cfg.kv_pool in extras:
                return f"the {cfg.kv_pool.value} pool builder of {self.module.builders_origin}"
            name = ROW_WIDTH_FUNCTION if width_fn is not None else "get_req_to_token_extra_context_len"
            return f"{name}() of {self.module.origin}"

        return Caller(where, run, what="row width")  # a row under one column: SGLang's pool cannot be built

    def _write_path_caller(self) -> Caller | None:
        """SGLang's own decode write path, where the target has a tree to run it from and triton to run it on."""
        path = self.write_path
        if path is None:
            return None

        def run(scenario: Any, trace: bool = False) -> Any:
            return path.run(scenario, self, self.revision, trace=trace, check=trace)

        return Caller(f"sglang's own write path ({path.source})", run)

    @functools.cached_property
    def write_path(self) -> SGLangPath | None:
        """The target's own write path (``scenario.SGLangPath``), or None: see ``write_path_missing``."""
        if self.write_path_missing() is not None or self.module.tree_source is None:
            return None
        return SGLangPath(self.module.tree_source, None)

    def kv_allocator(self, cfg: ServingConfig, num_tokens: int, page_size: int) -> Any:
        """The release's own allocator class (``allocator_adapter``) where its write path runs, else the model's."""
        if self.write_path is None:
            return self._model.kv_allocator(cfg, num_tokens, page_size)
        from .allocator_adapter import SGLangAllocator

        return SGLangAllocator(self.write_path.runtime, cfg, num_tokens, page_size)

    def kv_allocator_takes(self, page_size: int) -> bool:
        from .allocator_adapter import takes_page

        return self.write_path is None or takes_page(page_size)

    def write_path_missing(self) -> str | None:
        """Why the decode write path is the model's for this target (None: SGLang's own runs)."""
        if self.module.tree_source is None:
            return "the target has no tree of SGLang's files around its sizing module to run it from"
        if importlib.util.find_spec("triton") is None:
            return "triton is not installed (pip install 'kvrow-fuzz[writepath]': triton, its interpreter)"
        return None

    def arguments(self, name: str, cfg: ServingConfig, page: int | None) -> tuple[list[Any], dict[str, Any]]:
        """The arguments a file function gets, by its parameter names (``loader``'s docstring)."""
        params = self.module.parameters[name]
        published = self.module.published
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        server_args = server_args_parameter(params)
        if server_args is not None:
            if server_args.kind is inspect.Parameter.KEYWORD_ONLY:
                kwargs[server_args.name] = published.read("server_args")
            else:
                args.append(published.read("server_args"))
        if MODEL_CONFIG in params:
            kwargs[MODEL_CONFIG] = Bag("model_config", context_len=cfg.context_len)
        if PAGE_SIZE in params and page is not None:
            kwargs[PAGE_SIZE] = page
        return args, kwargs

    # -- what the reports say -----------------------------------------------------------------------------

    def source(self, entry: Entry) -> Provenance:
        return Provenance.READ if self.callers.get(entry) is not None else Provenance.MODELED

    @property
    def generation(self) -> Generation:
        return self.module.generation

    def api_generation(self) -> str | None:
        return self.module.generation.name

    def builder_location(self, kind: KVPool) -> tuple[str, str, int] | None:
        found = self.module.builder_lines.get(kind)
        if found is None or self.module.builders_origin is None:
            return None
        return self.module.builders_origin, found[0], found[1]

    def by_design(self, cfg: ServingConfig | None = None) -> dict[str, str]:
        """Main (the row-width API generation) page-aligns the row instead of adding P - 1 to the headroom and
        sizes the reserve at the allocator's own page; the model's revisions keep W = C + extra and size at
        page_size * attn_dcp_size, which a bare-page allocator (SWA, HiSparse) does not use under DCP."""
        generation = self.module.generation
        if cfg is not None:
            if generation.page_keyword and cfg.kv_pool.bare_page and cfg.attn_dcp_size > 1:
                return {n: PAGE_FOLLOWS_ALLOCATOR for n in ("alloc_len_per_decode", "alloc_reserve_per_decode")}
            return {}
        if not generation.has_row_width:
            return {}
        why = "main page-aligns the row to the allocator page instead of adding P - 1 to the headroom"
        return {
            "req_to_token_extra_context_len": why,
            "req_to_token_row_width": why,
            "alloc_len_per_decode (bare-page kinds under DCP)": PAGE_FOLLOWS_ALLOCATOR,
        }

    def modeled(self) -> list[str]:
        """What a run on this file still takes from the model (listed by ``targets`` and reports)."""
        out = [e.name for e in entries() if self.source(e) is Provenance.MODELED and e not in (ROW_GUARD, DECODE_STEPS)]
        missing = self.write_path_missing()
        if missing:
            out.append(f"the decode write path ({missing})")
        out.append(
            "the scheduler (which requests a batch holds, the verify's accepts); which kind of pool a deployment builds"
        )
        if self.module.row_extras is None:
            left = sorted(set(KVPool) - self.revision.pools)
            out.append(
                "no pool builders (kv_cache_configurator.py, or 0.5.13-0.5.15's model_runner_kv_cache_mixin.py): "
                "the other kinds of pool take the sizing file's row"
                + (
                    f", and {', '.join(left)} (sized by their own builders in this version) are not checked"
                    if left
                    else ""
                )
            )
        else:
            out.append("W = C + extra_max_context_len")
        read = self.module.alloc_pages.pages if self.module.alloc_pages else {}
        unread = sorted(k.value for k in self.revision.pools if k not in read)
        if unread:
            out.append(f"the allocator page of the {', '.join(unread)} pool(s) (not read from the target)")
        if self.module.generation.page_keyword:
            out.append("the page the decode path passes as page_size (the allocator's own)")
        if self.module.generation.has_guard:
            out.append(f"where {ROW_GUARD.functions[0]}() is called (every speculative decode allocation)")
        return out


PAGE_FOLLOWS_ALLOCATOR = "main sizes the decode reserve at the allocator's own page (resolve_kv_bookkeeping_page)"
