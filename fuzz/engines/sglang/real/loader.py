"""Loading SGLang's sizing file: its functions, its API generation, the builders read beside it.

The file is compiled and run in a private namespace whose imports resolve
every ``sglang`` module to a stand-in (``stubs``; nothing enters
``sys.modules``).  ``real.RealSizing`` answers the declared surface from what
is loaded here, behind its checking wrapper.

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

import inspect
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from allocator_model.pools import KVPool
from allocator_model.surface import ALIGNED_LENS, ROW_GUARD, SIZING_ALLOC_PAGE, entries
from fuzz.targets.base import TargetError

from .allocators import AllocPages, Source, extract_alloc_pages
from .boundary import SIZING_SECONDS
from .builders import RowExtra, builder_lines, extract_row_extras
from .private_imports import StandIns, private_builtins
from .runtime.bounds import SGLangTimeout, bounded
from .stubs import Published, StandInMissing


def _no_requests(kv_committed_len: int, kv_allocated_len: int) -> Any:
    raise TargetError("the request stand-in of the target's release was not set (resolve sets it)")


REQUIRED = ("get_alloc_len_per_decode", "get_alloc_reserve_per_decode", "get_req_to_token_extra_context_len")
ALLOC_PAGE_FUNCTIONS = SIZING_ALLOC_PAGE.functions  # 0.5.19+: get_alloc_page_size; main: ..._upper_bound
ALIGNED_LENS_FUNCTION = ALIGNED_LENS.functions[0]
ROW_WIDTH = "get_req_to_token_row_width"
CANDIDATE_PAGES = "get_candidate_alloc_page_sizes"
ROW_GUARD_FUNCTION = ROW_GUARD.functions[0]


def wanted_functions() -> frozenset[str]:
    """The file's functions the loader keeps: every one a surface entry names, and what the generation reads."""
    return frozenset(f for e in entries() for f in e.functions) | {ROW_WIDTH, CANDIDATE_PAGES}


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
    # A request as the file's page_aligned_decode_alloc_lens reads it, from (kv_committed_len, kv_allocated_len).
    requests: Callable[[int, int], Any] = _no_requests  # resolve: ``runtime.request`` of the target's release
    # Where SGLang's own files around the sizing module are (a wheel, a checkout root, "installed"): the write
    # path runs from there (``scenario.SGLangPath``); None: the sizing file stands alone.
    tree_source: str | None = None

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
        return {n: server_args_parameter(p) is not None for n, p in self.parameters.items()}


def _parameters(fn: Callable) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return {}


def server_args_parameter(params: dict[str, inspect.Parameter]) -> inspect.Parameter | None:
    """The parameter that receives server_args: so named, or else a first positional one the loader cannot name."""
    if SERVER_ARGS in params:
        return params[SERVER_ARGS]
    first = next(iter(params.values()), None)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if first is not None and first.kind in positional and first.name not in (MODEL_CONFIG, PAGE_SIZE):
        return first
    return None


def _names(fn: Callable) -> set[str]:
    names: set[str] = set()
    stack = [fn.__code__] if isinstance(fn, types.FunctionType) else []
    while stack:  # nested functions' code objects too
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def detect_generation(functions: dict[str, Callable]) -> Generation:
    """The API generation, from which functions exist and what their signatures take."""
    params = {n: _parameters(f) for n, f in functions.items()}
    takes_server_args = any(server_args_parameter(params[n]) is not None for n in REQUIRED)
    has_alloc_page = any(f in functions for f in ALLOC_PAGE_FUNCTIONS)
    has_aligned = ALIGNED_LENS_FUNCTION in functions
    has_uno = any("is_uno" in _names(fn) for fn in functions.values())
    page_keyword = PAGE_SIZE in params["get_alloc_reserve_per_decode"]
    has_row_width = ROW_WIDTH in functions
    flags = dict(
        page_keyword=page_keyword,
        has_row_width=has_row_width,
        has_candidate_pages=CANDIDATE_PAGES in functions,
        has_guard=ROW_GUARD_FUNCTION in functions,
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
    server_args = server_args_parameter(params)
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
    except (MemoryError, RecursionError) as e:  # nesting past the compiler's stack: no sizing file
        raise TargetError(f"{origin}: does not compile ({type(e).__name__}: nested too deep)") from None
    published = Published()
    stand_ins = StandIns(published)
    namespace: dict[str, Any] = {
        "__name__": "kvrow_fuzz_sglang_sizing",
        "__file__": filename,
        "__builtins__": private_builtins(stand_ins),
    }
    try:
        with bounded(
            f"importing {origin}", SIZING_SECONDS, lambda name: "the sizing file" if name == filename else None
        ):
            exec(code, namespace)  # noqa: S102 - running the target is the point
    except SGLangTimeout as e:
        raise TargetError(f"{e}: a sizing file whose import never ends") from None
    except StandInMissing as e:
        raise TargetError(f"{origin} at import: {e}") from None
    except ImportError as e:
        raise TargetError(f"{origin}: import failed: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure at import is a broken file
        raise TargetError(f"{origin} raised {type(e).__name__} at import: {e}".splitlines()[0]) from None
    functions: dict[str, Callable[..., Any]] = {
        n: f for n, f in namespace.items() if n in wanted_functions() and isinstance(f, types.FunctionType)
    }
    missing = [n for n in REQUIRED if n not in functions]
    if missing:
        raise TargetError(
            f"{origin} has no {missing[0]}(): not an allocation_sizing.py-shaped file (needs {', '.join(REQUIRED)})"
        )
    parameters = {n: _parameters(f) for n, f in functions.items()}
    for n, p in parameters.items():
        if n not in (ALIGNED_LENS_FUNCTION, ROW_GUARD_FUNCTION):  # those two are called with their own arguments
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
