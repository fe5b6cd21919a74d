"""A unified diff (``git diff``, ``diff -u``) read and applied to a directory this tool made, nothing else touched.

A patch is input from outside (a pull request's diff, a file from a CI
artifact), so it is read as hostile: at most ``MAX_PATCH_BYTES``, UTF-8, every
header and hunk checked against its own counts; each file it names a relative
path of plain components (no ``..``, no absolute path, no quoting), stripped of
its first component as ``git apply`` does (``a/python/...``); renames, copies,
mode-only changes and binary patches are refused.  ``apply`` writes only inside
``root`` (every parent resolved and checked, a symbolic link on the way
refused), each file through a new file renamed into place (a hard link in the
copy is replaced, never written through), and only files under ``keep`` (a
prefix: the part of a checkout the caller copied); a file outside it is listed,
not applied.  A hunk applies where its old lines stand exactly, at its line or
the nearest offset after the previous hunk (no fuzz): anything else is
``BadInput``, one line, before any file is written.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from .errors import BadInput
from .files import write_atomically
from .text import printable

MAX_PATCH_BYTES = 16 << 20
MAX_PATCH_FILES = 2000
MAX_FILE_BYTES = 64 << 20  # a file of the tree a hunk edits
NO_NEWLINE = "\\ No newline at end of file"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_REFUSED_HEADERS = ("rename from", "rename to", "copy from", "copy to", "GIT binary patch", "Binary files")


@dataclass
class Hunk:
    old_start: int
    old: list[str] = field(default_factory=list)  # its old lines (context and removed), each with its "\n" if any
    new: list[str] = field(default_factory=list)


@dataclass
class FilePatch:
    path: str  # relative to the tree's root, first component stripped
    hunks: list[Hunk]
    created: bool = False
    deleted: bool = False


@dataclass(frozen=True)
class Applied:
    """What ``apply`` did: the files it changed (relative paths) and those it left, outside ``keep``."""

    changed: tuple[str, ...]
    outside: tuple[str, ...]


def read_patch(path: str) -> list[FilePatch]:
    """The file patches of the unified diff at ``path``; BadInput (one line) for anything it cannot apply."""
    try:
        if not os.path.isfile(path):
            raise BadInput(f"{printable(path, 300)} is not a regular file (a patch is a unified diff file)")
        with open(path, "rb") as f:
            data = f.read(MAX_PATCH_BYTES + 1)
    except OSError as e:
        raise BadInput(f"cannot read the patch {printable(path, 300)}: {e.strerror or e}") from None
    if len(data) > MAX_PATCH_BYTES:
        raise BadInput(f"the patch {printable(path, 300)} is larger than {MAX_PATCH_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"the patch {printable(path, 300)} is not UTF-8 text (byte {e.start})") from None
    return parse_patch(text, printable(path, 300))


def parse_patch(text: str, where: str = "the patch") -> list[FilePatch]:
    """The file patches of a unified diff's text (see the module docstring for what is refused)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(_REFUSED_HEADERS):
            raise BadInput(f"{where} line {i + 1}: a rename, copy or binary patch; only text edits are applied")
        if not (line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1  # a preamble, a ``diff --git`` or ``index`` line: not the patch's content
            continue
        old, new = _name(line[4:], where, i + 1), _name(lines[i + 1][4:], where, i + 2)
        if old is None and new is None:
            raise BadInput(f"{where} line {i + 1}: both sides are /dev/null")
        fp = FilePatch(new or old or "", [], created=old is None, deleted=new is None)
        if old is not None and new is not None and old != new:
            raise BadInput(f"{where} line {i + 1}: {printable(old, 200)} renamed to {printable(new, 200)}: refused")
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _hunk(lines, i, where)
            fp.hunks.append(hunk)
        if not fp.hunks:
            raise BadInput(f"{where} line {i}: {printable(fp.path, 200)} has no hunk")
        out.append(fp)
        if len(out) > MAX_PATCH_FILES:
            raise BadInput(f"{where} edits more than {MAX_PATCH_FILES} files")
    if not out:
        raise BadInput(f"{where} holds no unified diff (no '--- ' / '+++ ' file header with a hunk)")
    paths = [p.path for p in out]
    if len(set(paths)) != len(paths):
        raise BadInput(f"{where} edits {printable(next(p for p in paths if paths.count(p) > 1), 200)} twice")
    return out


def _name(header: str, where: str, line: int) -> str | None:
    """A header's path, its first component stripped (``a/x/y`` -> ``x/y``); None for ``/dev/null``."""
    name = header.split("\t", 1)[0].rstrip("\r")
    if name == "/dev/null":
        return None
    if name.startswith('"'):
        raise BadInput(f"{where} line {line}: a quoted path ({printable(name, 200)}): refused")
    parts = name.split("/")[1:]
    if not parts or any(p in ("", ".", "..") for p in parts) or name.startswith("/"):
        raise BadInput(f"{where} line {line}: {printable(name, 200)} is not a relative path inside the tree")
    return "/".join(parts)


def _hunk(lines: list[str], i: int, where: str) -> tuple[Hunk, int]:
    m = _HUNK.match(lines[i])
    if m is None:
        raise BadInput(f"{where} line {i + 1}: not a hunk header: {printable(lines[i], 120)}")
    old_n = 1 if m.group(2) is None else int(m.group(2))
    new_n = 1 if m.group(4) is None else int(m.group(4))
    hunk = Hunk(int(m.group(1)))
    start, i = i + 1, i + 1
    while len(hunk.old) < old_n or len(hunk.new) < new_n:
        if i >= len(lines):
            raise BadInput(f"{where} line {start - 1}: the hunk ends before its {old_n} old and {new_n} new lines")
        line = lines[i]
        tag, body = (line[:1] or " "), line[1:] + "\n"
        if tag == " ":
            hunk.old.append(body)
            hunk.new.append(body)
        elif tag == "-":
            hunk.old.append(body)
        elif tag == "+":
            hunk.new.append(body)
        else:
            raise BadInput(f"{where} line {i + 1}: not a line of a hunk: {printable(line, 120)}")
        i += 1
        while i < len(lines) and lines[i].startswith("\\"):  # the line before has no newline at the end
            if tag in " -":
                hunk.old[-1] = hunk.old[-1][:-1]
            if tag in " +":
                hunk.new[-1] = hunk.new[-1][:-1]
            i += 1
    if len(hunk.old) != old_n or len(hunk.new) != new_n:
        raise BadInput(f"{where} line {start - 1}: the hunk holds other counts than its header's")
    return hunk, i


def apply(patches: list[FilePatch], root: str, keep: str, where: str = "the patch") -> Applied:
    """Apply ``patches`` to the tree at ``root`` (files under the prefix ``keep`` only), all checked before any is
    written; BadInput (one line) for a hunk that does not apply or a path that leaves ``root``."""
    real_root = os.path.realpath(root)
    results: list[tuple[str, str | None]] = []
    outside = []
    for fp in patches:
        if not fp.path.startswith(keep):
            outside.append(fp.path)
            continue
        target = _inside(real_root, fp.path, where)
        before = "" if fp.created else _read(target, fp.path, where)
        if fp.created and os.path.lexists(target):
            raise BadInput(f"{where}: creates {printable(fp.path, 200)}, which the tree already has")
        after = _patched(before, fp, where)
        results.append((target, None if fp.deleted else after))
    for target, text in results:
        if text is None:
            os.unlink(target)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_atomically(target, text.encode("utf-8"))
    return Applied(tuple(os.path.relpath(t, real_root) for t, _ in results), tuple(outside))


def _inside(real_root: str, rel: str, where: str) -> str:
    """``root/rel``, every existing component a real directory (or the file itself a regular one) inside root."""
    here = real_root
    parts = rel.split("/")
    for n, part in enumerate(parts):
        here = os.path.join(here, part)
        if os.path.islink(here):
            raise BadInput(f"{where}: {printable(rel, 200)} passes through a symbolic link in the tree: refused")
        if n < len(parts) - 1 and os.path.lexists(here) and not os.path.isdir(here):
            raise BadInput(f"{where}: {printable(rel, 200)}: {printable(part, 100)} is not a directory in the tree")
    if os.path.commonpath([real_root, os.path.realpath(here)]) != real_root:
        raise BadInput(f"{where}: {printable(rel, 200)} leaves the tree: refused")
    return here


def _read(path: str, rel: str, where: str) -> str:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise BadInput(f"{where}: edits {printable(rel, 200)}, which the tree does not have") from None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
        raise BadInput(f"{where}: {printable(rel, 200)} in the tree is not a regular text file it can edit")
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{where}: {printable(rel, 200)} in the tree is not UTF-8 text") from None


def _patched(text: str, fp: FilePatch, where: str) -> str:
    """``text`` with ``fp``'s hunks applied in order, each at its line or the nearest offset after the last."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    at = 0  # the first line of ``lines`` not yet copied to ``out``
    for n, h in enumerate(fp.hunks):
        want = max(h.old_start - 1, 0) if h.old else h.old_start  # an empty old side inserts after line old_start
        found = _find(lines, h.old, want, at)
        if found is None:
            raise BadInput(
                f"{where}: hunk {n + 1} of {printable(fp.path, 200)} does not apply (its old lines, at line "
                f"{h.old_start}, are not in the file there or after hunk {n})"
            )
        out += lines[at:found] + h.new
        at = found + len(h.old)
    out += lines[at:]
    if fp.deleted and out:
        raise BadInput(f"{where}: deletes {printable(fp.path, 200)} but its hunks leave lines in it")
    return "".join(out)


def _find(lines: list[str], old: list[str], want: int, start: int) -> int | None:
    """The start nearest to ``want`` (and not before ``start``) where ``old`` stands in ``lines``."""
    last = len(lines) - len(old)
    want = min(max(want, start), max(last, start))
    for offset in range(len(lines) + 1):
        if want - offset < start and want + offset > last:
            return None
        for pos in (want + offset, want - offset) if offset else (want,):
            if start <= pos <= last and lines[pos : pos + len(old)] == old:
                return pos
    return None
