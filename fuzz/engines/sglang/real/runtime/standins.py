"""The faithful stand-ins: the names of unexecuted SGLang modules the write path needs an answer from.

Three kinds, each scoped to the module SGLang defines it in (a name of
the same spelling elsewhere stays inert: ``spec_registry.get_spec`` is not
``runtime_context.get_spec``):

* answers of the deployment kvrow-fuzz stands for, a CUDA machine:
  ``is_cuda()`` True; ``is_hip/is_npu/is_xpu/is_cpu/is_musa/is_hpu()``
  False (``utils/common.py``'s hardware probes, so answered, never run);
  ``current_platform`` the in-tree CUDA platform (``CudaPlatform``);
  ``is_confidential_compute()`` False (an NVML probe [cite: is-confidential-compute];
  no CC deployment is modeled);
* helpers SLICED out of the tree's own ``utils/common.py`` and run as
  SGLang wrote them (``next_power_of_2``, ``get_num_new_pages``,
  ``support_triton``, ``get_bool_env_var``, ``is_pin_memory_available``,
  ``raise_error_or_warn``...: ``SLICED``): each function's own text,
  compiled at its own lines, its ``os`` the case's environment
  (``CaseOS``);
* the accessors of ``runtime_context`` / ``server_args`` (``context``), ``resolving_view`` (the published bag), and
  ``envs`` of ``environ`` (``Environment``: SGLang's own ``EnvField``
  classes sliced from the tree's ``environ.py``, each variable's declared
  default, the case's value where it sets one).

Decorators whose meaning is metrics only pass the function through
(``PASS_THROUGH``).
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import copy
import dataclasses
import functools
import json
import logging
import os
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fuzz.common.pysource import parsed
from fuzz.targets.base import TargetError

from ..stubs import CudaPlatform, ServerArgs, StandInMissing
from ..stubs import SpeculativeAlgorithm as ModelSpeculativeAlgorithm
from .context import RuntimeContext
from .tree import SourceTree

UTILS = "sglang/srt/utils/common.py"
ENVIRON = "sglang/srt/environ.py"
# Functions of utils/common.py run from the tree itself (every release 0.5.13-0.5.23 has them).
SLICED = (
    "cdiv",
    "next_power_of_2",
    "round_up",
    "ceil_align",
    "ceil_div",
    "get_num_new_pages",
    "get_bool_env_var",  # reads the case's environment through CaseOS
    "support_triton",  # capabilities.supports_triton and backend not torch_native/intel_amx [cite: support-triton]
    "is_pin_memory_available",  # the platform's [cite: utils-pin-memory]: False for "cpu" [cite: cuda-pin-memory]
    "raise_error_or_warn",  # strict raises ValueError, else warns and counts [cite: raise-error-or-warn]
    "is_float4_e2m1fn_x2",  # the KV dtype is torch.float4_e2m1fn_x2, on CUDA
)
PROBES: dict[str, bool] = {
    "is_cuda": True,
    "is_cuda_alike": True,  # is_cuda() or is_hip() or is_sail() [cite: is-cuda-alike]
    "is_hip": False,
    "is_npu": False,
    "is_xpu": False,
    "is_cpu": False,
    "is_musa": False,
    "is_hpu": False,
    "is_sail": False,
    "is_mlx": False,
    "is_host_cpu_x86": False,  # only read on the CPU engine (is_cpu)
    "is_confidential_compute": False,
}
UTILS_MODULES = ("sglang.srt.utils", "sglang.srt.utils.common")
# Decorators with no effect on a single-process, single-rank run: the function passes through.
# ``scheduler_stage_method(stage)`` records stage metrics (used on the invariant checker
# [cite: checker-stage-method]); ``rank_consensus`` asserts that all TP/PP ranks call a function alike
# [cite: rank-consensus] (used on mem_cache/allocator/unified_hybrid_swa.py [cite: rank-consensus-unified-swa]
# [cite: rank-consensus-unified-mamba-swa]): with one rank there is nothing to compare.
# ``debug_kernel_api`` logs kernel calls when SGLANG_KERNEL_API_LOGLEVEL is set, and gives the function back at its
# default, 0 [cite: kernel-api-log-level] [cite: debug-kernel-api-off] (the attention backends' base class uses it).
PASS_THROUGH = {
    "sglang.srt.observability.scheduler_stage_metrics": ("scheduler_stage_method",),
    "sglang.srt.utils.rank_consensus_checker": ("rank_consensus",),
    "sglang.kernel_api_logging": ("debug_kernel_api",),  # 0.5.13-0.5.17
    "sglang.kernels.kernel_api_logging": ("debug_kernel_api",),
}


class CaseOS:
    """The ``os`` of a sliced helper: ``getenv`` answers from the case's environment, never the process's."""

    path = os.path

    def __init__(self, context: RuntimeContext) -> None:
        self._context = context

    @property
    def environ(self) -> dict[str, str]:
        return dict(self._context.settings.env)

    def getenv(self, name: str, default: str | None = None) -> str | None:
        value = self._context.env(name)
        return default if value is None else value


class CudaRuntimePlatform(CudaPlatform):
    """``current_platform``: the in-tree CUDA platform (``stubs.CudaPlatform``), with what the write path asks.

    ``capabilities.supports_triton`` True [cite: cuda-supports-triton],
    so the paged allocator takes its triton kernels [cite: paged-uses-triton-kernels]
    [cite: paged-alloc-extend-triton] [cite: paged-alloc-decode-triton];
    ``is_pin_memory_available(device)`` False for a "cpu" device, else True [cite: cuda-pin-memory].
    """

    capabilities = types.SimpleNamespace(supports_triton=True)

    def is_pin_memory_available(self, device: Any = None) -> bool:
        return not (device is not None and str(device) == "cpu")


def _future_flags() -> int:
    return __future__.annotations.compiler_flag


def slice_definitions(
    tree: SourceTree, member: str, names: tuple[str, ...], namespace: dict[str, Any], required: bool = True
) -> dict[str, Any]:
    """Functions/classes ``names`` of ``member``, each compiled from its own text at its own lines.

    A name is top-level (``get_num_new_pages``) or ``Class.method``
    (``ReqToTokenPool.write``: the method alone, as a plain function to bind
    to a stand-in).  Missing: ``TargetError``, or left out when not ``required``.
    """
    source = tree.read(member)
    if source is None:
        raise TargetError(f"{tree.origin} has no {member}")
    filename = tree.register_source(member)
    defs = (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)
    nodes: dict[str, ast.stmt] = {}
    for n in parsed(source, filename).body:
        if isinstance(n, defs):
            nodes[n.name] = n
            if isinstance(n, ast.ClassDef):
                nodes.update({f"{n.name}.{m.name}": m for m in n.body if isinstance(m, defs)})
    found: dict[str, Any] = {}
    for name in names:
        node = nodes.get(name)
        if node is None:
            if required:
                raise TargetError(f"{tree.origin} {member} defines no {name}()")
            continue
        code = compile(ast.Module(body=[node], type_ignores=[]), filename, "exec", flags=_future_flags())
        exec(code, namespace)  # noqa: S102 - SGLang's own definition
        found[name] = namespace[name.rpartition(".")[2]]
    return found


class Sliced:
    """SGLang definitions sliced from one member (``AttentionArch`` of ``configs/model_config.py``), once, when used."""

    def __init__(self, tree: SourceTree, member: str, names: tuple[str, ...], **namespace: Any) -> None:
        self._args = tree, member, names, namespace
        self._found: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> Any:
        if self._found is None:
            tree, member, names, namespace = self._args
            self._found = slice_definitions(tree, member, names, {"__name__": member, **namespace})
        return self._found[name]


class MsgspecStruct:
    """``msgspec.Struct`` as SGLang's modules use it: fields from annotations, ``frozen``/``kw_only`` options
    (inherited), keyword construction, equality and hashing by fields (a dataclass underneath)."""

    __struct_options__: dict[str, bool] = {"frozen": False, "kw_only": False}

    def __init_subclass__(cls, **options: Any) -> None:
        super().__init_subclass__()
        unknown = set(options) - {"frozen", "kw_only"}
        if unknown:
            raise StandInMissing(f"msgspec.Struct option {sorted(unknown)[0]}, which kvrow-fuzz does not stand in for")
        merged = {**cls.__struct_options__, **options}
        cls.__struct_options__ = merged
        for name in cls.__dict__.get("__annotations__", {}):
            value = cls.__dict__.get(name, dataclasses.MISSING)
            if isinstance(value, list | dict | set):  # msgspec copies a mutable default per instance
                setattr(cls, name, dataclasses.field(default_factory=functools.partial(copy.copy, value)))
        dataclasses.dataclass(frozen=merged["frozen"], kw_only=merged["kw_only"])(cls)


class Environment:
    """``envs`` of ``sglang.srt.environ``: ``envs.NAME`` is SGLang's own field, as the release declares it.

    The field classes (``EnvField``, ``EnvBool``...) are sliced from the
    tree's ``environ.py`` and the variable's declaration in ``class Envs``
    (``SGLANG_X = EnvBool(False)``) is evaluated with them; ``get()`` reads
    the case's environment (``CaseOS``): SGLang's declared default unless
    the case sets the variable.  A variable the release does not declare,
    or whose default needs more of SGLang: ``StandInMissing``.
    """

    def __init__(self, tree: SourceTree, context: RuntimeContext) -> None:
        self._tree = tree
        self._namespace: dict[str, Any] | None = None
        self._context = context
        self._fields: dict[str, Any] = {}
        self._decls: dict[str, ast.expr] = {}

    def _load(self) -> dict[str, Any]:
        if self._namespace is None:
            source = self._tree.read(ENVIRON)
            if source is None:
                raise StandInMissing(f"envs: {self._tree.origin} has no {ENVIRON}")
            tree = parsed(source)
            classes = tuple(
                n.name
                for n in tree.body
                if isinstance(n, ast.ClassDef) and n.name != "Envs" and ("Env" in n.name or "Deprecated" in n.name)
            )
            envs_class = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Envs"), None)
            if envs_class is None:
                raise StandInMissing(f"envs: {self._tree.origin} {ENVIRON} has no class Envs")
            for stmt in envs_class.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    self._decls[stmt.targets[0].id] = stmt.value
            namespace: dict[str, Any] = {
                "os": CaseOS(self._context),
                "warnings": warnings,
                "json": json,
                "contextmanager": contextlib.contextmanager,
                "Any": Any,
                "__name__": "sglang.srt.environ",
            }
            slice_definitions(self._tree, ENVIRON, classes, namespace)
            self._namespace = namespace
        return self._namespace

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name not in self._fields:
            namespace = self._load()
            decl = self._decls.get(name)
            if decl is None:
                raise StandInMissing(f"envs.{name}: {self._tree.origin} {ENVIRON} declares no such variable")
            filename = self._tree.filename(ENVIRON)
            try:
                value = eval(compile(ast.Expression(decl), filename, "eval"), namespace)  # noqa: S307
            except NameError as e:
                raise StandInMissing(f"envs.{name}: its declared default needs {e.name}, which is not sliced") from None
            value.__set_name__(None, name)
            self._fields[name] = value
        return self._fields[name]


class StandIns:
    """The answers of one tree's unexecuted modules: ``answer(module, name) -> (found, value)``."""

    def __init__(self, tree: SourceTree, context: RuntimeContext, speculative_algorithm: Callable[[], Any]) -> None:
        self.tree = tree
        self.context = context
        self._speculative_algorithm = speculative_algorithm
        self.platform = CudaRuntimePlatform()
        self.logger = logging.getLogger("kvrow_fuzz.sglang_runtime")
        self.envs = Environment(tree, context)
        self._helpers: dict[str, Any] | None = None
        self.answered: set[str] = set()

    def helpers(self) -> dict[str, Any]:
        if self._helpers is None:
            namespace: dict[str, Any] = {
                "torch": torch,
                "os": CaseOS(self.context),
                "logger": self.logger,
                "_warned_bool_env_var_keys": set(),
                "current_platform": self.platform,
                "__name__": "sglang.srt.utils.common",
            }
            namespace.update({n: (lambda v=v: v) for n, v in PROBES.items()})
            self._helpers = slice_definitions(self.tree, UTILS, SLICED, namespace)
        return self._helpers

    def accessors(self) -> dict[str, Any]:
        c = self.context
        return {
            "get_schedule": lambda: c.read("schedule"),
            "get_parallel": lambda: c.read("parallel"),
            "get_spec": lambda: c.read("spec"),
            "get_memory": lambda: c.read("memory"),
            "get_exec": lambda: c.read("exec"),
            "get_model": lambda: c.read("model"),
            "get_serving": lambda: c.read("serving"),
            "get_disagg": lambda: c.read("disagg"),
            "get_flags": lambda: c.read("flags"),
            "get_server_args": lambda: c.read("server_args"),
            "get_global_server_args": lambda: c.read("server_args"),
            "max_speculative_num_draft_tokens": lambda: c.read("dmax"),
            "attention_backends": c.attention_backends,
            # disable_radix_cache is False and strategy "extra_buffer_lazy" [cite: mamba-extra-buffer-lazy]
            "mamba_extra_buffer_lazy_enabled": lambda: False,
            "mamba_extra_buffer_enabled": lambda: False,
            "ServerArgs": ServerArgs,
        }

    def answer(self, module: str, name: str) -> tuple[bool, Any]:
        found, value = self._answer(module, name)
        if found:
            self.answered.add(f"{module}.{name}")
        return found, value

    def _answer(self, module: str, name: str) -> tuple[bool, Any]:
        if module in UTILS_MODULES:
            if name in PROBES:
                answer = PROBES[name]
                return True, lambda *a, **k: answer
            if name in SLICED:
                return True, self.helpers()[name]
            if name == "logger":
                return True, self.logger
        if module in ("sglang.srt.runtime_context", "sglang.srt.server_args"):
            accessors = self.accessors()
            if name in accessors:
                return True, accessors[name]
        if module in RESOLVING_VIEW_MODULES and name == "resolving_view":
            return True, _resolving_view
        if module == "sglang.srt.environ" and name == "envs":
            return True, self.envs
        if module == "sglang.srt.platforms" and name == "current_platform":
            return True, self.platform
        if module == "sglang.srt.speculative.spec_info" and name == "SpeculativeAlgorithm":
            return True, self._speculative_algorithm()
        if name in PASS_THROUGH.get(module, ()):
            return True, _pass_through
        return False, None


