"""What the properties run against: a sizing surface plus the decode semantics of its version.

A leaf of the targets package: the loader of real SGLang code
(``fuzz.targets.sglang``) and the resolver (``fuzz.targets.resolve``) both
build on it, and nothing here imports either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from allocator_model.config import ServingConfig, SpecRuntime
from allocator_model.revisions import REFERENCE, Revision
from allocator_model.sizing import ModelSizing


class TargetError(Exception):
    """A target spec that cannot be resolved (bad name, missing file, no network...)."""


class TargetCallError(Exception):
    """A target's sizing function raised for a valid configuration: itself a finding."""


class TargetKind(StrEnum):
    MODEL = "model"  # the reference or one of its revisions
    RELEASE = "release"  # sglang==X.Y.Z: a release's wheel
    INSTALLED = "installed"  # the installed SGLang
    FILE = "file"  # a local allocation_sizing.py or checkout


@runtime_checkable
class SizingSurface(Protocol):
    """What a target's sizing provides: ``ModelSizing``, or a real module behind ``RealSizing``.

    Every function takes the launch configuration, and the per-batch ones
    the run-time speculative shape ``rt`` (None without speculation).
    """

    def allocator_page_size(self, cfg: ServingConfig) -> int: ...

    def alloc_page_size(self, cfg: ServingConfig) -> int: ...

    def alloc_len_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int: ...

    def alloc_reserve_per_decode(self, cfg: ServingConfig, rt: SpecRuntime | None) -> int: ...

    def req_to_token_extra_context_len(self, cfg: ServingConfig) -> int: ...

    def req_to_token_row_width(self, cfg: ServingConfig) -> int: ...

    def row_guard_fires(self, cfg: ServingConfig, max_alloc_len: int, row_width: int) -> bool: ...

    def page_aligned_decode_alloc_lens(
        self, lens: Sequence[tuple[int, int]], reserve: int, page: int
    ) -> tuple[list[int], list[int], int]: ...


@dataclass(frozen=True)
class Target:
    spec: str  # canonical: what a case file records
    label: str
    sizing: SizingSurface
    revision: Revision  # decode semantics and scheduler rules of the target's version
    kind: TargetKind

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9.]+", "-", self.spec).strip("-") or "target"

    @property
    def is_model(self) -> bool:
        return self.kind is TargetKind.MODEL


def runs_named_code(spec: str) -> bool:
    """Whether resolving ``spec`` runs code that a file names: a local file or checkout, or the installed package.

    ``reference[@REVISION]`` is our own model and ``sglang==X.Y.Z`` a release
    fetched by its version; anything else executes the Python file it points at.
    """
    spec = (spec or "").strip()
    return not (spec == "reference" or spec.startswith("reference@") or spec.startswith("sglang=="))


def model_target(revision: Revision) -> Target:
    spec = "reference" if revision is REFERENCE else f"reference@{revision.name}"
    return Target(spec, f"model {revision.name}: {revision.summary}", ModelSizing(revision), revision, TargetKind.MODEL)
