"""``RealSizing``: SGLang's own sizing file behind the model's sizing surface.

The file is compiled and run in a private namespace whose imports resolve
every ``sglang`` module to a stand-in (``stubs``; nothing enters
``sys.modules``).  Each surface call publishes the example's configuration,
calls the real function, and checks it returned an integer.  A real function
that raises (or returns a non-integer) raises ``TargetCallError`` naming the
function and the configuration: ``check_scenario`` reports it as a finding
(``sizing-raised``), never a crash.  A function that uses a piece of SGLang
with no stand-in raises ``StandInMissing`` instead: exit 2, naming it.

API generations, detected from the file's own functions and signatures
(never from a version number):

    server-args  0.5.13-0.5.17  every function takes ``server_args`` (0.5.13-0.5.15: in mem_cache/common.py)
    accessors    0.5.18         functions read the bags; rounding uses page_size alone
    alloc-page   0.5.19         get_alloc_page_size() = page_size * attn_dcp_size, page_aligned_decode_alloc_lens
    uno          0.5.20-0.5.23  the UNO branch (L = Dmax + 1, headroom at every page)
    row-width    main           (sgl-project/sglang 84be7ff, mem_cache/allocation_sizing.py) server_args again
                                (optional), the decode length and reserve take the allocator page as the
                                keyword ``page_size``, the headroom is the largest reserve over
                                get_candidate_alloc_page_sizes() (page_size and page_size * dcp_size),
                                get_req_to_token_row_width(server_args=, model_config=) page-aligns the row,
                                assert_alloc_within_row_width() guards the allocation end

Arguments are supplied by parameter name: ``server_args`` (or a first
positional parameter) gets the published bag, ``model_config`` a bag with
``context_len``, ``page_size`` the allocator's page; any other parameter must
have a default.  A file without ``page_aligned_decode_alloc_lens`` uses the
modeled one of its version's revision (before 0.5.19 that arithmetic lived in
the decode path, which is the model's anyway).  What stays modeled for every
real target: the decode path that calls these functions, the allocator
(its page is read where SGLang builds it when the pool builders are there:
``allocators``), the scheduler; for main, also the call site of the guard and which page the
decode path passes (the allocator's own, ``alloc_page_size``).
"""

from __future__ import annotations

import copy
import inspect
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.pools import KVPool
from allocator_model.revisions import Revision
from allocator_model.sizing import ModelSizing

from ..base import TargetCallError, TargetError
from .allocators import AllocPages, Source, extract_alloc_pages
from .builders import RowExtra, builder_lines, extract_row_extras
from .stubs import Bag, Published, StandInMissing, StandIns, Unsupplied, private_builtins

REQUIRED = ("get_alloc_len_per_decode", "get_alloc_reserve_per_decode", "get_req_to_token_extra_context_len")
ALLOC_PAGE = "get_alloc_page_size"  # 0.5.19-0.5.23: the allocator page (page_size * attn_dcp_size)
ALLOC_PAGE_UPPER = "get_alloc_page_size_upper_bound"  # main: the plain paged allocator's page under DCP
ALIGNED_LENS = "page_aligned_decode_alloc_lens"
ROW_WIDTH = "get_req_to_token_row_width"
CANDIDATE_PAGES = "get_candidate_alloc_page_sizes"
ROW_GUARD = "assert_alloc_within_row_width"
OPTIONAL = (ALLOC_PAGE, ALLOC_PAGE_UPPER, ALIGNED_LENS, ROW_WIDTH, CANDIDATE_PAGES, ROW_GUARD)
# Parameters the loader supplies by name; every other parameter must have a default.
SERVER_ARGS, MODEL_CONFIG, PAGE_SIZE = "server_args", "model_config", "page_size"


@dataclass(frozen=True)
class Generation:
    name: str
    releases: str
    takes_server_args: bool
    has_alloc_page: bool  # get_alloc_page_size() or get_alloc_page_size_upper_bound()
    has_aligned_lens: bool
    has_uno: bool
    page_keyword: bool = False  # the decode length and reserve take the allocator page (``page_size=``)
    has_row_width: bool = False  # get_req_to_token_row_width(): the row width is the file's, page-aligned
    has_candidate_pages: bool = False  # the headroom covers every candidate allocator page
    has_guard: bool = False  # assert_alloc_within_row_width(): SGLang stops an allocation past the row

    def describe(self) -> str:
        return f"{self.name} API ({self.releases} shape)"


