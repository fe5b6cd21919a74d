"""Target specs for real SGLang code, and the ``Target`` each one resolves to.

    sglang==X.Y.Z      a release (0.5.13 or newer): its wheel (pip download, cached), decode semantics of X.Y.Z
    sglang[@X.Y.Z]     the installed SGLang; @X.Y.Z overrides the version it reports
    PATH[@X.Y.Z]       an allocation_sizing.py-shaped file, or a checkout directory holding one;
                       unknown version: the newest semantics unless @X.Y.Z (``--sglang-version``)

The spec a Target records (and a case file keeps) is canonical: a file's
path is absolute and an explicit version is part of it, so a case file
replays the same semantics from any directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from allocator_model import algorithms as algo
from allocator_model.revisions import RELEASE_REVISIONS, Revision
from fuzz.engines.sglang.specs import NAME as SGLANG
from fuzz.targets.base import Target, TargetError, TargetKind

from . import wheels
from .allocators import UNIFIED_MODULES, Source
from .loader import Generation, load_sizing_module
from .real import RealSizing
from .runtime.request import make_request
from .versions import VersionError, known_releases, newest_release, parse_version, semantics_for


def requests_of(version: str) -> Callable[[int, int], Any]:
    """Requests shaped like ``version``'s own ``Req`` (``runtime.request``: the lengths where that release keeps
    them), as a sizing file's ``page_aligned_decode_alloc_lens`` receives them."""

    def request(kv_committed_len: int, kv_allocated_len: int) -> Any:
        return make_request(version, 0, kv_committed_len, kv_allocated_len)

    return request


MEM_CACHE = os.path.dirname(wheels.CONFIGURATOR_MODULE)  # sglang/srt/mem_cache
# A tree with this module (the paged allocator, 0.5.13+) has SGLang's decode write path around it to run
# (``scenario.SGLangPath``); a lone sizing file, or a wheel of it alone, has not.
WRITE_PATH_MODULE = "sglang/srt/mem_cache/allocator/paged.py"
_AT_VERSION = re.compile(r"^(?P<base>.+?)@(?P<version>\d+\.\d+\.\d+[A-Za-z0-9.+\-]*)$")


def _split_version(spec: str) -> tuple[str, str | None]:
    m = _AT_VERSION.match(spec)
    return (m.group("base"), m.group("version")) if m else (spec, None)


def is_real_spec(spec: str) -> bool:
    """sglang, sglang==X.Y.Z, sglang@X.Y.Z, or something that names a file or directory."""
    base, _ = _split_version(spec)
    if base == "sglang" or spec.startswith("sglang=="):
        return True
    return base.endswith(".py") or "/" in base or os.sep in base or os.path.exists(base)


def _fit(revision: Revision, generation: Generation) -> Revision:
    """The version's semantics, fitted to the file.

    Without algorithms the file cannot size (UNO before its branch existed).
    A main-generation file (its own row width function) comes from a tree
    whose unified pool builders size their rows with the headroom too:
    upstream's row-headroom test of the unified builders
    (``test/registered/unit/mem_cache/test_req_to_token_row_headroom.py`` at
    20fd295) requires it, so no kind keeps 0.5.23's narrow C + 4 + D rows
    unless the file's own ``kv_cache_configurator.py`` says so (``builders``).
    """
    if generation.has_row_width and revision.narrow_rows:
        revision = revision.but(
            f"{revision.name}-row-width",
            f"{revision.summary}; unified rows sized with the headroom (main)",
            narrow_rows=frozenset(),
        )
    if generation.has_uno or algo.UNO not in revision.algorithms:
        return revision
    return revision.but(
        f"{revision.name}-no-uno",
        f"{revision.summary}; the file has no UNO branch",
        algorithms=revision.algorithms - {algo.UNO},
    )


