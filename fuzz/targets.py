"""What the properties run against: a sizing implementation plus the decode semantics of its version.

A target spec is one of
  reference                the embedded reference model (safe everywhere)
  reference@REVISION       a historical revision of the model (a planted bug)
  sglang==X.Y.Z            a release's own sizing module (fuzz/sglang/: wheel cache, loader)
  sglang[@X.Y.Z]           the installed SGLang's sizing module
  PATH[@X.Y.Z]             an allocation_sizing.py-shaped file or SGLang checkout

The sizing comes from the target; the allocator page, the write paths and
the scheduler rules come from the model, read with the semantics
(``Revision``) of the target's version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from allocator_model.revisions import REFERENCE, REVISIONS, Revision
from allocator_model.sizing import ModelSizing


class TargetError(Exception):
    """A target spec that cannot be resolved (bad name, missing file, no network...)."""


class TargetCallError(Exception):
    """A target's sizing function raised for a valid configuration: itself a finding."""


@dataclass(frozen=True)
class Target:
    spec: str  # as the user wrote it; what a case file records
    label: str
    sizing: Any  # ModelSizing, or a loaded real module with the same surface
    revision: Revision  # decode semantics and scheduler rules of the target's version
    kind: str  # "model", "release", "installed", "file"

    @property
    def slug(self) -> str:
        return re.sub(r"[^A-Za-z0-9.]+", "-", self.spec).strip("-") or "target"


def model_target(revision: Revision) -> Target:
    spec = "reference" if revision is REFERENCE else f"reference@{revision.name}"
    return Target(spec, f"model {revision.name}: {revision.summary}", ModelSizing(revision), revision, "model")


def _resolve_model(spec: str) -> Target:
    if spec == "reference":
        return model_target(REFERENCE)
    name = spec.split("@", 1)[1]
    if name not in REVISIONS:
        raise TargetError(f"unknown revision {name!r} in target {spec!r} (known: {', '.join(REVISIONS)})")
    return model_target(REVISIONS[name])


def _is_real(spec: str) -> bool:
    from .sglang import is_real_spec  # imported late: the loader imports this module

    return is_real_spec(spec)


def _resolve_real(spec: str) -> Target:
    from .sglang import resolve_real_target

    return resolve_real_target(spec)


# Resolvers by spec form, tried in order.
RESOLVERS: list[tuple[Callable[[str], bool], Callable[[str], Target]]] = [
    (lambda s: s == "reference" or s.startswith("reference@"), _resolve_model),
    (_is_real, _resolve_real),  # sglang==X.Y.Z, sglang, PATH (fuzz/sglang/)
]


def resolve_target(spec: str) -> Target:
    spec = (spec or "").strip()
    for matches, resolve in RESOLVERS:
        if matches(spec):
            return resolve(spec)
    raise TargetError(f"unknown target {spec!r}: use reference[@REVISION], sglang==X.Y.Z, sglang or a PATH "
                      "(see: python -m fuzz targets)")


def known_targets() -> list[tuple[str, str]]:
    rows = [("reference", REFERENCE.summary)]
    rows += [(f"reference@{r.name}", r.summary) for r in REVISIONS.values() if r is not REFERENCE]
    from .sglang import real_target_rows

    return rows + real_target_rows()
