"""Writing results to disk: outputs checked before any work starts, then written atomically, never through a link.

A campaign can run for hours; an output path that cannot be written must
fail at the start (one line, exit 2), not after the work, losing it.  Writes
go through a temporary file and a rename, so a kill never leaves half a
file; they refuse special files (a device node is not a report) and create
files 0644 (less the umask).

Symbolic links are refused, not followed: in CI the output directory sits in
the checkout of the pull request under test, where anyone can commit a link
named like a case file (``cases/x.json -> ~/.bashrc``) or like the output
directory itself.  An output whose own entry, or whose directory's entry, is a
link is refused: one line and exit 2 when the path is checked before the work
(``check_output_file``, ``check_output_dir``), a ``WriteFailed`` when it is
written.  The write itself cannot be led astray by a link planted between
the check and the write: the directory is opened with ``O_NOFOLLOW``, the
temporary file created in it with ``O_EXCL | O_NOFOLLOW``, and the rename onto
the final name replaces a link there instead of following it.  Directories
further up the path are the caller's own choice and are followed.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tempfile

from .errors import BadInput, WriteFailed

LINK_REFUSED = "is a symbolic link (an output is never written through one)"


def _probe_directory(directory: str, what: str) -> None:
    """Create ``directory`` if needed and prove a file can be created in it."""
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError:
        raise BadInput(f"{what}: {directory} is not a directory") from None
    except OSError as e:
        raise BadInput(f"{what}: cannot create directory {directory}: {e.strerror or e}") from None
    if os.path.islink(directory):
        raise BadInput(f"{what}: {directory} {LINK_REFUSED}")
    if not os.path.isdir(directory):
        raise BadInput(f"{what}: {directory} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".kvrow-probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"{what}: cannot write in {directory}: {e.strerror or e}") from None


def check_output_dir(path: str, what: str) -> None:
    """A directory outputs go into: it is one (or can be made), not a symbolic link, and files can be written in it."""
    _probe_directory(path, what)


def check_output_file(path: str, what: str) -> None:
    """A file an output is written to: a regular file or a new one, not a symbolic link, in a writable directory
    that is not one either."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise BadInput(f"{what}: {path} is a directory")
    if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
        raise BadInput(f"{what}: {path} is not a regular file")
    if os.path.islink(path):
        raise BadInput(f"{what}: {path} {LINK_REFUSED}")
    _probe_directory(os.path.dirname(path) or ".", what)


def write_atomically(path: str, text: str | bytes) -> None:
    """Write via a temporary file in the same directory and rename: readers see the old file or the new one.

    ``path`` or its directory a symbolic link, or ``path`` a special file: refused, nothing written.  Any
    failure (ENOSPC, EIO, a refusal) is a ``WriteFailed`` naming ``path``, the temporary file gone.
    """
    directory, name = os.path.split(path)
    directory = directory or "."
    try:
        os.makedirs(directory, exist_ok=True)
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as e:
        raise _failed(path, e, directory) from None
    try:
        _write_in(dfd, name, text.encode() if isinstance(text, str) else text)
    except OSError as e:
        raise _failed(path, e) from None
    finally:
        os.close(dfd)


def _write_in(dfd: int, name: str, data: bytes) -> None:
    """``data`` as ``name`` in the directory open as ``dfd``: a fresh temporary file, synced, renamed over it."""
    try:
        mode = os.lstat(name, dir_fd=dfd).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISLNK(mode):
        raise OSError(errno.ELOOP, LINK_REFUSED)
    if mode is not None and not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "is not a regular file")
    tmp = f".kvrow-{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)  # umask applies
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # a link planted at ``name`` is replaced, not followed
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except FileNotFoundError:
            pass
        raise


def _failed(path: str, error: OSError, directory: str | None = None) -> WriteFailed:
    """``error`` as the ``WriteFailed`` of ``path``; ``directory`` (whose opening failed) a link: that, said plainly
    (``O_NOFOLLOW | O_DIRECTORY`` on a link is ELOOP or ENOTDIR, by system)."""
    if directory is not None and os.path.islink(directory):
        return WriteFailed(errno.ELOOP, f"its directory {directory} {LINK_REFUSED}", path)
    return WriteFailed(error.errno, error.strerror or str(error), path)
