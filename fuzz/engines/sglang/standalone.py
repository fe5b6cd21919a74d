"""A builder-row cause as a regression test in SGLang's own layout, calling SGLang's functions only.

The advisory's first test replays the case with kvrow-fuzz; this one is for
SGLang's suite (``test/registered/unit/mem_cache/``): unittest with
``CustomTestCase`` and ``register_cpu_ci``, the deployment published with
``get_context().override_server_args`` and ``get_parallel().override``, a
configurator made with ``__new__`` and only what the builders read before
their pool factory, the factory replaced by a capture (SGLang's own tests of
the configurator do each of these). It asserts, per builder, that the row it
asks the factory for (``model_context_len + extra_max_context_len``, as the
factory sizes it) is at least ``context_len +
get_req_to_token_extra_context_len()``, and that the page-aligned decode write
of a request up to the context limit (``page_aligned_decode_alloc_lens``) ends
inside it.

Everything in the text comes from values: the builders' qualified names and
their module (the cause's ``code``; a builder whose module or class is not a
plain ASCII dotted name is no builder here), the releases, the deployment (the
example finding's config, spelled as ``launch_flags`` spells it), the cause's
title and fix. Text goes in only where it cannot become code: the docstring's
prose made printable with its backslashes and quotes escaped (``_docstring``),
the flags' comment made printable (one line each). None (no test) for a cause
that no unified builder's row carries. Its text imports nothing of kvrow-fuzz
(``tests/test_advisory.py``).
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass

from allocator_model.config import ServingConfig
from allocator_model.pools import KVPool
from fuzz.common.text import printable
from fuzz.engines.sglang.launch import launch_flags
from fuzz.findings.cause import Cause

DIRECTORY = "test/registered/unit/mem_cache"
# Where SGLang's unified pool factories live; each builder imports its own from here when it runs.
FACTORY_MODULE = "sglang.srt.mem_cache.unified_memory_pool"
SOURCE_ROOT = "python/"  # SGLang's repository keeps the package under python/
# Flags the test does not publish as ServerArgs fields: the model (the test's configurator has none), DCP (a
# parallel value: get_parallel().override), the adaptive file (a path the test does not have).
NOT_PUBLISHED = ("model_path", "dcp_size", "speculative_adaptive_config")
NO_BREAK = "\u00a0"  # textwrap splits on ASCII whitespace only
DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # a module or class, as imported


@dataclass(frozen=True)
class Builder:
    module: str  # sglang.srt.mem_cache.kv_cache_configurator
    cls: str  # KVCacheConfigurator
    method: str  # _init_unified_mamba_pools


@dataclass(frozen=True)
class Standalone:
    path: str  # in an SGLang checkout
    text: str


def builders(cause: Cause) -> list[Builder]:
    """The unified pool builders (methods that size their own row) the cause lives in, in its order."""
    from fuzz.engines.sglang.real.builders import BUILDERS

    out = []
    for path, function in cause.code:
        cls, _, method = function.rpartition(".")
        if not cls or BUILDERS.get(method, KVPool.STANDARD) is KVPool.STANDARD:
            continue
        if not path.startswith(SOURCE_ROOT) or not path.endswith(".py"):
            continue
        module = path.removeprefix(SOURCE_ROOT).removesuffix(".py").replace("/", ".")
        if DOTTED_NAME.fullmatch(module) and DOTTED_NAME.fullmatch(cls):
            out.append(Builder(module, cls, method))
    return list(dict.fromkeys(out))


def server_args(cfg: ServingConfig) -> dict[str, int | str | bool]:
    """The deployment as ServerArgs fields: each launch flag's field name (SGLang derives the flag from it)."""
    flags = launch_flags(cfg)
    out: dict[str, int | str | bool] = {}
    i = 0
    while i < len(flags):
        name = flags[i].removeprefix("--").replace("-", "_")
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            value, i = flags[i + 1], i + 2
            out[name] = int(value) if value.isdigit() else value
        else:
            out[name], i = True, i + 1
    return {k: v for k, v in out.items() if k not in NOT_PUBLISHED}


def _stem(found: list[Builder]) -> str:
    """The words the builders' names share: ``_init_unified_mamba_pools``, ``_init_unified_mamba_swa_pools`` ->
    ``unified_mamba``."""
    words = [b.method.removeprefix("_init_").removesuffix("_pools").split("_") for b in found]
    shared = []
    for column in zip(*words, strict=False):
        if len(set(column)) != 1:
            break
        shared.append(column[0])
    return "_".join(shared or ["unified"])


def _literal(value: int | str | bool) -> str:
    return repr(value) if isinstance(value, (bool, int)) else json.dumps(value)


