"""Where the sizing module's source comes from: a release's wheel, the installed package, a checkout.

Wheels are fetched with ``pip download --no-deps`` into a cache directory
that every run reuses (``$KVROW_FUZZ_CACHE``, default
``~/.cache/kvrow-fuzz/wheels``: outside any clone, so CI keeps it between
runs); only the file holding the sizing functions is read out of a wheel
(``sglang/srt/mem_cache/allocation_sizing.py`` from 0.5.16, before it
``sglang/srt/mem_cache/common.py``: ``SIZING_MODULES``), nothing is
installed.  ``KVROW_FUZZ_OFFLINE=1`` reads the cache only and never runs
pip (the test suite sets it).  Every failure is a
``SourceError`` whose text is one line naming the problem.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import zipfile

SIZING_MODULE = "sglang/srt/mem_cache/allocation_sizing.py"
# 0.5.13-0.5.15 keep the three sizing functions among the cache helpers (``common.py`` [cite: common-sizing-functions]).
COMMON_MODULE = "sglang/srt/mem_cache/common.py"
# Where a release keeps the sizing functions, the newest home first: the first one a wheel has is read.
SIZING_MODULES = (SIZING_MODULE, COMMON_MODULE)
# Where a checkout (or an unpacked package) keeps it, relative to the directory given.
CHECKOUT_LOCATIONS = (
    "python/" + SIZING_MODULE,
    SIZING_MODULE,
    "srt/mem_cache/allocation_sizing.py",
    "mem_cache/allocation_sizing.py",
    "allocation_sizing.py",
    "python/" + COMMON_MODULE,
    COMMON_MODULE,
)
DOWNLOAD_TIMEOUT_S = 600
# The most source read from one file (0.5.23's kv_cache_configurator.py, the largest read, is ~140 KB).
MAX_SOURCE_BYTES = 4 << 20
OFFLINE = "KVROW_FUZZ_OFFLINE"  # set (not 0/false/no/off): the cache only, pip never runs
_FALSE = ("", "0", "false", "no", "off", "n", "f")  # pip's strtobool no-words, and unset
# pip's words for "the index could not be reached" (as opposed to "it has no such version").
_NETWORK_FAILURE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Network is unreachable|Name or service not known|"
    r"Temporary failure in name resolution|Connection refused|ConnectTimeout|ReadTimeout|ProxyError|"
    r"Max retries exceeded|SSLError|ConnectionError|No route to host",
    re.IGNORECASE,
)


class SourceError(Exception):
    """The sizing module's source cannot be had."""


def cache_dir() -> str:
    """The wheel cache: $KVROW_FUZZ_CACHE, else $XDG_CACHE_HOME/kvrow-fuzz/wheels (~/.cache by default)."""
    explicit = os.environ.get("KVROW_FUZZ_CACHE")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kvrow-fuzz", "wheels")


WHEEL_PYTHON = "3.11"  # what pip download asks a release's wheel for: every release 0.5.13-0.5.23 supports it


def cached_wheel(version: str, directory: str | None = None) -> str | None:
    found = sorted(glob.glob(os.path.join(directory or cache_dir(), f"sglang-{glob.escape(version)}-*.whl")))
    return found[0] if found else None


def _pip_download(version: str, directory: str) -> str:
    """Download the wheel of sglang==version into ``directory`` (atomically: a temp dir, then a rename)."""
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".download-", dir=directory) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            # The tool reads the wheel's source, never installs or runs it as a package: any Python the release
            # supports will do (0.5.22+ require 3.11, which a Python 3.10 environment's pip would refuse).
            "--python-version",
            WHEEL_PYTHON,
            "--no-input",
            "--disable-pip-version-check",
            "--retries",
            "1",
            "--timeout",
            "20",
            "-d",
            tmp,
            f"sglang=={version}",
        ]
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            raise SourceError(
                f"pip download sglang=={version} took over {DOWNLOAD_TIMEOUT_S}s; no cached wheel in {directory}"
            ) from None
        except OSError as e:
            raise SourceError(f"cannot run pip to fetch sglang=={version}: {e}") from None
        output = done.stdout + done.stderr
        if done.returncode != 0:
            raise SourceError(_explain_pip_failure(version, output, directory))
        wheel = cached_wheel(version, tmp)
        if wheel is None:
            raise SourceError(f"pip download sglang=={version} produced no wheel (only a source distribution?)")
        target = os.path.join(directory, os.path.basename(wheel))
        os.replace(wheel, target)
    print(f"fetched {os.path.basename(target)} into {directory} (pip download --no-deps)", file=sys.stderr, flush=True)
    return target


def _flag(name: str) -> bool:
    """An environment switch is on: set to anything but empty, 0, false, no, off."""
    return os.environ.get(name, "").strip().lower() not in _FALSE


def _explain_pip_failure(version: str, output: str, directory: str) -> str:
    versions = re.search(r"\(from versions: ([^)]*)\)", output)
    if _flag("PIP_NO_INDEX") and (versions is None or versions.group(1).strip() == "none"):
        return (
            f"cannot fetch sglang=={version}: pip has no package index (PIP_NO_INDEX is set) "
            f"and no wheel is cached in {directory}"
        )
    if _NETWORK_FAILURE.search(output) and (versions is None or versions.group(1).strip() == "none"):
        return (
            f"cannot fetch sglang=={version}: the package index is unreachable (no network?) "
            f"and no wheel is cached in {directory}"
        )
    if versions is not None:
        known = [v.strip() for v in versions.group(1).split(",") if v.strip() and v.strip() != "none"]
        latest = f" (latest: {known[-1]})" if known else ""
        return f"sglang {version} does not exist on the package index{latest}"
    errors = [line.strip() for line in output.splitlines() if line.strip().startswith("ERROR")]
    return f"pip download sglang=={version} failed: {errors[-1] if errors else 'exit status ' + output[-200:].strip()}"