def _target(
    spec: str,
    kind: TargetKind,
    what: str,
    source: str,
    filename: str,
    version: str | None,
    builders: tuple[Source, list[Source]] | None = None,
    tree_source: str | None = None,
) -> Target:
    """``builders``: the target's ``kv_cache_configurator.py``, and the unified pool files it has, if any."""
    try:
        revision, how = semantics_for(version)
    except VersionError as e:
        raise TargetError(f"{spec}: {e}") from None
    module = load_sizing_module(source, spec, filename)
    module.requests = requests_of(version or newest_release())
    module.tree_source = tree_source
    if builders is not None:
        configurator, others = builders
        module.read_builders(configurator.text, configurator.where, others)
    revision = _fit(revision, module.generation)
    if module.row_extras is None and revision.narrow_rows and kind is not TargetKind.RELEASE:
        # A lone sizing file: the pools whose rows its version's builders size (not this file) are not its to
        # answer for; reporting them against the file would name the wrong cause.  (A release's builders are
        # its own: modeled, cited, when its wheel does not carry them.)
        revision = revision.but(
            revision.name,  # the same decode semantics, fewer deployments
            f"{revision.summary}; without kv_cache_configurator.py, the {', '.join(sorted(revision.narrow_rows))} "
            "pools are left out",
            pools=revision.pools - revision.narrow_rows,
            narrow_rows=frozenset(),
        )
    label = f"{what}, {module.generation.describe()}, decode semantics {revision.name} ({how})"
    return Target(spec, label, RealSizing(module, revision), revision, kind, SGLANG)


def _resolve_release(spec: str) -> Target:
    version = spec[len("sglang==") :].strip()
    try:
        parse_version(version)
        semantics_for(version)  # refuse a release before the sizing functions before downloading anything
        wheel = wheels.release_wheel(version)
        source, member = wheels.read_sizing_from_wheel(wheel)
        builders_member = wheels.CONFIGURATOR_MODULE
        configurator = wheels.read_member(wheel, builders_member)
        if configurator is None:  # 0.5.13-0.5.15: the ModelRunner mixin builds the pools
            builders_member = wheels.MIXIN_MODULE
            configurator = wheels.read_member(wheel, builders_member)
        others = [
            Source(text, f"{wheel}/{member}")
            for member in (f"{MEM_CACHE}/{m}" for m in UNIFIED_MODULES)
            if (text := wheels.read_member(wheel, member)) is not None
        ]
    except VersionError as e:
        raise TargetError(f"{spec}: {e}") from None
    except wheels.SourceError as e:  # its text names the release already
        raise TargetError(str(e)) from None
    return _target(
        f"sglang=={version}",
        TargetKind.RELEASE,
        f"sglang {version} wheel",
        source,
        f"{wheel}/{member}",
        version,
        None if configurator is None else (Source(configurator, f"{wheel}/{builders_member}"), others),
        tree_source=wheel if wheels.read_member(wheel, WRITE_PATH_MODULE) is not None else None,
    )


def _resolve_installed(spec: str, version: str | None) -> Target:
    try:
        source, path, installed = wheels.installed_sizing()
    except wheels.SourceError as e:
        raise TargetError(f"{spec}: {e}") from None
    what = f"installed sglang {installed or '(version unknown)'} ({path})"
    builders = _sibling_builders(path)
    tree = "installed" if tree_root(path) else None
    return _target(spec, TargetKind.INSTALLED, what, source, path, version or installed, builders, tree)


def _resolve_file(path: str, version: str | None) -> Target:
    try:
        source, resolved = wheels.read_file(os.path.abspath(os.path.expanduser(path)))
    except wheels.SourceError as e:
        raise TargetError(str(e)) from None
    spec = resolved + (f"@{version}" if version else "")
    builders = _sibling_builders(resolved)
    return _target(spec, TargetKind.FILE, f"file {resolved}", source, resolved, version, builders, tree_root(resolved))


