"""The sizing surface: every SGLang function (or number) a target answers for, declared once.

An ``Entry`` names one thing the tool asks a target: what it mirrors in
SGLang, since which release, how it is called and what it must return, and
the model's formula for it.  Two kinds of entry:

    SIZING    numbers in, numbers out (the sizing module, a pool builder's row, an allocator's page)
    STATEFUL  a batch or a pool in, tensor writes out (SGLang's decode write path)

The model answers every entry (``sizing.ModelSizing``: each entry's formula);
a real target answers each entry from SGLang's own code, or
declares it absent from its release, and then the model of its version
answers and the run lists the entry as modeled (``Surface.source``).  A
caller asks ``surface.call(ENTRY, *args)`` (or the typed method of the same
name); nothing probes a target for what it has.

Adding an SGLang function is one ``declare(Entry(...))`` here and its model
formula; the real targets' checking wrapper, ``fidelity`` and the twins test
pick it up from ``SURFACE`` (``tests/test_surface.py`` shows it with a dummy).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fuzz.common.compat import StrEnum

from .config import ServingConfig, SpecRuntime
from .pools import KVPool, pool_alloc_page

Lens = tuple[list[int], list[int], int]  # page_aligned_decode_alloc_lens: (cur, nxt, slots needed)


class EntryKind(StrEnum):
    SIZING = "sizing"  # numbers in, numbers out
    STATEFUL = "stateful"  # a batch or pool in, tensor writes out (the write path)


class Shape(StrEnum):
    """How an entry is called (what its arguments are)."""

    LAUNCH = "cfg"  # the launch configuration
    RUNTIME = "cfg, rt"  # the launch configuration and the batch's run-time spec shape (None: no speculation)
    GUARD = "cfg, max_alloc_len, row_width"  # a guard asked about one allocation end
    LENS = "lens, reserve, page"  # per-request (kv_committed_len, kv_allocated_len), the reserve, the page
    # A decode scenario (``allocator_model.scenario.DecodeScenario``) run on a fresh pool; ``trace``: record
    # what ran (SGLang's functions entered, its invariant checker), which costs time.
    SCENARIO = "scenario, trace"


class Result(StrEnum):
    """What an entry must return (the checking wrapper of a real target holds it to this)."""

    COUNT = "an integer"  # >= Entry.least
    FLAG = "a bool"
    LENS = "(cur, nxt, slots needed), one cur and nxt per request"
    RUN = "the scenario's run: every row write and what changed outside it (``ScenarioRun``)"


class Provenance(StrEnum):
    """Where a target's answer to an entry comes from."""

    MODEL = "the model"  # a model target: every entry
    READ = "read from the target"  # SGLang's own code answered
    MODELED = "modeled"  # the target's release lacks it, or its code was not read: the model of its version


@dataclass(frozen=True, eq=False)
class Entry:
    """One declared entry of the surface (see the module docstring)."""

    name: str
    mirrors: str  # what it stands for in SGLang: file: function (or builder / allocator attribute)
    since: str  # the first release that has it
    kind: EntryKind
    shape: Shape
    result: Result
    model: Callable[..., Any]  # the model's formula: model(sizing: ModelSizing, *args)
    least: int = 0  # Result.COUNT: the smallest valid answer
    compared: bool = True  # fidelity compares the real answer with the model's
    # The sizing module's functions that answer it directly, newest name first: a real target calls the first
    # its file defines (arguments by parameter name, ``Shape``); none: the target answers it another way, or
    # the model of its version does.
    functions: tuple[str, ...] = ()
    # The tensor evaluation of ``model`` over a launch grid (``twin(grid, revision)``: one answer per
    # configuration), held equal to it by the twins test (``allocator_model.twins.surface_twins``).
    twin: Callable[..., Any] | None = None

    def __repr__(self) -> str:
        return f"Entry({self.name})"


SURFACE: dict[str, Entry] = {}


def declare(entry: Entry) -> Entry:
    """Add ``entry`` to the surface (its name unique)."""
    if entry.name in SURFACE:
        raise ValueError(f"surface entry {entry.name!r} is declared twice")
    SURFACE[entry.name] = entry
    return entry


@contextlib.contextmanager
def declared(entry: Entry) -> Iterator[Entry]:
    """``entry`` on the surface for the duration (a test's dummy entry)."""
    declare(entry)
    try:
        yield entry
    finally:
        del SURFACE[entry.name]


