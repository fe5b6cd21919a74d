"""Reading a JSON file someone else wrote (a case file, ``matrix --expect``): bounded, one-line errors.

A hostile or careless file must not exhaust memory or hang the tool:
only a regular file is read (``/dev/zero``, a FIFO or a directory is
refused without reading it), at most ``max_bytes`` of it, and every way
it can fail (missing, unreadable, not UTF-8, not JSON, nested past the
parser's recursion limit, an integer of thousands of digits) is a
``JsonFileError`` with one line naming the file.  Light: imports nothing
heavy, so ``repro`` can check a case before torch is loaded.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any


class JsonFileError(ValueError):
    """A JSON file that cannot be read as one (the message is one line and names the file)."""


def read_json(path: str, max_bytes: int, what: str) -> Any:
    """The JSON value in the regular file ``path`` of at most ``max_bytes`` bytes; ``what`` names it in errors."""
    data = read_bytes(path, max_bytes, what)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise JsonFileError(f"{what} {path} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise JsonFileError(f"{what} {path} is not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise JsonFileError(f"{what} {path} is nested too deeply") from None
    except ValueError as e:  # e.g. an integer of thousands of digits
        raise JsonFileError(f"{what} {path}: {str(e).splitlines()[0]}") from None


def read_bytes(path: str, max_bytes: int, what: str) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them (a crash input, a JSON file's text)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens at once instead of blocking
    except FileNotFoundError:
        raise JsonFileError(f"{what} {path} does not exist") from None
    except OSError as e:
        raise JsonFileError(f"cannot read {what} {path}: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise JsonFileError(f"{what} {path} is a directory")
        if not stat.S_ISREG(mode):
            raise JsonFileError(f"{what} {path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise JsonFileError(f"cannot read {what} {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise JsonFileError(f"{what} {path} is over {max_bytes} bytes")
    return data
