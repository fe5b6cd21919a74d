"""Reading a JSON file someone else wrote (a case file, ``matrix --expect``): bounded, one-line errors.

A hostile or careless file must not exhaust memory or hang the tool:
only a regular file is read (``/dev/zero``, a FIFO or a directory is
refused without reading it), at most ``max_bytes`` of it, and every way
it can fail (missing, unreadable, not UTF-8, not JSON, nested past the
parser's recursion limit, an integer of thousands of digits) is a
``JsonFileError`` with one line naming the file.  What Python's parser
accepts but JSON does not is refused too (``parse_json``): a key given
twice in one object (Python keeps the last, so a second ``"entries"``
would silently replace a baseline's first), ``NaN``, ``Infinity`` and
``-Infinity``, and a number too large for a float (``1e999`` parses to
infinity).  Light: imports nothing heavy, so ``repro`` can check a case
before torch is loaded.
"""

from __future__ import annotations

import json
import math
import os
import stat
from typing import Any

from .text import printable


class JsonFileError(ValueError):
    """A JSON file that cannot be read as one (the message is one line and names the file)."""


class _NotJson(ValueError):
    """What the strict hooks below raise: a value Python's parser takes that JSON (RFC 8259) has no place for."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members as a dict, refusing a key given twice (Python's parser would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _NotJson(f"the key {printable(key, 80)!r} twice in one object")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    """``NaN``, ``Infinity``, ``-Infinity``: not JSON, and a count or a time of that value means nothing."""
    raise _NotJson(f"{name}, which is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number with a fraction or an exponent, refused when no finite float holds it (``1e999``)."""
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {printable(text, 40)}, too large for a float")
    return value


def parse_json(data: bytes, path: str, what: str) -> Any:
    """The JSON value ``data`` (UTF-8) holds, read strictly (no key twice, only finite numbers); ``path`` and
    ``what`` name it in the one-line JsonFileError.  The one JSON parser of files this tool reads."""
    try:
        return json.loads(
            data.decode("utf-8"), object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite
        )
    except _NotJson as e:
        raise JsonFileError(f"{what} {path} holds {e}") from None
    except UnicodeDecodeError:
        raise JsonFileError(f"{what} {path} is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise JsonFileError(f"{what} {path} is not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise JsonFileError(f"{what} {path} is nested too deeply") from None
    except ValueError as e:  # e.g. an integer of thousands of digits
        raise JsonFileError(f"{what} {path}: {str(e).splitlines()[0]}") from None


def read_json(path: str, max_bytes: int, what: str) -> Any:
    """The JSON value in the regular file ``path`` of at most ``max_bytes`` bytes (``parse_json``: strict); ``what``
    names it in errors."""
    return parse_json(read_bytes(path, max_bytes, what), path, what)


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
