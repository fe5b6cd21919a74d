"""The program's one name, and how a shell runs this installation of it.

``PROG`` (``kvrow-fuzz``) is what every usage line, help text and error line says: the command ``pip install``
puts on the PATH; ``python -m fuzz`` and ``./kvrow`` are the same command under other names.

``shell_command`` is how a line the tool prints for pasting (a repro line) starts, so that it runs in a fresh
shell where the tool was set up as the README says, nothing activated by hand:

* ``kvrow-fuzz`` where that name, looked up on the PATH now, is this installation's own entry script;
* else that entry script's absolute path (``./kvrow`` never puts its ``.venv/bin`` on the PATH, and a fresh
  shell does not have an activated environment's);
* else (the running ``fuzz`` is no installed distribution's: a checkout on ``PYTHONPATH``) this interpreter's
  absolute path and ``-m fuzz``.

"This installation's" entry script is the one the ``kvrow-fuzz`` distribution recorded when it was installed
(its ``RECORD``), and only where that distribution provides the running ``fuzz`` package (an editable install:
the directory its ``direct_url.json`` names): another installation's script would replay with other code.
Shell-quoted; decided once per process.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import sys
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

from .defaults import PROG

__all__ = ["PROG", "entry_script", "shell_command"]

PACKAGE = "fuzz"  # the import package the distribution installs (``python -m fuzz``)
DISTRIBUTION = PROG  # the distribution's name (pyproject.toml) is the program's


@functools.cache
def shell_command() -> str:
    """The words a pasted line starts with to run this installation of the tool (see the module's docstring)."""
    script = entry_script()
    if script is None:
        return f"{shlex.quote(sys.executable or 'python3')} -m {PACKAGE}"
    found = shutil.which(PROG)
    if found and _same_file(found, script):
        return PROG
    return shlex.quote(str(script))


def entry_script() -> Path | None:
    """The ``kvrow-fuzz`` script recorded by an installed distribution that provides the running ``fuzz`` package;
    None where none does (the running package is a checkout's, or no install recorded a script).

    Every ``kvrow-fuzz`` distribution on ``sys.path`` is asked, not only the first: run from a clone's root, the
    clone's own ``kvrow_fuzz.egg-info`` (left by an editable install; it records no script) comes first."""
    running = Path(sys.modules[PACKAGE].__file__ or "").resolve().parent
    for dist in metadata.distributions(name=DISTRIBUTION):
        if _package_dir(dist) != running:
            continue
        for file in dist.files or ():
            if file.name in (PROG, f"{PROG}.exe") and file.parent.name in ("bin", "Scripts"):
                path = Path(os.path.normpath(str(dist.locate_file(file))))
                if path.is_file():
                    return path
    return None


def _package_dir(dist: metadata.Distribution) -> Path | None:
    """Where ``dist`` installed the ``fuzz`` package: an editable install's source directory, else the package
    among its recorded files; None where it names neither."""
    direct = dist.read_text("direct_url.json")
    if direct:
        try:
            info = json.loads(direct)
        except ValueError:
            info = {}
        url = urlparse(str(info.get("url", "")))
        if isinstance(info.get("dir_info"), dict) and info["dir_info"].get("editable") and url.scheme == "file":
            return (Path(unquote(url.path)) / PACKAGE).resolve()
    init = next((f for f in dist.files or () if f.as_posix() == f"{PACKAGE}/__init__.py"), None)
    return Path(str(dist.locate_file(init))).resolve().parent if init is not None else None


def _same_file(a: str, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
