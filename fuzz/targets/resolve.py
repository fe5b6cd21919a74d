"""Target specs, resolved to a ``Target``.

  reference                the embedded reference model (safe everywhere)
  reference@REVISION       a historical revision of the model (a planted bug)
  sglang==X.Y.Z            a release's own sizing module (fuzz.targets.sglang: wheel cache, loader)
  sglang[@X.Y.Z]           the installed SGLang's sizing module
  PATH[@X.Y.Z]             an allocation_sizing.py-shaped file or SGLang checkout

The sizing comes from the target; the allocator page, the write paths and
the scheduler rules come from the model, read with the semantics
(``Revision``) of the target's version.
"""

from __future__ import annotations

from allocator_model.revisions import REFERENCE, RELEASE_REVISIONS, REVISIONS
from fuzz.common.errors import BadInput, did_you_mean

from .base import Target, TargetError, model_target, runs_named_code
from .sglang import is_real_spec, real_target_rows, resolve_real_target, with_sglang_version


def _is_model_spec(spec: str) -> bool:
    return spec == "reference" or spec.startswith("reference@")


def _resolve_model(spec: str) -> Target:
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


def resolve_target(spec: str) -> Target:
    spec = (spec or "").strip()
    if _is_model_spec(spec):
        return _resolve_model(spec)
    if is_real_spec(spec):
        return resolve_real_target(spec)
    raise TargetError(
        f"unknown target {spec!r}{did_you_mean(spec, ['reference', 'sglang'])}: use reference[@REVISION], "
        "sglang==X.Y.Z, sglang or a PATH (see: python -m fuzz targets)"
    )


def resolve_case_target(named: object, override: str | None) -> Target:
    """The target a case file replays on: the one it names, if that runs no named code, else ``override``.

    A case file is data (it travels as a CI artifact): a target that would
    execute a file it names is only used when the command line names it
    (``repro CASE --target SPEC``, or ``KVROW_FUZZ_TARGET`` for an emitted test).
    """
    if override:
        return resolve_target(override)
    if not isinstance(named, str) or not named.strip():
        raise TargetError(f"the case names no target (got {named!r})")
    if runs_named_code(named):
        raise TargetError(
            f"the case names {named!r}, which would run the Python code at that path; a case file never runs code "
            "it names: replay it with --target SPEC (or KVROW_FUZZ_TARGET=SPEC for an emitted test)"
        )
    return resolve_target(named)


def resolve_targets(specs: list[str], sglang_version: str | None = None) -> list[Target]:
    """Resolve command-line specs (``--sglang-version`` applied to file and installed targets); BadInput on error."""
    try:
        if sglang_version:
            from .sglang.versions import VersionError, parse_version

            try:  # checked even where no target takes it (the reference): never silently ignored
                parse_version(sglang_version)
            except VersionError as e:
                raise BadInput(f"--sglang-version: {e}") from None
            specs = [with_sglang_version(s, sglang_version) for s in specs]
        return [resolve_target(spec) for spec in specs]
    except TargetError as e:
        raise BadInput(str(e)) from None


def known_targets() -> list[tuple[str, str]]:
    rows = [("reference", REFERENCE.summary)]
    rows += [(f"reference@{r.name}", r.summary) for r in REVISIONS.values() if r is not REFERENCE]
    return rows + real_target_rows()
