"""``RealSizing``: SGLang's own sizing file behind the model's sizing surface.

The file is compiled and run in a private namespace whose imports resolve
the accessor modules to ``stubs`` (nothing enters ``sys.modules``).  Each
surface call publishes the example's configuration, calls the real
function, and checks it returned an integer.  A real function that raises
(or returns a non-integer) raises ``TargetCallError`` naming the function
and the configuration: ``check_scenario`` reports it as a finding
(``sizing-raised``), never a crash.

API generations (detected from the file, not from its version):

    server-args  0.5.16-0.5.17  every function takes ``server_args``
    accessors    0.5.18         functions read the bags; rounding uses page_size alone
    alloc-page   0.5.19         get_alloc_page_size() = page_size * attn_dcp_size, page_aligned_decode_alloc_lens
    uno          0.5.20+        the UNO branch (L = Dmax + 1, headroom at every page)

A file without ``page_aligned_decode_alloc_lens`` uses the modeled one of
its version's revision (before 0.5.19 that arithmetic lived in the decode
path, which is the model's anyway).
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.revisions import Revision
from allocator_model.sizing import ModelSizing

from ..base import TargetCallError, TargetError
from .stubs import Published, accessor_modules, private_builtins

REQUIRED = ("get_alloc_len_per_decode", "get_alloc_reserve_per_decode", "get_req_to_token_extra_context_len")
ALLOC_PAGE = "get_alloc_page_size"
ALIGNED_LENS = "page_aligned_decode_alloc_lens"


@dataclass(frozen=True)
class Generation:
    name: str
    releases: str
    takes_server_args: bool
    has_alloc_page: bool
    has_aligned_lens: bool
    has_uno: bool

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
    takes_server_args: dict[str, bool]  # per function: pass it the server_args object


def _parameters(fn: Callable) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 0


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
    takes_server_args = any(_parameters(functions[n]) for n in REQUIRED)
    has_alloc_page = ALLOC_PAGE in functions
    has_aligned = ALIGNED_LENS in functions
    has_uno = any("is_uno" in _names(fn) for fn in functions.values())
    if takes_server_args:
        name, releases = "server-args", "0.5.16-0.5.17"
    elif has_uno:
        name, releases = "uno", "0.5.20+"
    elif has_alloc_page:
        name, releases = "alloc-page", "0.5.19"
    else:
        name, releases = "accessors", "0.5.18"
    return Generation(name, releases, takes_server_args, has_alloc_page, has_aligned, has_uno)


def load_sizing_module(source: str, origin: str, filename: str) -> SizingModule:
    """Run the file in a private namespace; TargetError (one line) if it is not a usable sizing file."""
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise TargetError(f"{origin}: syntax error at line {e.lineno}: {e.msg}") from None
    except ValueError as e:  # null bytes
        raise TargetError(f"{origin}: not Python source ({e})") from None
    published = Published()
    namespace: dict[str, Any] = {
        "__name__": "kvrow_fuzz_sglang_sizing",
        "__file__": filename,
        "__builtins__": private_builtins(accessor_modules(published)),
    }
    try:
        exec(code, namespace)  # noqa: S102 - running the target is the point
    except ImportError as e:
        raise TargetError(f"{origin}: import failed: {e}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 - any failure at import is a broken file
        raise TargetError(f"{origin} raised {type(e).__name__} at import: {e}".splitlines()[0]) from None
    functions = {n: f for n, f in namespace.items() if callable(f) and n in REQUIRED + (ALLOC_PAGE, ALIGNED_LENS)}
    missing = [n for n in REQUIRED if n not in functions]
    if missing:
        raise TargetError(
            f"{origin} has no {missing[0]}(): not an allocation_sizing.py-shaped file (needs {', '.join(REQUIRED)})"
        )
    takes = {n: _parameters(f) > 0 for n, f in functions.items()}
    return SizingModule(origin, filename, functions, published, detect_generation(functions), takes)


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


class RealSizing:
    """The sizing surface (same as ``ModelSizing``) answered by a loaded SGLang sizing file."""

    def __init__(self, module: SizingModule, revision: Revision):
        self.module = module
        self.revision = revision
        self._model = ModelSizing(revision)  # only for what the file does not define

    @property
    def generation(self) -> Generation:
        return self.module.generation

    def in_file(self, surface_name: str) -> bool:
        """Whether a surface function is answered by the file (else by the model of its version)."""
        return {
            "alloc_page_size": self.generation.has_alloc_page,
            "page_aligned_decode_alloc_lens": self.generation.has_aligned_lens,
        }.get(surface_name, True)

    def _call(self, name: str, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        fn = self.module.functions[name]
        published = self.module.published
        where = f"{name}() of {self.module.origin}"
        try:
            with published.bound(cfg, rt):
                value = fn(published.read("server_args")) if self.module.takes_server_args[name] else fn()
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

    # -- the sizing surface -------------------------------------------------

    def alloc_page_size(self, cfg: ServingConfig) -> int:
        """The page the file's formulas round with: get_alloc_page_size(), or page_size before 0.5.19."""
        if not self.generation.has_alloc_page:
            return cfg.page_size
        return self._call(ALLOC_PAGE, cfg, cfg.launch_runtime)

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return self._call("get_alloc_len_per_decode", cfg, rt)

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        return self._call("get_alloc_reserve_per_decode", cfg, rt)

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        """Sized once at launch: the launch-time spec shape (adaptive: the launch num_steps)."""
        return self._call("get_req_to_token_extra_context_len", cfg, cfg.launch_runtime)

    def page_aligned_decode_alloc_lens(self, lens: Sequence[tuple[int, int]], reserve: int, page: int):
        if not self.generation.has_aligned_lens:
            return self._model.page_aligned_decode_alloc_lens(lens, reserve, page)
        reqs = [
            types.SimpleNamespace(kv=types.SimpleNamespace(kv_committed_len=c, kv_allocated_len=a)) for c, a in lens
        ]
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
