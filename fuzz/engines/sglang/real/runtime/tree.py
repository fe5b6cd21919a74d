"""Where SGLang's files come from: a release's wheel, a checkout, or the installed package.

One interface, ``SourceTree.read(member)``, for members named as inside a
wheel (``sglang/srt/mem_cache/allocation.py``).  Every read is bounded by
``wheels.MAX_SOURCE_BYTES``; a member past it, one that is not UTF-8, or a
path that is not a regular file is a one-line ``TargetError``.  A missing
member is ``None``.

``filename(member)`` is what the code objects compiled from a member carry.
For a directory tree it is the file's path on disk; for a wheel it is
``<wheel path>/<member>``, which is not on disk, so ``register_source``
puts the text into ``linecache`` (tracebacks and ``inspect.getsource`` then
show the lines that ran, whatever the disk holds later).

Nothing here imports SGLang: the installed package is located with
``importlib.util.find_spec`` and read as files.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import linecache
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field

from fuzz.targets.base import TargetError

from ...records.errors import member_of
from .. import wheels

PACKAGE = "sglang"
# ``__version__ = "X"``, ``version: str = "X"``, or the chained ``__version__ = version = 'X'`` every release's
# generated ``_version.py`` holds
_VERSION_RE = re.compile(r"""^(?:(?:__version__|version)\s*(?::\s*str\s*)?=\s*)+['"]([^'"]+)['"]""", re.MULTILINE)
_WHEEL_VERSION_RE = re.compile(r"^sglang-([^-]+)-")


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TargetError(f"{where} is not UTF-8 Python source ({e.reason} at byte {e.start})") from None


def _check_member(member: str) -> None:
    parts = member.split("/")
    if not member.startswith(PACKAGE + "/") or any(p in ("", ".", "..") for p in parts):
        raise TargetError(f"{member!r} is not a member path inside the {PACKAGE} package")


@dataclass
class SourceTree:
    """Base of the three kinds of tree; ``origin`` names it in messages ("sglang==0.5.23 (wheel ...)")."""

    origin: str
    version: str | None = None
    _cache: dict[str, str | None] = field(default_factory=dict, repr=False)

    def read(self, member: str) -> str | None:
        """The member's text, or None when the tree has no such file (cached per member)."""
        _check_member(member)
        if member not in self._cache:
            self._cache[member] = self._read(member)
        return self._cache[member]

    def has(self, member: str) -> bool:
        return self.read(member) is not None

    def module_member(self, dotted: str) -> str | None:
        """The file of module ``dotted`` in the tree: its ``.py``, or a package's ``__init__.py``; None: neither."""
        return next((m for m in (member_of(dotted), member_of(dotted, True)) if self.has(m)), None)

    def filename(self, member: str) -> str:
        raise NotImplementedError

    def _read(self, member: str) -> str | None:
        raise NotImplementedError

    def fingerprint(self) -> str:
        """The tree's files as they are now on disk (names, sizes, times, inodes; no contents read): equal
        fingerprints, equal files, so what ran from the one runs the same from the other."""
        raise NotImplementedError

    def register_source(self, member: str) -> str:
        """Put the member's text into ``linecache`` under ``filename(member)``; returns that filename."""
        text = self.read(member)
        if text is None:
            raise TargetError(f"{self.origin} has no {member}")
        name = self.filename(member)
        # mtime None: ``linecache.checkcache`` keeps the entry (it never stats it).
        linecache.cache[name] = (len(text), None, text.splitlines(keepends=True), name)
        return name


@dataclass
class WheelTree(SourceTree):
    """A release's wheel, read member by member (nothing is unpacked)."""

    path: str = ""
    # The wheel, opened once: its central directory (thousands of members) is read once, not per member read.
    _zip: zipfile.ZipFile | None = field(default=None, repr=False, compare=False)

    def filename(self, member: str) -> str:
        return os.path.join(self.path, member)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_zip": None}  # an open file does not travel (a worker reopens it)

    def fingerprint(self) -> str:
        return _stat_line(self.path)

    def _read(self, member: str) -> str | None:
        try:
            if self._zip is None:
                self._zip = zipfile.ZipFile(self.path)
            z = self._zip
            try:
                info = z.getinfo(member)
            except KeyError:
                return None
            if info.is_dir():
                raise TargetError(f"{member} in {os.path.basename(self.path)} is a directory, not a file")
            if info.file_size > wheels.MAX_SOURCE_BYTES:
                raise TargetError(
                    f"{member} in {os.path.basename(self.path)} is larger than {wheels.MAX_SOURCE_BYTES >> 20} MiB"
                )
            with z.open(info) as f:
                data = f.read(wheels.MAX_SOURCE_BYTES + 1)
        except (zipfile.BadZipFile, OSError) as e:
            raise TargetError(f"{self.path} is not a readable wheel ({e})") from None
        if len(data) > wheels.MAX_SOURCE_BYTES:  # the header lied about the size
            raise TargetError(f"{member} in {os.path.basename(self.path)} is larger than its header says")
        return _decode(data, f"{member} in {os.path.basename(self.path)}")


