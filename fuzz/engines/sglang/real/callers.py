"""Plain callers of SGLang's code and how their messages name a call: what ``RealSizing`` wraps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.surface import Entry, Shape

from .loader import SizingModule


class Modeled(Exception):
    """A plain caller's way to say: this call is not the target's to answer (the model of its version does)."""


@dataclass(frozen=True)
class Caller:
    """One entry's plain caller: binds the configuration, calls SGLang's code, returns what it returned."""

    where: str | Callable[..., str]  # how messages name it (of the call's arguments, when it depends on them)
    run: Callable[..., Any]
    function: str | None = None  # the file's function, to name the inner one that raised (``raised_where``)
    what: str | None = None  # a slice's quantity ("allocator page"), in its messages

    def named(self, args: tuple[Any, ...]) -> str:
        return self.where(*args) if callable(self.where) else self.where


def runtime_text(rt: SpecRuntime | None) -> str:
    return "" if rt is None else f", run-time num_steps={rt.num_steps} num_draft_tokens={rt.num_draft_tokens}"


def context(entry: Entry, args: tuple[Any, ...]) -> str:
    """The arguments of a call as its messages state them."""
    if entry.shape is Shape.SCENARIO:
        return f"(config: {args[0].config.short()}, case {args[0].describe()})"
    if entry.shape is Shape.LENS:
        lens, reserve, page = args
        return f"for (kv_committed_len, kv_allocated_len) {list(lens)}, reserve {reserve}, page_size {page}"
    if entry.shape is Shape.GUARD:
        _, max_alloc_len, row_width = args
        return f"(max_alloc_len={max_alloc_len}, row_width={row_width})"
    cfg: ServingConfig = args[0]
    rt = args[1] if entry.shape is Shape.RUNTIME else None
    return f"(config: {cfg.short()}{runtime_text(rt)})"


def raised_where(module: SizingModule, caller: Caller, args: tuple[Any, ...], exc: BaseException) -> str:
    """'f() of ORIGIN raised', naming the file's innermost function in the traceback when it is not ``f``."""
    where = caller.named(args)
    if caller.function is None:
        return f"{where} raised"
    inner = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == module.filename:
            inner = (tb.tb_frame.f_code.co_name, tb.tb_lineno)
        tb = tb.tb_next
    if inner and inner[0] != caller.function:
        return f"{where} raised in {inner[0]}() line {inner[1]}"
    return where + (f" raised (line {inner[1]})" if inner else " raised")


def integer(value: Any) -> bool:
    """An int that is not a bool: what every sizing entry returns."""
    return isinstance(value, int) and not isinstance(value, bool)