def release_wheel(version: str) -> str:
    """The cached wheel of sglang==version, downloading it first if the cache has none (never when offline)."""
    cached = cached_wheel(version)
    if cached:
        return cached
    if _flag(OFFLINE):
        raise SourceError(f"cannot fetch sglang=={version}: {OFFLINE} is set and no wheel is cached in {cache_dir()}")
    return _pip_download(version, cache_dir())


def read_sizing_from_wheel(wheel: str) -> tuple[str, str]:
    """(source, member) of the sizing functions' file in a wheel: the first of ``SIZING_MODULES`` it has.

    Only that one member is read; nothing else is unpacked.
    """
    try:
        with zipfile.ZipFile(wheel) as z:
            names = set(z.namelist())
            member = next((m for m in SIZING_MODULES if m in names), None)
            if member is None:
                raise SourceError(f"{os.path.basename(wheel)} has neither {' nor '.join(SIZING_MODULES)}")
            data = _bounded_member(z, member, wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise SourceError(f"{wheel} is not a readable wheel ({e}); delete it to download it again") from None
    return _decode(data, wheel), member


def _bounded_member(z: zipfile.ZipFile, member: str, wheel: str) -> bytes:
    """One member's bytes, refused past ``MAX_SOURCE_BYTES`` before anything is inflated."""
    if z.getinfo(member).file_size > MAX_SOURCE_BYTES:
        raise SourceError(f"{member} in {os.path.basename(wheel)} is larger than {MAX_SOURCE_BYTES >> 20} MiB")
    return z.read(member)


# The pool builders: where each kind of req_to_token pool gets its row width (0.5.16+).
CONFIGURATOR_MODULE = "sglang/srt/mem_cache/kv_cache_configurator.py"
# Before the configurator (0.5.13-0.5.15) the pools and the allocator were built by the ModelRunner mixin.
MIXIN_MODULE = "sglang/srt/model_executor/model_runner_kv_cache_mixin.py"


def read_member(wheel: str, member: str) -> str | None:
    """One more file of a wheel (None: the wheel has no such member); only that member is read."""
    try:
        with zipfile.ZipFile(wheel) as z:
            if member not in z.namelist():
                return None
            data = _bounded_member(z, member, wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise SourceError(f"{wheel} is not a readable wheel ({e}); delete it to download it again") from None
    return _decode(data, wheel)


def read_from_wheel(wheel: str) -> str:
    """The sizing functions' source, read out of a wheel (``read_sizing_from_wheel``)."""
    return read_sizing_from_wheel(wheel)[0]


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SourceError(f"{where} is not UTF-8 Python source ({e.reason} at byte {e.start})") from None


def read_file(path: str) -> tuple[str, str]:
    """(source, resolved path) of a sizing file, or of the sizing file inside a checkout directory."""
    if os.path.isdir(path):
        for rel in CHECKOUT_LOCATIONS:
            candidate = os.path.join(path, rel)
            if os.path.isfile(candidate):
                path = candidate
                break
        else:
            raise SourceError(f"{path} is a directory without {CHECKOUT_LOCATIONS[0]} (nor {SIZING_MODULE})")
    try:
        if os.path.exists(path) and not os.path.isfile(path):  # a FIFO or a device would block or never end
            raise SourceError(f"{path} is not a regular file")
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
        if len(data) > MAX_SOURCE_BYTES:
            raise SourceError(f"{path} is larger than {MAX_SOURCE_BYTES >> 20} MiB: not a sizing file")
    except FileNotFoundError:
        raise SourceError(f"{path} does not exist") from None
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from None
    return _decode(data, path), path


def installed_sizing() -> tuple[str, str, str | None]:
    """(source, path, version) of the installed SGLang's sizing module, without importing SGLang."""
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError) as e:
        raise SourceError(f"cannot locate the installed sglang: {e}") from None
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(f"no SGLang is installed for {sys.executable} (use sglang==X.Y.Z or a PATH)")
    package = list(spec.submodule_search_locations)[0]
    candidates = [os.path.join(package, *m.split("/")[1:]) for m in SIZING_MODULES]
    path = next((p for p in candidates if os.path.isfile(p)), candidates[0])
    if not os.path.isfile(path):
        raise SourceError(
            f"the installed sglang has no {path} (nor {candidates[1]}): too old? "
            "the sizing functions first ship in 0.5.13"
        )
    source, path = read_file(path)
    try:
        version = importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return source, path, version


def lone_sizing_path(location: str) -> str:
    """A lone sizing file (``--target my_sizing.py``, in no SGLang tree) as the module it stands for in SGLang's
    repository: ``python/sglang/srt/mem_cache/common.py`` for a file named ``common.py`` (0.5.13-0.5.15's home of
    the sizing functions), else ``allocation_sizing.py``'s path. A baseline written on a copy then names the code
    as a checkout's run does, from any directory (an absolute path is no repository path: ``baseline`` refuses
    it)."""
    name = location.rstrip("/").rsplit("/", 1)[-1]
    return "python/" + (COMMON_MODULE if name == "common.py" else SIZING_MODULE)


def repository_path(location: str) -> str:
    """A file as SGLang's repository names it (``python/sglang/srt/...``), whatever checkout or wheel it was read
    from; anything else (the model's own files) as it is."""
    for marker in ("python/sglang/", "sglang/srt/", "sglang/kernels/"):
        at = location.find(marker)
        if at >= 0:
            rest = location[at:]
            return rest if rest.startswith("python/") else "python/" + rest
    return location