@dataclass
class DirectoryTree(SourceTree):
    """A directory holding the ``sglang`` package: a checkout (``python/sglang``), an unpacked wheel, site-packages."""

    root: str = ""  # the directory that holds ``sglang/``

    def filename(self, member: str) -> str:
        return os.path.join(self.root, *member.split("/"))

    def fingerprint(self) -> str:
        # Into linked folders too (the reads follow links), each real folder once (a link cycle ends there).
        digest, seen = hashlib.sha256(), set()
        for directory, dirs, files in os.walk(os.path.join(self.root, PACKAGE), followlinks=True):
            st = os.stat(directory)
            if (st.st_dev, st.st_ino) in seen:
                dirs.clear()
                continue
            seen.add((st.st_dev, st.st_ino))
            dirs.sort()
            digest.update(f"{directory}\n".encode())
            for name in sorted(files):
                digest.update(f"{_stat_line(os.path.join(directory, name))}\n".encode())
        return digest.hexdigest()

    def _read(self, member: str) -> str | None:
        path = self.filename(member)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise TargetError(f"cannot read {path}: {e.strerror or e}") from None
        if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
            raise TargetError(f"{path} is not a regular file")
        try:
            with open(path, "rb") as f:
                data = f.read(wheels.MAX_SOURCE_BYTES + 1)
        except OSError as e:
            raise TargetError(f"cannot read {path}: {e.strerror or e}") from None
        if len(data) > wheels.MAX_SOURCE_BYTES:
            raise TargetError(f"{path} is larger than {wheels.MAX_SOURCE_BYTES >> 20} MiB")
        return _decode(data, path)


def _stat_line(path: str) -> str:
    """A file's name, size, modification and change times (ns) and inode: a write changes one of them (at the
    file system's clock: a write in the same tick as the fingerprint, keeping the size, would not)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"{path}:{type(e).__name__}"
    return f"{path}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"


def _version_from_text(text: str | None) -> str | None:
    if text is None:
        return None
    m = _VERSION_RE.search(text)
    return m.group(1) if m else None


def wheel_tree(path: str) -> WheelTree:
    """The tree of one wheel file; its version from the wheel's name."""
    if not os.path.isfile(path):
        raise TargetError(f"{path} is not a wheel file")
    m = _WHEEL_VERSION_RE.match(os.path.basename(path))
    version = m.group(1) if m else None
    return WheelTree(origin=f"sglang=={version} ({path})" if version else path, version=version, path=path)


def release_tree(version: str, directory: str | None = None) -> WheelTree:
    """The cached wheel of sglang==version in ``directory`` (default: the wheel cache); never downloads."""
    found = wheels.cached_wheel(version, directory)
    if found is None:
        raise TargetError(f"no wheel of sglang=={version} in {directory or wheels.cache_dir()}")
    return wheel_tree(found)


def directory_tree(path: str) -> DirectoryTree:
    """A checkout root (``python/sglang/...``), or a directory holding ``sglang/...`` (site-packages, unpacked)."""
    path = os.path.abspath(path)
    for root in (os.path.join(path, "python"), path):
        if os.path.isdir(os.path.join(root, PACKAGE, "srt")):
            tree = DirectoryTree(origin=f"the SGLang tree at {root}", root=root)
            tree.version = _version_from_text(tree.read("sglang/_version.py"))
            return tree
    raise TargetError(f"{path} holds neither python/{PACKAGE}/srt nor {PACKAGE}/srt")


def installed_tree() -> DirectoryTree:
    """The installed ``sglang``, located with ``find_spec`` and never imported."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError) as e:
        raise TargetError(f"cannot locate the installed sglang: {e}") from None
    if spec is None or not spec.submodule_search_locations:
        raise TargetError("no SGLang is installed for this interpreter")
    package = list(spec.submodule_search_locations)[0]
    tree = DirectoryTree(origin=f"the installed sglang ({package})", root=os.path.dirname(package))
    try:
        tree.version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        tree.version = _version_from_text(tree.read("sglang/_version.py"))
    return tree


def open_tree(spec: str | SourceTree, wheel_dir: str | None = None) -> SourceTree:
    """A tree from a tree, ``installed``, a ``.whl`` path, a directory or a version (``0.5.23``, ``sglang==0.5.23``)."""
    if isinstance(spec, SourceTree):
        return spec
    if spec in ("installed", PACKAGE):
        return installed_tree()
    if spec.endswith(".whl"):
        return wheel_tree(spec)
    if os.path.isdir(spec):
        return directory_tree(spec)
    version = spec.removeprefix("sglang==")
    if re.fullmatch(r"\d+\.\d+\.\d+\S*", version):
        return release_tree(version, wheel_dir)
    raise TargetError(f"{spec!r} is neither a version, a wheel, a directory nor 'installed'")