def tree_root(sizing_path: str) -> str | None:
    """The root of the tree a sizing file sits in (the directory holding ``sglang/``), where that tree has
    SGLang's write path beside it (``mem_cache/allocation.py``); None: the file stands alone."""
    parts = os.path.normpath(sizing_path).split(os.sep)
    if len(parts) < 4 or parts[-4:-1] != ["sglang", "srt", "mem_cache"]:
        return None
    root = os.sep.join(parts[:-4]) or os.sep
    return root if os.path.isfile(os.path.join(root, *WRITE_PATH_MODULE.split("/"))) else None


def _sibling_builders(sizing_path: str) -> tuple[Source, list[Source]] | None:
    """The ``kv_cache_configurator.py`` beside a sizing file (a checkout or an installed package), if there
    (else 0.5.13-0.5.15's ``model_runner_kv_cache_mixin.py``), and the unified pool files beside it
    (``allocators.UNIFIED_MODULES``) that are there; one that is there but unreadable is ``TargetError``."""
    here = os.path.dirname(sizing_path)
    configurator = _readable(os.path.join(here, os.path.basename(wheels.CONFIGURATOR_MODULE)))
    if configurator is None:  # 0.5.13-0.5.15's tree: the ModelRunner mixin, in model_executor/ beside mem_cache/
        configurator = _readable(os.path.join(os.path.dirname(here), *wheels.MIXIN_MODULE.split("/")[-2:]))
    if configurator is None:
        return None
    others = [s for m in UNIFIED_MODULES if (s := _readable(os.path.join(here, *m.split("/")))) is not None]
    return configurator, others


def _readable(path: str) -> Source | None:
    """A pool-builder file beside the sizing file: None if absent; there but unreadable is bad input.

    Past the source bound (``wheels.MAX_SOURCE_BYTES``), not UTF-8, or not a
    regular file: ``TargetError``, one line and exit 2.  Skipping it would
    run on the model's rows and pages for the kinds it builds (or on another
    tree's builders), with the file the user pointed at unread.
    """
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        raise TargetError(f"{path} is not a regular file (read beside the sizing file for the pool builders)")
    try:
        return Source(wheels.read_file(path)[0], path)
    except wheels.SourceError as e:
        raise TargetError(f"{e} (read beside the sizing file for the pool builders)") from None


def resolve_real_target(spec: str) -> Target:
    if spec.startswith("sglang=="):
        return _resolve_release(spec)
    base, version = _split_version(spec)
    if base == "sglang":
        return _resolve_installed(spec, version)
    return _resolve_file(base, version)


def with_sglang_version(spec: str, version: str | None) -> str:
    """``spec`` with the decode-semantics version ``--sglang-version`` gives (reference specs pass through)."""
    if not version or not is_real_spec(spec) or spec.startswith("reference"):
        return spec
    try:
        semantics_for(version)
    except VersionError as e:
        raise TargetError(f"--sglang-version: {e}") from None
    if spec.startswith("sglang=="):
        named = spec[len("sglang==") :]
        if parse_version(named) != parse_version(version):
            raise TargetError(f"--sglang-version {version} contradicts the release in {spec}")
        return spec
    base, _ = _split_version(spec)
    if base != "sglang":
        base = os.path.abspath(os.path.expanduser(base))
    return f"{base}@{version}"


def real_target_rows() -> list[tuple[str, str]]:
    """Rows for ``kvrow-fuzz targets``."""
    releases = known_releases()
    rows = [
        (
            "sglang==X.Y.Z",
            f"a release's own sizing module, from its wheel, {releases[0]} or newer (cache: {wheels.cache_dir()})",
        ),
        ("sglang[@X.Y.Z]", "the sizing module of the SGLang installed in this environment"),
        ("PATH[@X.Y.Z]", "an allocation_sizing.py-shaped file or SGLang checkout (newest semantics unless @X.Y.Z)"),
    ]
    rows += [(f"sglang=={r}", f"release {r}: decode semantics {RELEASE_REVISIONS[r]}") for r in releases]
    return rows
