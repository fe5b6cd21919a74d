"""Writing results to disk: outputs checked before any work starts, then written atomically.

A campaign can run for hours; an output path that cannot be written must
fail at the start (one line, exit 2), not after the work, losing it.  Writes
go through a temporary file and a rename, so a kill never leaves half a
file; they write through a symlink (never replace the link with a file),
refuse special files (a device node is not a report) and create files 0644.
"""

from __future__ import annotations

import os
import stat
import tempfile

from .errors import BadInput


def _probe_directory(directory: str, what: str) -> None:
    """Create ``directory`` if needed and prove a file can be created in it."""
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError:
        raise BadInput(f"{what}: {directory} is not a directory") from None
    except OSError as e:
        raise BadInput(f"{what}: cannot create directory {directory}: {e.strerror or e}") from None
    if not os.path.isdir(directory):
        raise BadInput(f"{what}: {directory} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".kvrow-probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise BadInput(f"{what}: cannot write in {directory}: {e.strerror or e}") from None


def check_output_dir(path: str, what: str) -> None:
    """A directory outputs go into: it is one (or can be made), and files can be written in it."""
    _probe_directory(path, what)


def check_output_file(path: str, what: str) -> None:
    """A file an output is written to: a regular file or a new one, in a writable directory."""
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise BadInput(f"{what}: {path} is a directory")
    if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
        raise BadInput(f"{what}: {path} is not a regular file")
    _probe_directory(os.path.dirname(real) or ".", what)


def write_atomically(path: str, text: str | bytes) -> None:
    """Write via a temporary file in the same directory and rename: readers see the old file or the new one.

    A symlink is written through (the link stays a link); a special file
    is refused; the file is created 0644 (less the umask).
    """
    real = os.path.realpath(path)
    if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
        raise OSError(f"{path} is not a regular file")
    directory = os.path.dirname(real) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kvrow-", suffix=".tmp", dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o644 & ~umask)
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, real)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