def entries(kind: EntryKind | None = None) -> tuple[Entry, ...]:
    """The declared entries in declaration order (reports list them so), of one kind if given."""
    return tuple(e for e in SURFACE.values() if kind is None or e.kind is kind)


ALLOCATOR_PAGE_SIZE = declare(
    Entry(
        "allocator_page_size",
        "the page_size of the allocator the kind's builder constructs (mem_cache/kv_cache_configurator.py: "
        "_build_token_to_kv_pool_allocator; 0.5.13-0.5.15 model_executor/model_runner_kv_cache_mixin.py)",
        "0.5.13",
        EntryKind.SIZING,
        Shape.LAUNCH,
        Result.COUNT,
        lambda m, cfg: m.allocator_page_size(cfg),
        least=1,
        twin=lambda g, revision: pool_alloc_page(g.kv_pool, g.page_size, g.attn_dcp_size),
    )
)
SIZING_ALLOC_PAGE = declare(
    Entry(
        "alloc_page_size",
        "mem_cache/allocation_sizing.py: get_alloc_page_size (the page the sizing formulas round with)",
        "0.5.19",
        EntryKind.SIZING,
        Shape.LAUNCH,
        Result.COUNT,
        lambda m, cfg: m.alloc_page_size(cfg),
        least=1,
        functions=("get_alloc_page_size", "get_alloc_page_size_upper_bound"),
        twin=lambda g, revision: g.page_size * g.attn_dcp_size if revision.alloc_page_with_dcp else g.page_size,
    )
)
ALLOC_LEN_PER_DECODE = declare(
    Entry(
        "alloc_len_per_decode",
        "mem_cache/allocation_sizing.py: get_alloc_len_per_decode (0.5.13-0.5.15 mem_cache/common.py)",
        "0.5.13",
        EntryKind.SIZING,
        Shape.RUNTIME,
        Result.COUNT,
        lambda m, cfg, rt: m.alloc_len_per_decode(cfg, rt),
        least=1,
        functions=("get_alloc_len_per_decode",),
    )
)
ALLOC_RESERVE_PER_DECODE = declare(
    Entry(
        "alloc_reserve_per_decode",
        "mem_cache/allocation_sizing.py: get_alloc_reserve_per_decode (0.5.13-0.5.15 mem_cache/common.py)",
        "0.5.13",
        EntryKind.SIZING,
        Shape.RUNTIME,
        Result.COUNT,
        lambda m, cfg, rt: m.alloc_reserve_per_decode(cfg, rt),
        least=1,
        functions=("get_alloc_reserve_per_decode",),
    )
)
EXTRA_CONTEXT_LEN = declare(
    Entry(
        "req_to_token_extra_context_len",
        "mem_cache/allocation_sizing.py: get_req_to_token_extra_context_len (0.5.13-0.5.15 mem_cache/common.py)",
        "0.5.13",
        EntryKind.SIZING,
        Shape.LAUNCH,
        Result.COUNT,
        lambda m, cfg: m.req_to_token_extra_context_len(cfg),
        functions=("get_req_to_token_extra_context_len",),
    )
)
ROW_WIDTH = declare(
    Entry(
        "req_to_token_row_width",
        "the row the kind's pool builder sizes: context_len + extra_max_context_len (kv_cache_configurator.py: "
        "_build_req_to_token_pool, _init_unified_*_pools; main: allocation_sizing.py get_req_to_token_row_width)",
        "0.5.13",
        EntryKind.SIZING,
        Shape.LAUNCH,
        Result.COUNT,
        lambda m, cfg: m.req_to_token_row_width(cfg),
        least=1,
    )
)
ROW_GUARD = declare(
    Entry(
        "row_guard_fires",
        "main's mem_cache/allocation_sizing.py: assert_alloc_within_row_width (True: it stops the allocation)",
        "main",
        EntryKind.SIZING,
        Shape.GUARD,
        Result.FLAG,
        lambda m, cfg, max_alloc_len, row_width: m.row_guard_fires(cfg, max_alloc_len, row_width),
        compared=False,  # no modeled revision has it: the model answers False
        functions=("assert_alloc_within_row_width",),
    )
)
ALIGNED_LENS = declare(
    Entry(
        "page_aligned_decode_alloc_lens",
        "mem_cache/allocation_sizing.py: page_aligned_decode_alloc_lens (before 0.5.19 inline in the decode path)",
        "0.5.19",
        EntryKind.SIZING,
        Shape.LENS,
        Result.LENS,
        lambda m, lens, reserve, page: m.page_aligned_decode_alloc_lens(lens, reserve, page),
        functions=("page_aligned_decode_alloc_lens",),
    )
)