def _paragraph(text: str, width: int = 79) -> str:
    """``text`` filled to ``width``, never breaking a `code span` or a sum (``C + 4 + D``) across lines."""
    keep = NO_BREAK
    spans = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(" ", keep), text).replace(" + ", f"{keep}+{keep}")
    filled = textwrap.fill(spans, width, break_on_hyphens=False, break_long_words=False)
    return filled.replace(keep, " ")


def _docstring(text: str) -> str:
    """``text`` as it can sit inside a triple-quoted docstring and stay prose: made printable (one line), each
    backslash doubled and each double quote escaped, so nothing in it can end the string or escape a character."""
    return printable(text).replace("\\", "\\\\").replace('"', '\\"')


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _flag_lines(cfg: ServingConfig, width: int = 88) -> list[str]:
    """The deployment's launch flags as comment lines, a flag and its value never split."""
    flags = launch_flags(cfg)
    units: list[str] = []
    for flag in flags:
        if units and not flag.startswith("--"):
            units[-1] += " " + flag
        else:
            units.append(flag)
    units = [u for u in units if not u.startswith("--model-path")]
    lines, line = [], "# The deployment:"
    for unit in (printable(u, 200) for u in units):
        if len(line) + 1 + len(unit) > width:
            lines.append(line)
            line = "#"
        line += " " + unit
    return [*lines, line]


def standalone_test(cause: Cause, releases: list[str], cfg: ServingConfig) -> Standalone | None:
    """The test for ``cause`` on ``releases`` at the deployment ``cfg`` (None: no unified builder carries it,
    or its builders are not methods of one class)."""
    found = builders(cause)
    if not found or len({(b.module, b.cls) for b in found}) != 1:
        return None
    module, cls = found[0].module, found[0].cls
    package, _, leaf = module.rpartition(".")
    alias = "".join(word[:1] for word in leaf.split("_"))
    stem = _stem(found)
    path = f"{DIRECTORY}/test_{stem}_row_width.py"
    names = _and([f"`{cls}.{b.method}`" for b in found])
    summary = (
        f"BUG REGRESSION ({', '.join(releases)}): {cause.title}. The pool factory makes each row "
        "`model_context_len + extra_max_context_len` wide, and a decode step writes the row out to the "
        "page-aligned end `page_aligned_decode_alloc_lens` returns, so a row short of "
        "`context_len + get_req_to_token_extra_context_len()` lets a request near the context limit write "
        f"into the next request's row. Fails while {names} hand the factory less; passes once "
        f"{cause.fix.rstrip('.')}."
    )
    published = "\n".join(f"    {k}={_literal(v)}," for k, v in server_args(cfg).items())
    methods = "\n\n".join(
        f"    def test_{b.method.lstrip('_')}_row_holds_the_decode_write(self):\n"
        f'        self._assert_row_holds_the_decode_write("{b.method}")'
        for b in found
    )
    return Standalone(
        path,
        _TEMPLATE.format(
            headline=f"The {stem.replace('_', ' ')} pool builders' req_to_token rows must hold the decode write.",
            summary=_paragraph(_docstring(summary)),
            path=path,
            package=package,
            leaf=leaf,
            alias=alias,
            factory_package=FACTORY_MODULE.rpartition(".")[0],
            factory_leaf=FACTORY_MODULE.rpartition(".")[2],
            deployment="\n".join(_flag_lines(cfg)),
            context_len=cfg.context_len,
            published=published,
            attn_dcp_size=cfg.attn_dcp_size,
            max_running_requests=cfg.max_running_requests,
            cls=cls,
            test_class="Test" + "".join(w.capitalize() for w in stem.split("_")) + "RowWidth",
            methods=methods,
        ),
    )