# ``resolving_view(server_args)`` (0.5.21+; defined in arg_groups/model_override_base.py, re-exported by overrides.py):
# a read view of what launch resolution decided.  The published ``server_args`` bag holds the decided values, so the
# view of it is the bag itself (a leaf it does not publish stops the run naming it).
RESOLVING_VIEW_MODULES = ("sglang.srt.arg_groups.overrides", "sglang.srt.arg_groups.model_override_base")


def _resolving_view(server_args: Any) -> Any:
    return server_args


def _pass_through(*args: Any, **kwargs: Any) -> Any:
    """``@deco`` gives the function back; ``@deco(...)`` gives a decorator that does."""
    if len(args) == 1 and not kwargs and isinstance(args[0], types.FunctionType | type):
        return args[0]

    def decorator(fn: Any) -> Any:
        return fn

    return decorator


class _Collect(logging.Handler):
    def __init__(self, into: list[str]) -> None:
        super().__init__(logging.WARNING)
        self._into = into

    def emit(self, record: logging.LogRecord) -> None:
        self._into.append(f"{record.levelname} {record.name.partition('.')[2]}: {record.getMessage()}".splitlines()[0])


@contextlib.contextmanager
def captured_logs(prefix: str) -> Iterator[list[str]]:
    """SGLang's warnings and errors while the block runs (its OOM messages), collected, not printed.

    Every executed module logs under ``prefix`` (its private name), as do the stand-ins'.
    """
    lines: list[str] = []
    handler = _Collect(lines)
    loggers = [logging.getLogger(prefix), logging.getLogger("kvrow_fuzz.sglang_runtime")]
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.propagate = False
    try:
        yield lines
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate


__all__ = ["ModelSpeculativeAlgorithm", "StandIns", "CaseOS", "Environment", "CudaRuntimePlatform", "SLICED"]