@dataclass
class SizingModule:
    """A loaded sizing file: its functions, the accessors' state, its API generation."""

    origin: str  # how messages name it: sglang==0.5.18, the installed sglang, a path
    filename: str  # what its code objects carry, to find the raising function in a traceback
    functions: dict[str, Callable]
    published: Published
    generation: Generation
    parameters: dict[str, dict[str, inspect.Parameter]]  # per function: its parameters by name
    stand_ins: StandIns | None = None
    unsupplied: list[str] = field(default_factory=list)  # names imported with no stand-in (never called so far)
    # The pool builders' own row extras, per kind (``builders``), when the configurator was read; None: not read.
    row_extras: dict[KVPool, RowExtra] | None = None
    builders_origin: str | None = None  # where they were read
    builder_lines: dict[KVPool, tuple[str, int]] = field(default_factory=dict)  # kind -> (Class.method, def line)
    # The allocator page per kind, read where SGLang builds the allocator (``allocators``); None: not read.
    alloc_pages: AllocPages | None = None

    def read_builders(self, source: str, where: str, others: Sequence[Source] = ()) -> None:
        """Slice the pool builders' row extras and allocator pages out of ``kv_cache_configurator.py``.

        ``others``: the mem_cache files the unified allocators are built in
        (``allocators.UNIFIED_MODULES``), those the target has.
        """
        assert self.stand_ins is not None
        self.row_extras = extract_row_extras(source, where, self.functions, self.published, self.stand_ins)
        self.alloc_pages = extract_alloc_pages(Source(source, where), others, self.published, self.stand_ins)
        self.builders_origin = where
        self.builder_lines = {k: v for k, v in builder_lines(source).items() if k in self.row_extras}

    @property
    def takes_server_args(self) -> dict[str, bool]:
        """Per function: whether it is handed the server_args bag."""
        return {n: _server_args_parameter(p) is not None for n, p in self.parameters.items()}


def _parameters(fn: Callable) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def _server_args_parameter(params: dict[str, inspect.Parameter]) -> inspect.Parameter | None:
    """The parameter that receives server_args: so named, or else a first positional one the loader cannot name."""
    if SERVER_ARGS in params:
        return params[SERVER_ARGS]
    first = next(iter(params.values()), None)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if first is not None and first.kind in positional and first.name not in (MODEL_CONFIG, PAGE_SIZE):
        return first
    return None


def _names(fn: Callable) -> set[str]:
    code = getattr(fn, "__code__", None)
    names: set[str] = set()
    stack = [code] if code else []
    while stack:  # nested functions' code objects too
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def detect_generation(functions: dict[str, Callable]) -> Generation:
    """The API generation, from which functions exist and what their signatures take."""
    params = {n: _parameters(f) for n, f in functions.items()}
    takes_server_args = any(_server_args_parameter(params[n]) is not None for n in REQUIRED)
    has_alloc_page = ALLOC_PAGE in functions or ALLOC_PAGE_UPPER in functions
    has_aligned = ALIGNED_LENS in functions
    has_uno = any("is_uno" in _names(fn) for fn in functions.values())
    page_keyword = PAGE_SIZE in params["get_alloc_reserve_per_decode"]
    has_row_width = ROW_WIDTH in functions
    flags = dict(
        page_keyword=page_keyword,
        has_row_width=has_row_width,
        has_candidate_pages=CANDIDATE_PAGES in functions,
        has_guard=ROW_GUARD in functions,
    )
    if has_row_width or page_keyword:
        name, releases = "row-width", "main"
    elif takes_server_args:
        name, releases = "server-args", "0.5.13-0.5.17"
    elif has_uno:
        name, releases = "uno", "0.5.20-0.5.23"
    elif has_alloc_page:
        name, releases = "alloc-page", "0.5.19"
    else:
        name, releases = "accessors", "0.5.18"
    return Generation(name, releases, takes_server_args, has_alloc_page, has_aligned, has_uno, **flags)


def _check_callable_by_us(origin: str, name: str, params: dict[str, inspect.Parameter]) -> None:
    """TargetError unless every parameter of ``name`` is one the loader supplies or has a default."""
    supplied = {SERVER_ARGS, MODEL_CONFIG, PAGE_SIZE}
    server_args = _server_args_parameter(params)
    for p in params.values():
        if p is server_args or p.name in supplied or p.default is not inspect.Parameter.empty:
            continue
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        raise TargetError(
            f"{origin}: {name}() needs a parameter {p.name!r} the loader cannot supply "
            f"(it supplies {SERVER_ARGS}, {MODEL_CONFIG}, {PAGE_SIZE})"
        )