_TEMPLATE = '''\
"""{headline}

{summary}

    python -m pytest {path} -v
"""

import inspect
import unittest
from contextlib import ExitStack
from types import SimpleNamespace
from unittest.mock import patch

from {package} import {leaf} as {alias}
from {factory_package} import {factory_leaf}
from sglang.srt.mem_cache.allocation_sizing import (
    get_alloc_page_size,
    get_alloc_reserve_per_decode,
    get_req_to_token_extra_context_len,
    page_aligned_decode_alloc_lens,
)
from sglang.srt.runtime_context import get_context, get_parallel
from sglang.test.ci.ci_register import register_cpu_ci
from sglang.test.test_utils import CustomTestCase

register_cpu_ci(est_time=10, suite="base-a-test-cpu")

{deployment}
CONTEXT_LEN = {context_len}
SERVER_ARGS = dict(
{published}
)
ATTN_DCP_SIZE = {attn_dcp_size}
MAX_RUNNING_REQUESTS = {max_running_requests}
# The pool's token budget: the captured factory never reads it.
POOL_TOKENS = 1 << 16


class _Captured(Exception):
    """Sentinel carrying the keyword arguments a builder handed its pool factory."""

    def __init__(self, kwargs):
        super().__init__("the unified pool factory was reached")
        self.kwargs = kwargs


def _capture(**kwargs):
    raise _Captured(kwargs)


class _KV:
    def __init__(self, committed_len: int):
        self.kv_committed_len = committed_len
        self.kv_allocated_len = committed_len


class _Req:
    def __init__(self, committed_len: int):
        self.kv = _KV(committed_len)


def _configurator():
    """A target-worker configurator: what the builders read before the factory call."""
    cfg = {alias}.{cls}.__new__({alias}.{cls})
    cfg.device = "cpu"
    cfg.kv_cache_dtype = None
    cfg.page_size = SERVER_ARGS["page_size"]
    cfg.is_draft_worker = False
    cfg.use_mla_backend = False
    cfg.is_hybrid_swa = True  # a tri-pool builder asserts it; a two-pool one ignores it
    cfg.forward_stream = None
    cfg.mambaish_config = SimpleNamespace(
        mamba2_cache_params=SimpleNamespace(layers=[0]),
        full_attention_layer_ids=[1],
    )
    cfg.layer_info = SimpleNamespace(
        start_layer=0,
        end_layer=2,
        swa_attention_layer_ids=[0],
        full_attention_layer_ids=[1],
    )
    cfg.model_config = SimpleNamespace(
        context_len=CONTEXT_LEN,
        head_dim=8,
        v_head_dim=8,
        sliding_window_size=None,
        get_num_kv_heads=lambda *_: 1,
    )
    return cfg


# Helpers a builder calls before its factory, answered without a model.
_HELPERS = dict(
    _fused_draft_for_mamba_factory=lambda self: None,
    _unified_swa_head_geometry=lambda self: SimpleNamespace(
        head_num=1,
        head_dim=8,
        v_head_dim=8,
        swa_head_num=1,
        swa_head_dim=8,
        swa_v_head_dim=8,
    ),
)


def _row_width(builder: str) -> int:
    """The req_to_token row width ``builder`` asks its pool factory for."""
    method = getattr({alias}.{cls}, builder)
    sizes = dict(
        max_num_reqs=MAX_RUNNING_REQUESTS,
        max_total_num_tokens=POOL_TOKENS,
        full_max_total_num_tokens=POOL_TOKENS,
        swa_max_total_num_tokens=POOL_TOKENS,
    )
    wanted = inspect.signature(method).parameters
    with ExitStack() as stack:
        for name in dir({factory_leaf}):
            if name.startswith("init_unified_"):
                stack.enter_context(patch.object({factory_leaf}, name, _capture))
        for name, helper in _HELPERS.items():
            if hasattr({alias}.{cls}, name):
                stack.enter_context(patch.object({alias}.{cls}, name, helper))
        try:
            method(_configurator(), **{{k: v for k, v in sizes.items() if k in wanted}})
        except _Captured as caught:
            kwargs = caught.kwargs
            return kwargs["model_context_len"] + kwargs["extra_max_context_len"]
    raise AssertionError(f"{{builder}} never called a unified pool factory")


class {test_class}(CustomTestCase):
    def _assert_row_holds_the_decode_write(self, builder: str):
        with (
            get_context().override_server_args(**SERVER_ARGS),
            get_parallel().override(attn_dcp_size=ATTN_DCP_SIZE),
        ):
            row = _row_width(builder)
            extra = get_req_to_token_extra_context_len()
            self.assertGreaterEqual(
                row,
                CONTEXT_LEN + extra,
                f"{{builder}}: row {{row}} < context_len {{CONTEXT_LEN}} + "
                f"get_req_to_token_extra_context_len() {{extra}}",
            )
            page_size = get_alloc_page_size()
            reserve = get_alloc_reserve_per_decode()
            ends = {{
                committed: page_aligned_decode_alloc_lens(
                    [_Req(committed)], reserve=reserve, page_size=page_size
                )[1][0]
                for committed in range(
                    max(0, CONTEXT_LEN - 2 * page_size), CONTEXT_LEN + 1
                )
            }}
            committed = max(ends, key=ends.get)
            self.assertLessEqual(
                ends[committed],
                row,
                f"{{builder}}: a decode step at kv_committed_len {{committed}} "
                f"(reserve {{reserve}}, page {{page_size}}) writes the row to "
                f"{{ends[committed]}}, past its width {{row}}",
            )

{methods}


if __name__ == "__main__":
    unittest.main()
'''