def _model_decode_steps(m: Any, scenario: Any, trace: bool = False) -> Any:
    """The model's write path over a scenario (``model_sizing.ModelSizing.decode_steps``)."""
    return m.decode_steps(scenario)


DECODE_STEPS = declare(
    Entry(
        "decode_step",
        "the decode step's write path: speculative/eagle_utils.py eagle_prepare_for_decode, the DFLASH/DSPARK and "
        "UNO prepare_for_decode, mem_cache/allocation.py alloc_for_decode (0.5.13-0.5.14: eagle_info_v2.py's "
        "mixin) -> alloc_for_spec_decode -> the allocator -> assign_req_to_token_pool",
        "0.5.13",
        EntryKind.STATEFUL,
        Shape.SCENARIO,
        Result.RUN,
        _model_decode_steps,
        compared=False,  # not a number: the write path is compared step by step (``fuzz.writepath``)
    )
)


class Surface:
    """A target's answers to the declared entries: ``call``, and a typed method per built-in entry.

    ``sizing.ModelSizing`` answers from the model; ``fuzz.engines.sglang.real.RealSizing``
    from SGLang's code behind a checking wrapper.  The rest says where the
    answers come from, for reports (never to decide what to call).
    """

    def call(self, entry: Entry, *args: Any) -> Any:
        raise NotImplementedError

    def source(self, entry: Entry) -> Provenance:
        return Provenance.MODEL

    def modeled(self) -> list[str]:
        """What a run on this target still takes from the model, in words (a model target: nothing to list)."""
        return []

    def by_design(self, cfg: ServingConfig | None = None) -> dict[str, str]:
        """Entries on which the target differs from every modeled revision by design (name -> why), for
        ``cfg`` alone when given (fidelity does not compare them)."""
        return {}

    def plain(self) -> Surface | None:
        """The same answers without the checking wrapper (prove's traced calls), or None: it has none."""
        return None

    def builder_location(self, kind: KVPool) -> tuple[str, str, int] | None:
        """(file, Class.method, def line) of the builder that sizes ``kind``'s rows, where it was read."""
        return None

    def api_generation(self) -> str | None:
        """The API generation of the target's sizing module (``accessors``, ``uno``, ``row-width``...)."""
        return None

    def kv_allocator(self, cfg: ServingConfig, num_tokens: int, page_size: int) -> Any:
        """The token-to-KV allocator a request lifecycle runs on (an ``allocator.OwnershipAllocator``): the
        model's, or a release's own class behind the same page-ownership bookkeeping
        (``fuzz.engines.sglang.real.allocator_adapter``)."""
        raise NotImplementedError

    def kv_allocator_takes(self, page_size: int) -> bool:
        """Whether ``kv_allocator`` runs at allocator page ``page_size``: the model's takes every page; a release's
        own kernels may not, and a lifecycle draws only pages its allocator runs (never one to discard)."""
        return True

    # -- the built-in entries, typed ---------------------------------------------------------------

    # (No int() or bool() here: prove hands the plain surface traced values, which stay traced.)

    def allocator_page_size(self, cfg: ServingConfig) -> int:
        value: int = self.call(ALLOCATOR_PAGE_SIZE, cfg)
        return value

    def alloc_page_size(self, cfg: ServingConfig) -> int:
        value: int = self.call(SIZING_ALLOC_PAGE, cfg)
        return value

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        value: int = self.call(ALLOC_LEN_PER_DECODE, cfg, rt)
        return value

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int:
        value: int = self.call(ALLOC_RESERVE_PER_DECODE, cfg, rt)
        return value

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int:
        value: int = self.call(EXTRA_CONTEXT_LEN, cfg)
        return value

    def req_to_token_row_width(self, cfg: ServingConfig) -> int:
        value: int = self.call(ROW_WIDTH, cfg)
        return value

    def row_guard_fires(self, cfg: ServingConfig, max_alloc_len: int, row_width: int) -> bool:
        value: bool = self.call(ROW_GUARD, cfg, max_alloc_len, row_width)
        return value

    def page_aligned_decode_alloc_lens(self, lens: Sequence[tuple[int, int]], reserve: int, page: int) -> Lens:
        cur, nxt, need = self.call(ALIGNED_LENS, lens, reserve, page)
        return list(cur), list(nxt), need
