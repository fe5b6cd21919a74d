"""Where the sizing module's source comes from: a release's wheel, the installed package, a checkout.

Wheels are fetched with ``pip download --no-deps`` into a cache directory
that every run reuses (``$KVROW_FUZZ_CACHE``, default
``~/.cache/kvrow-fuzz/wheels``: outside any clone, so CI keeps it between
runs); only ``sglang/srt/mem_cache/allocation_sizing.py`` is read out of a
wheel, nothing is installed.  Every failure is a ``SourceError`` whose text
is one line naming the problem.
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
# Where a checkout (or an unpacked package) keeps it, relative to the directory given.
CHECKOUT_LOCATIONS = (
    "python/" + SIZING_MODULE,
    SIZING_MODULE,
    "srt/mem_cache/allocation_sizing.py",
    "mem_cache/allocation_sizing.py",
    "allocation_sizing.py",
)
DOWNLOAD_TIMEOUT_S = 600
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


def _explain_pip_failure(version: str, output: str, directory: str) -> str:
    versions = re.search(r"\(from versions: ([^)]*)\)", output)
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
    """The cached wheel of sglang==version, downloading it first if the cache has none."""
    return cached_wheel(version) or _pip_download(version, cache_dir())


def read_from_wheel(wheel: str) -> str:
    """The sizing module's source, read out of a wheel (nothing else is unpacked)."""
    try:
        with zipfile.ZipFile(wheel) as z:
            data = z.read(SIZING_MODULE)
    except KeyError:
        raise SourceError(f"{os.path.basename(wheel)} has no {SIZING_MODULE}") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise SourceError(f"{wheel} is not a readable wheel ({e}); delete it to download it again") from None
    return _decode(data, wheel)


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
        with open(path, "rb") as f:
            data = f.read()
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
    path = os.path.join(list(spec.submodule_search_locations)[0], "srt", "mem_cache", "allocation_sizing.py")
    if not os.path.isfile(path):
        raise SourceError(f"the installed sglang has no {path} (too old? the module first ships in 0.5.16)")
    source, path = read_file(path)
    try:
        version = importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return source, path, version
