"""What the properties run against: a sizing surface (``allocator_model.surface``) and the decode semantics of
its version.

A leaf of the targets package: the loader of real SGLang code
(``fuzz.targets.sglang``) and the resolver (``fuzz.targets.resolve``) both
build on it, and nothing here imports either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from allocator_model.model_sizing import ModelSizing
from allocator_model.revisions import REFERENCE, Revision
from allocator_model.surface import DECODE_STEPS, Provenance, Surface
from fuzz.common.compat import StrEnum

# What compiling or parsing a target's source can raise for a file that is no Python this tool can read (a null
# byte: ValueError; nesting past the compiler's stack: MemoryError or RecursionError): a file that does not parse.
UNPARSABLE: tuple[type[Exception], ...] = (SyntaxError, ValueError, MemoryError, RecursionError)


class TargetError(Exception):
    """A target spec that cannot be resolved (bad name, missing file, no network...)."""


class TargetCallError(Exception):
    """A target's sizing function raised for a valid configuration: itself a finding."""


class TargetKind(StrEnum):
    MODEL = "model"  # the reference or one of its revisions
    RELEASE = "release"  # sglang==X.Y.Z: a release's wheel
    INSTALLED = "installed"  # the installed SGLang
    FILE = "file"  # a local allocation_sizing.py or checkout


@dataclass(frozen=True)
class Target:
    spec: str  # canonical: what a case file records
    label: str
    sizing: Surface  # its answers to the declared entries (``allocator_model.surface``)
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


def modeled_line(target: Target, own_write_path: bool = True) -> str | None:
    """The lines every command prints for a real target: what it still takes from the model, and where its
    decode steps run (None: a model target, nothing to say); ``own_write_path`` False: the command was told
    to keep the model's (``--write-path model``)."""
    modeled = target.sizing.modeled()
    if not modeled:
        return None
    line = f"   modeled, not read from the target: {'; '.join(modeled)}"
    if target.sizing.source(DECODE_STEPS) is Provenance.READ and not own_write_path:
        line += "\n   write path: the model's (--write-path model; the target's own code was not run)"
    elif target.sizing.source(DECODE_STEPS) is Provenance.READ:
        line += (
            "\n   write path: SGLang's own code (its entry points, allocator and triton kernels under triton's "
            "interpreter) for the covering set, a sample of the search and every finding; the search is the model's"
        )
    return line