def load_sizing_module(source: str, origin: str, filename: str) -> SizingModule:
    """Run the file in a private namespace; TargetError (one line) if it is not a usable sizing file."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise TargetError(f"{origin}: syntax error at line {e.lineno}: {e.msg}") from None
    except ValueError as e:  # null bytes
        raise TargetError(f"{origin}: not Python source ({e})") from None
    published = Published()
    stand_ins = StandIns(published)
    namespace: dict[str, Any] = {
        "__name__": "kvrow_fuzz_sglang_sizing",
        "__file__": filename,
        "__builtins__": private_builtins(stand_ins),
    }
    try:
        exec(code, namespace)  # noqa: S102 - running the target is the point
    except StandInMissing as e:
        raise TargetError(f"{origin} at import: {e}") from None
    except ImportError as e:
        raise TargetError(f"{origin}: import failed: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure at import is a broken file
        raise TargetError(f"{origin} raised {type(e).__name__} at import: {e}".splitlines()[0]) from None
    functions = {
        n: f
        for n, f in namespace.items()
        if n in REQUIRED + OPTIONAL and callable(f) and getattr(f, "__code__", None) is not None
    }
    missing = [n for n in REQUIRED if n not in functions]
    if missing:
        raise TargetError(
            f"{origin} has no {missing[0]}(): not an allocation_sizing.py-shaped file (needs {', '.join(REQUIRED)})"
        )
    parameters = {n: _parameters(f) for n, f in functions.items()}
    for n, p in parameters.items():
        if n not in (ALIGNED_LENS, ROW_GUARD):  # those two are called with their own arguments
            _check_callable_by_us(origin, n, p)
    return SizingModule(
        origin,
        filename,
        functions,
        published,
        detect_generation(functions),
        parameters,
        stand_ins,
        stand_ins.unsupplied(),
    )


def _runtime_text(rt: SpecRuntime | None) -> str:
    return "" if rt is None else f", run-time num_steps={rt.num_steps} num_draft_tokens={rt.num_draft_tokens}"


def _raised_where(module: SizingModule, called: str, exc: BaseException) -> str:
    """'f() of ORIGIN raised', naming the file's innermost function in the traceback when it is not ``called``."""
    inner = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == module.filename:
            inner = (tb.tb_frame.f_code.co_name, tb.tb_lineno)
        tb = tb.tb_next
    where = f"{called}() of {module.origin}"
    if inner and inner[0] != called:
        return f"{where} raised in {inner[0]}() line {inner[1]}"
    return where + (f" raised (line {inner[1]})" if inner else " raised")


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# The sizing surface's functions (``fuzz.targets.base.SizingSurface``), in the order reports list them.
SURFACE = (
    "allocator_page_size",
    "alloc_page_size",
    "alloc_len_per_decode",
    "alloc_reserve_per_decode",
    "req_to_token_extra_context_len",
    "req_to_token_row_width",
    "row_guard_fires",
    "page_aligned_decode_alloc_lens",
)


