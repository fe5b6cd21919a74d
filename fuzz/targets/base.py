"""What the properties run against: a target of one engine, with its sizing answers and the decode semantics of
its version.

A leaf of the targets package: the engines (``fuzz.engines``) and the
resolver (``fuzz.targets.resolve``) build on it, and nothing here imports
either.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from fuzz.common.compat import StrEnum
from fuzz.common.errors import TargetError

__all__ = ["UNPARSABLE", "Target", "TargetCallError", "TargetError", "TargetKind"]

# What compiling or parsing a target's source can raise for a file that is no Python this tool can read (a null
# byte: ValueError; nesting past the compiler's stack: MemoryError or RecursionError): a file that does not parse.
UNPARSABLE: tuple[type[Exception], ...] = (SyntaxError, ValueError, MemoryError, RecursionError)


class TargetCallError(Exception):
    """A target's sizing function raised for a valid configuration: itself a finding."""


class TargetKind(StrEnum):
    MODEL = "model"  # the reference or one of its revisions
    RELEASE = "release"  # sglang==X.Y.Z: a release's wheel
    INSTALLED = "installed"  # the installed SGLang
    FILE = "file"  # a local allocation_sizing.py or checkout


# What a target's engine fills in (SGLang's: ``fuzz.engines.sglang.target_type.SGLangTarget``, a ``Surface`` and a
# ``Revision``); the core never looks inside either.
Sizing = TypeVar("Sizing")
Semantics = TypeVar("Semantics")


@dataclass(frozen=True)
class Target(Generic[Sizing, Semantics]):
    spec: str  # canonical: what a case file records
    label: str
    sizing: Sizing  # its answers to what its engine asks (SGLang: the sizing functions' surface)
    revision: Semantics  # decode semantics and scheduler rules of the target's version (SGLang: a ``Revision``)
    kind: TargetKind
    engine: str  # the engine it belongs to (``fuzz.engines``): who resolves it, models it and names its code

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9.]+", "-", self.spec).strip("-") or "target"

    @property
    def identity(self) -> bytes:
        """What the target is, wherever it sits: a local file's name and the digest of its bytes (a copy of a
        checkout is the same target), any other target's spec."""
        if self.kind is TargetKind.FILE:
            path, at, version = self.spec, "", ""
            if not Path(path).is_file() and "@" in path:  # FILE@VERSION: the file, and the version it is read as
                path, at, version = path.rpartition("@")
            try:
                digest = hashlib.sha256(Path(path).read_bytes()).digest()
            except OSError:
                return self.spec.encode()  # gone (or a directory) since it resolved: its spec
            return f"{Path(path).name}{at}{version}:".encode() + digest
        return self.spec.encode()

    @property
    def is_model(self) -> bool:
        return self.kind is TargetKind.MODEL
