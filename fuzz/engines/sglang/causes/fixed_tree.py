"""The fixed code a proposed fix is judged on: a second checkout, or a patch applied to a copy of the cases' tree.

``--fix [LABEL=]PATH``: a directory is a checkout with the fix in it; a
regular file is a unified diff (``fuzz.common.patches``), applied to a copy of
the tree the cases ran on (the base: ``--target``, else the one target every
case names): a release's wheel laid out as a checkout (``python/sglang/...``:
its ``srt/``, ``kernels/`` and top-level files, what this tool runs of SGLang,
and every other file the patch edits), or a checkout's or the installed
package's ``sglang/`` (its regular files only,
hard-linked where the filesystem allows: the patch replaces a file, never
writes through it).  Only ``python/sglang/`` is copied, so a hunk elsewhere
(tests, docs, the CUDA kernels' sources) is listed as not applied: none of it is
code the cases run.  The copy goes to ``--tree DIR`` (kept: the repro lines name
it) or to a temporary directory removed when the command ends (the repro lines
then name ``YOUR_CHECKOUT``: a checkout with the patch applied).  The fixed
target's decode semantics are the base's release (``@X.Y.Z``).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass

from fuzz.common.errors import BadInput
from fuzz.common.patches import Applied, apply, read_patch
from fuzz.common.text import printable
from fuzz.engines.sglang.real.resolve import resolve_real_target
from fuzz.engines.sglang.target_type import SGLangTarget
from fuzz.findings.repro import PLACEHOLDER
from fuzz.targets.base import TargetError, TargetKind

KEEP = "python/sglang/"  # the part of a checkout a patch is applied to (what the cases run)
RUN = ("sglang/srt/", "sglang/kernels/")  # the members of a wheel SGLang's code runs from here (and its top level)
_VERSION = re.compile(r"@(\d+\.\d+\.\d+[A-Za-z0-9.+\-]*)$")


@dataclass(frozen=True)
class Fix:
    """One ``--fix`` argument: its label (the path's name where none is given), the path, and what it is."""

    label: str
    path: str
    is_patch: bool


@dataclass(frozen=True)
class FixedCode:
    """The fixed target: its spec, how it was made (for the reader), and the ``--target`` a repro line gives."""

    spec: str
    made: str
    repro_target: str
    changed: tuple[str, ...] = ()  # a patch's files applied (relative to the checkout's root)
    outside: tuple[str, ...] = ()  # a patch's files outside ``KEEP``: not applied


def parse_fix(arg: str) -> Fix:
    """``[LABEL=]PATH``: the label is what comes before the first ``=`` (a path holding ``=`` needs one)."""
    label, sep, path = arg.partition("=")
    if not sep:
        label, path = "", arg
    if sep and not label.strip():
        raise BadInput(f"--fix {printable(arg, 200)}: an empty label before '='")
    if os.path.isdir(path):
        is_patch = False
    elif os.path.isfile(path):
        is_patch = True
    else:
        raise BadInput(
            f"--fix {printable(arg, 200)}: {printable(path, 200)} is neither a checkout directory nor a patch file"
        )
    return Fix(label.strip() or os.path.basename(os.path.normpath(path)), path, is_patch)


def version_of(target: SGLangTarget) -> str | None:
    """The release whose decode semantics ``target`` runs with: a release's, else its spec's ``@X.Y.Z``."""
    if target.spec.startswith("sglang=="):
        return target.spec[len("sglang==") :]
    m = _VERSION.search(target.spec)
    return m.group(1) if m else None


def fixed_code(fix: Fix, base: SGLangTarget, tree: str | None) -> FixedCode:
    """The fixed target of ``fix`` on ``base`` (the patch applied into ``tree``, a new or empty directory, or a
    temporary one the caller removes: ``FixedCode.spec``'s checkout), resolved once to refuse a bad one early."""
    version = version_of(base)
    at = f"@{version}" if version else ""
    if not fix.is_patch:
        spec, made, shown = os.path.abspath(fix.path) + at, "a checkout with the fix", os.path.abspath(fix.path)
        applied = Applied((), ())
    else:
        if tree is None:
            raise ValueError("a patch needs the directory it is applied in")
        patches = read_patch(fix.path)  # the patch read and checked before anything is copied
        _copy_tree(base, tree, {p.path.removeprefix("python/") for p in patches})
        applied = apply(patches, tree, KEEP, f"the patch {printable(fix.path, 200)}")
        if not applied.changed:
            raise BadInput(f"the patch {printable(fix.path, 200)} changes no file under {KEEP}: nothing to judge")
        spec, shown = os.path.abspath(tree) + at, os.path.abspath(tree)
        made = f"the patch applied to a copy of {base.spec} ({len(applied.changed)} file(s))"
    try:
        resolve_real_target(spec)
    except TargetError as e:
        raise BadInput(f"--fix {printable(fix.path, 200)}: {printable(str(e).splitlines()[0], 300)}") from None
    return FixedCode(spec, made, shown, applied.changed, applied.outside)


def temporary_tree() -> str:
    return tempfile.mkdtemp(prefix="kvrow-fix-")


def removed(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def repro_target(fixed: FixedCode, kept: bool) -> str:
    """The ``--target`` of a repro line: the fixed checkout where it stays, else ``YOUR_CHECKOUT``."""
    return fixed.repro_target if kept else PLACEHOLDER


def check_tree_dir(path: str) -> None:
    """``--tree DIR``: a new directory or an empty one, never a link (the patched copy is written there)."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        raise BadInput(f"--tree {printable(path, 200)}: not a directory")
    if os.path.isdir(path) and os.listdir(path):
        raise BadInput(f"--tree {printable(path, 200)}: not empty (the patched copy goes into a new directory)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise BadInput(f"--tree {printable(path, 200)}: cannot create it: {e.strerror or e}") from None


def _copy_tree(base: SGLangTarget, dest: str, edited: set[str]) -> None:
    """``base``'s ``sglang`` package as ``dest/python/sglang``: a release's wheel (``RUN``, and the members the patch
    edits: ``edited``), or a directory's regular files (all of them)."""
    source = getattr(getattr(base.sizing, "module", None), "tree_source", None)
    if source is None:
        raise BadInput(
            f"{printable(base.spec, 300)} is a lone sizing file: a patch is applied to a tree of SGLang's files "
            "(a release, a checkout, the installed package)"
        )
    out = os.path.join(dest, "python")
    if base.kind is TargetKind.RELEASE or str(source).endswith(".whl"):
        _extract(str(source), out, edited)
        return
    from fuzz.engines.sglang.real.runtime.tree import open_tree

    root = getattr(open_tree(str(source)), "root", None)
    if root is None:
        raise BadInput(f"{printable(base.spec, 300)}: no directory of SGLang's files to copy")
    _copy_files(os.path.join(root, "sglang"), os.path.join(out, "sglang"))


def _extract(wheel: str, out: str, edited: set[str]) -> None:
    try:
        with zipfile.ZipFile(wheel) as z:
            for info in z.infolist():
                name = info.filename
                parts = name.split("/")
                run = name.startswith(RUN) or (len(parts) == 2 and parts[0] == "sglang") or name in edited
                if not run or info.is_dir() or any(p in ("", ".", "..") for p in parts):
                    continue
                if stat.S_ISLNK(info.external_attr >> 16):
                    continue  # a link in a wheel: not a file of the package
                path = os.path.join(out, *parts)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with z.open(info) as src, open(path, "xb") as dst:
                    shutil.copyfileobj(src, dst)
    except (zipfile.BadZipFile, OSError) as e:
        raise BadInput(f"cannot copy {printable(wheel, 300)} into {printable(out, 300)}: {e}") from None


def _copy_files(src: str, dst: str) -> None:
    """Every regular file under ``src`` (links and special files left out), hard-linked where it can be."""
    try:
        for directory, dirs, files in os.walk(src):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
            here = os.path.join(dst, os.path.relpath(directory, src))
            os.makedirs(here, exist_ok=True)
            for name in files:
                path = os.path.join(directory, name)
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    continue
                try:
                    os.link(path, os.path.join(here, name))
                except OSError:
                    shutil.copyfile(path, os.path.join(here, name))
    except OSError as e:
        raise BadInput(f"cannot copy {printable(src, 300)}: {e.strerror or e}") from None