class RealSizing:
    """The sizing surface (same as ``ModelSizing``) answered by a loaded SGLang sizing file."""

    def __init__(self, module: SizingModule, revision: Revision):
        self.module = module
        self.revision = revision
        self._model = ModelSizing(revision)  # only for what the file does not define
        self._raw = False

    def raw(self) -> RealSizing:
        """The same surface, but what the file raises or returns is passed through untouched.

        For ``prove``'s traced calls (``fuzz.prove.traced_rows``), which hand the
        file traced values and read every path's outcome themselves.
        """
        raw = copy.copy(self)
        raw._raw = True
        return raw

    @property
    def generation(self) -> Generation:
        return self.module.generation

    def in_file(self, surface_name: str) -> bool:
        """Whether a surface function is answered by the file (else by the model of its version)."""
        return {
            "allocator_page_size": bool(self.module.alloc_pages and self.module.alloc_pages.pages),
            "alloc_page_size": self.generation.has_alloc_page,
            "page_aligned_decode_alloc_lens": self.generation.has_aligned_lens,
            "req_to_token_row_width": self.generation.has_row_width or self.module.row_extras is not None,
            "row_guard_fires": self.generation.has_guard,
        }.get(surface_name, True)

    def modeled(self) -> list[str]:
        """What a run on this file still takes from the model (listed by ``targets`` and reports)."""
        out = [n for n in SURFACE if not self.in_file(n)]
        out.append("the decode path, the allocator and the scheduler; which kind of pool a deployment builds")
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
        if self.generation.page_keyword:
            out.append("the page the decode path passes as page_size (the allocator's own)")
        if self.generation.has_guard:
            out.append(f"where {ROW_GUARD}() is called (every speculative decode allocation)")
        return out

    def _arguments(self, name: str, cfg: ServingConfig, page: int | None) -> tuple[list[Any], dict[str, Any]]:
        """The arguments a file function gets, by its parameter names (see the module docstring)."""
        params = self.module.parameters[name]
        published = self.module.published
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        server_args = _server_args_parameter(params)
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

    def _call(self, name: str, cfg: ServingConfig, rt: SpecRuntime | None, page: int | None = None) -> int:
        fn = self.module.functions[name]
        published = self.module.published
        if self._raw:
            with published.bound(cfg, rt):
                args, kwargs = self._arguments(name, cfg, page)
                return fn(*args, **kwargs)  # type: ignore[no-any-return]
        where = f"{name}() of {self.module.origin}"
        try:
            with published.bound(cfg, rt):
                args, kwargs = self._arguments(name, cfg, page)
                value = fn(*args, **kwargs)
        except StandInMissing as e:
            raise StandInMissing(f"{where}: {e} (config: {cfg.short()}{_runtime_text(rt)})") from None
        except Exception as e:  # noqa: BLE001 - whatever the real code raises is the finding
            raise TargetCallError(
                f"{_raised_where(self.module, name, e)} {type(e).__name__}: {e} "
                f"(config: {cfg.short()}{_runtime_text(rt)})".replace("\n", " ")
            ) from e
        if not _integer(value):
            raise TargetCallError(
                f"{where} returned {value!r}, not an integer (config: {cfg.short()}{_runtime_text(rt)})"
            )
        return value

    def _decode_page(self, cfg: ServingConfig) -> int | None:
        """The page the decode path hands a file whose length/reserve take one: the allocator's own.

        Main's ``resolve_kv_bookkeeping_page(allocator)`` answers the
        allocator's ``page_size`` (1 for a legacy real-length allocator): the
        kind's page, ``page_size`` itself for the bare-page kinds under DCP.
        """
        return self.allocator_page_size(cfg) if self.generation.page_keyword else None

    # -- the sizing surface -------------------------------------------------

    def allocator_page_size(self, cfg: ServingConfig) -> int:
        """The page of the allocator ``cfg.kv_pool`` builds: read where SGLang builds it (``allocators``).

        ``_build_token_to_kv_pool_allocator`` for the standard, SWA and
        HiSparse kinds, the unified chain for the unified ones; the model's
        (``allocator_model.pools.pool_alloc_page``) for a kind whose building
        code was not read (a file without its configurator, 0.5.13-0.5.15).
        """
        read = self.module.alloc_pages
        if read is None or cfg.kv_pool not in read.pages:
            return self._model.allocator_page_size(cfg)
        where = f"the {cfg.kv_pool.value} allocator page, read from {read.origins[cfg.kv_pool]}"
        return self._call_slice(cfg, where, read.pages[cfg.kv_pool], "allocator page", 1)

    def alloc_page_size(self, cfg: ServingConfig) -> int:
        """The page the file's formulas round with: its own function, or page_size before 0.5.19."""
        fns = self.module.functions
        name = ALLOC_PAGE if ALLOC_PAGE in fns else ALLOC_PAGE_UPPER if ALLOC_PAGE_UPPER in fns else None
        if name is None:
            return cfg.page_size
        return self._call(name, cfg, cfg.launch_runtime)

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return self._call("get_alloc_len_per_decode", cfg, rt, self._decode_page(cfg))

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return self._call("get_alloc_reserve_per_decode", cfg, rt, self._decode_page(cfg))

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        """Sized once at launch: the launch-time spec shape (adaptive: the launch num_steps)."""
        return self._call("get_req_to_token_extra_context_len", cfg, cfg.launch_runtime)

    def req_to_token_row_width(self, cfg: ServingConfig) -> int:
        """The row of ``cfg.kv_pool``: its builder's own extra if it has one, else the sizing file's row.

        The sizing file's row is its get_req_to_token_row_width() (main:
        page-aligned), else C + extra.  Without the builders (a lone file),
        another kind's row is the model's rule for the version.
        """
        kind = cfg.kv_pool
        extras = self.module.row_extras
        if kind is not KVPool.STANDARD:
            if extras is None and kind in self.revision.narrow_rows:  # the version's builder, as modeled
                return self._model.req_to_token_row_width(cfg)
            if extras is not None and kind in extras:
                return cfg.context_len + self._call_builder(kind, cfg)
        if not self.generation.has_row_width:
            return cfg.context_len + self.req_to_token_extra_context_len(cfg)
        return self._call(ROW_WIDTH, cfg, cfg.launch_runtime)

    def _call_builder(self, kind: KVPool, cfg: ServingConfig) -> int:
        extras = self.module.row_extras
        assert extras is not None
        where = f"the {kind.value} pool builder of {self.module.builders_origin}"
        return self._call_slice(cfg, where, extras[kind], "extra_max_context_len")

    def _call_slice(self, cfg: ServingConfig, where: str, read: Callable[[], Any], what: str, least: int = 0) -> int:
        """One call of a slice of the configurator (``builders``) on ``cfg``'s launch shape.

        What the real code raises, or an answer that is not an integer of at
        least ``least``, is a finding (``TargetCallError``); a piece of SGLang
        with no stand-in is ``StandInMissing`` (exit 2).  Raw: passed through.
        """
        if self._raw:
            with self.module.published.bound(cfg, cfg.launch_runtime):
                return read()  # type: ignore[no-any-return]
        try:
            with self.module.published.bound(cfg, cfg.launch_runtime):
                value = read()
        except StandInMissing as e:
            raise StandInMissing(f"{where}: {e}") from None
        except Exception as e:  # noqa: BLE001 - what the real code raises is the finding
            raise TargetCallError(
                f"{where} raised {type(e).__name__}: {e} (config: {cfg.short()})".replace("\n", " ")
            ) from e
        if isinstance(value, Unsupplied):  # a name the slice left out (a local it does not follow): not the code's
            raise StandInMissing(f"{where}: it reads {value!r}")
        if not _integer(value) or value < least:
            raise TargetCallError(f"{where} gave {what} {value!r}, not an integer >= {least} (config: {cfg.short()})")
        return value  # type: ignore[no-any-return]

    def row_guard_fires(self, cfg: ServingConfig, max_alloc_len: int, row_width: int) -> bool:
        """Whether the file's assert_alloc_within_row_width() stops this allocation (False: no guard)."""
        if not self.generation.has_guard:
            return False
        try:
            with self.module.published.bound(cfg, cfg.launch_runtime):
                self.module.functions[ROW_GUARD](max_alloc_len=max_alloc_len, row_width=row_width)
        except AssertionError:
            return True
        except StandInMissing as e:
            raise StandInMissing(f"{ROW_GUARD}() of {self.module.origin}: {e}") from None
        except Exception as e:  # noqa: BLE001
            if self._raw:
                raise
            raise TargetCallError(
                f"{_raised_where(self.module, ROW_GUARD, e)} {type(e).__name__}: {e} "
                f"(max_alloc_len={max_alloc_len}, row_width={row_width})".replace("\n", " ")
            ) from e
        return False

    def page_aligned_decode_alloc_lens(self, lens: Sequence[tuple[int, int]], reserve: int, page: int):
        if not self.generation.has_aligned_lens:
            return self._model.page_aligned_decode_alloc_lens(lens, reserve, page)
        reqs = [
            types.SimpleNamespace(kv=types.SimpleNamespace(kv_committed_len=c, kv_allocated_len=a)) for c, a in lens
        ]
        if self._raw:
            return self.module.functions[ALIGNED_LENS](reqs, reserve=reserve, page_size=page)
        where = f"{ALIGNED_LENS}() of {self.module.origin}"
        args = f"(kv_committed_len, kv_allocated_len) {list(lens)}, reserve {reserve}, page_size {page}"
        try:
            cur, nxt, need = self.module.functions[ALIGNED_LENS](reqs, reserve=reserve, page_size=page)
        except Exception as e:  # noqa: BLE001
            raise TargetCallError(
                f"{_raised_where(self.module, ALIGNED_LENS, e)} {type(e).__name__}: {e} for {args}".replace("\n", " ")
            ) from e
        cur, nxt = list(cur), list(nxt)
        if len(cur) != len(lens) or len(nxt) != len(lens) or not all(map(_integer, cur + nxt + [need])):
            raise TargetCallError(
                f"{where} returned ({cur!r}, {nxt!r}, {need!r}), not per-request integers, for {args}"
            )
        return cur, nxt, need
