"""SGLang's targets: the reference model and its revisions, a release's wheel, the installed package, a file.

  reference                the embedded reference model (safe everywhere)
  reference@REVISION       a historical revision of the model (a planted bug)
  sglang==X.Y.Z            a release's own code (``fuzz.engines.sglang.real``: wheel cache, loader)
  sglang[@X.Y.Z]           the installed SGLang's
  PATH[@X.Y.Z]             an allocation_sizing.py-shaped file or SGLang checkout

The sizing comes from the target; the allocator page, the write paths and
the scheduler rules come from the model, read with the semantics
(``Revision``) of the target's version.
"""

from __future__ import annotations

import os
import re
from typing import Any

from allocator_model.model_sizing import ModelSizing
from allocator_model.revisions import REFERENCE, RELEASE_REVISIONS, REVISIONS, Revision
from allocator_model.surface import DECODE_STEPS, Provenance
from fuzz.common.errors import TargetError, did_you_mean
from fuzz.engines.sglang.real import is_real_spec, real_target_rows, resolve_real_target, with_sglang_version
from fuzz.engines.sglang.real.versions import VersionError, parse_version
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.repro import PLACEHOLDER
from fuzz.targets.base import Target, TargetKind

from .specs import NAME, is_model_spec

_VERSION = r"[0-9]{1,6}(?:\.[0-9]{1,6}){2,3}(?:(?:a|b|rc)[0-9]{1,6})?(?:\.post[0-9]{1,6})?(?:\.dev[0-9]{1,6})?"
_RELEASE = re.compile(rf"sglang=={_VERSION}", re.ASCII)
_INSTALLED = re.compile(rf"sglang(?:@{_VERSION})?", re.ASCII)
_MODEL = re.compile(r"reference(?:@[a-z0-9][a-z0-9.\-]{0,63})?", re.ASCII)
_AT_VERSION = re.compile(rf"@{_VERSION}$", re.ASCII)  # PATH@X.Y.Z: the version a file's semantics are read at


def model_target(revision: Revision) -> SGLangTarget:
    spec = "reference" if revision is REFERENCE else f"reference@{revision.name}"
    label = f"model {revision.name}: {revision.summary}"
    return Target(spec, label, ModelSizing(revision), revision, TargetKind.MODEL, NAME)


def resolve_model(spec: str) -> SGLangTarget:
    """``reference``, ``reference@REVISION``, or ``reference@sglang-X.Y.Z`` for any modeled release (a release
    that shares another's semantics, 0.5.22 say, resolves to that revision: the spec a case file records)."""
    if spec == "reference":
        return model_target(REFERENCE)
    name = spec.split("@", 1)[1]
    release = name.removeprefix("sglang-")
    if name not in REVISIONS and name.startswith("sglang-") and release in RELEASE_REVISIONS:
        name = RELEASE_REVISIONS[release]
    if name not in REVISIONS:
        known = [*REVISIONS, *(f"sglang-{r}" for r in RELEASE_REVISIONS)]
        raise TargetError(
            f"unknown revision {name!r} in target {spec!r}{did_you_mean(name, known)} (known: {', '.join(REVISIONS)}; "
            f"and sglang-X.Y.Z for every modeled release {min(RELEASE_REVISIONS)}..{max(RELEASE_REVISIONS)})"
        )
    return model_target(REVISIONS[name])


def resolve(spec: str, version: str | None = None) -> SGLangTarget:
    """``spec`` resolved; ``version`` (``--sglang-version``) is checked even where no target takes it (the
    reference): never silently ignored."""
    spec = (spec or "").strip()
    if version:
        try:
            parse_version(version)
        except VersionError as e:
            raise TargetError(f"--sglang-version: {e}") from None
        spec = with_sglang_version(spec, version)
    if is_model_spec(spec):
        return resolve_model(spec)
    if is_real_spec(spec):
        return resolve_real_target(spec)
    raise TargetError(
        f"unknown target {spec!r}{did_you_mean(spec, ['reference', 'sglang'])}: use reference[@REVISION], "
        "sglang==X.Y.Z, sglang or a PATH (see: kvrow-fuzz targets)"
    )


def known_targets() -> list[tuple[str, str]]:
    rows = [("reference", REFERENCE.summary)]
    rows += [(f"reference@{r.name}", r.summary) for r in REVISIONS.values() if r is not REFERENCE]
    return rows + real_target_rows()


def modeled_line(target: SGLangTarget, own_write_path: bool = True) -> str | None:
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


def portable_target(target: Any, cwd: str | None = None) -> str:
    """How a baseline names a target, the same on every machine and checkout: a spec as it is (a release, the
    model, the installed package); a file as SGLang's repository names it (``python/sglang/...``), else relative
    to the working directory, else its name alone; a ``@X.Y.Z`` it was given kept. Never an absolute path."""
    from fuzz.engines.sglang.real.resolve import _split_version
    from fuzz.engines.sglang.real.wheels import repository_path
    from fuzz.findings.baseline_entries import RELEASES_TARGET

    if target.kind is not TargetKind.FILE:
        return RELEASES_TARGET if target.kind is TargetKind.INSTALLED else str(target.spec)
    base, version = _split_version(str(target.spec))
    path = os.path.abspath(base)
    where = repository_path(path)
    if where == path:
        here = os.path.abspath(cwd or os.getcwd())
        where = os.path.relpath(path, here) if path.startswith(here + os.sep) else os.path.basename(path)
    return where.replace(os.sep, "/") + (f"@{version}" if version else "")


def target_class(spec: str) -> TargetKind | None:
    """The kind of a shard's spec from its text: ``reference[@REVISION]`` of a known revision or modeled release,
    ``sglang==X.Y.Z``, ``sglang[@X.Y.Z]``, or a path (``.py``, or with a separator); None for anything else (a
    malformed release, an unknown revision, a bare word that names no path)."""
    if is_model_spec(spec):
        name = spec.partition("@")[2]
        release = name.startswith("sglang-") and name.removeprefix("sglang-") in RELEASE_REVISIONS
        known = not name or name in REVISIONS or release
        return TargetKind.MODEL if _MODEL.fullmatch(spec) and known else None
    if spec.startswith("sglang=="):
        return TargetKind.RELEASE if _RELEASE.fullmatch(spec) else None
    if spec == "sglang" or spec.startswith("sglang@"):
        return TargetKind.INSTALLED if _INSTALLED.fullmatch(spec) else None
    base = _AT_VERSION.sub("", spec)
    return TargetKind.FILE if base.endswith(".py") or "/" in base or "\\" in base else None


def printed_target(kind: TargetKind, spec: str) -> str | None:
    """The installed package's spec as it is (``_INSTALLED``: every character recognised); a path's placeholder
    with the path's ``@X.Y.Z`` if it has one (``_AT_VERSION``: digits and dots, the semantics to replay at)."""
    if kind is TargetKind.INSTALLED and _INSTALLED.fullmatch(spec):
        return spec
    version = _AT_VERSION.search(spec)
    return PLACEHOLDER + (version.group() if version else "")
