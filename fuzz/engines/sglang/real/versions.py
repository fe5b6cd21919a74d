"""SGLang release numbers and the decode semantics each one runs with.

The sizing module is the release's own code; everything around it (the
allocator page, the DFLASH write path, the scheduler's committed-length
bound) is the model's, read with the revision that models that release
(``RELEASE_REVISIONS``).  A version newer than every modeled release gets
the newest semantics; one older than 0.5.13 lacks the sizing functions.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from allocator_model.revisions import RELEASE_REVISIONS, REVISIONS, Revision

# The oldest supported release: the first with all three sizing functions (``mem_cache/common.py``
# [cite: common-sizing-functions]; mem_cache/allocation_sizing.py from 0.5.16).  0.5.9-0.5.12 have only
# get_alloc_len_per_decode (``managers/utils.py``) and an inline 4 + D row headroom.
FIRST_SIZING_RELEASE = "0.5.13"


class VersionError(ValueError):
    """A version string that is not X.Y.Z, or a release without the sizing module."""


MAX_VERSION_CHARS = 64  # longer than any release number; Python's int() refuses past 4,300 digits anyway


def parse_version(text: str) -> Version:
    """A release number X.Y.Z[...], parsed and ordered as pip does (PEP 440, ``packaging``); a text too long to
    be one is refused before it is parsed (one line, never int()'s digit-limit traceback)."""
    text = (text or "").strip()
    if len(text) > MAX_VERSION_CHARS:
        raise VersionError(f"{text[:20]!r}... ({len(text)} characters) is not a version X.Y.Z")
    try:
        version = Version(text)
    except InvalidVersion:
        raise VersionError(f"{text!r} is not a version X.Y.Z") from None
    if len(version.release) < 3:
        raise VersionError(f"{text!r} is not a version X.Y.Z")
    return version


def known_releases() -> list[str]:
    """The releases whose semantics are modeled, oldest first."""
    return sorted(RELEASE_REVISIONS, key=parse_version)


def newest_release() -> str:
    return known_releases()[-1]


def releases_between(first: str, last: str) -> list[str]:
    """Known releases in [first, last] (both must be versions; either end may be unknown to the model)."""
    lo, hi = parse_version(first), parse_version(last)
    if lo > hi:
        raise VersionError(f"empty release range {first}..{last}")
    return [r for r in known_releases() if lo <= parse_version(r) <= hi]


def semantics_for(version: str | None) -> tuple[Revision, str]:
    """The modeled revision for an SGLang version, and a phrase saying how it was chosen.

    None (a file of unknown version) and versions past the newest modeled
    release get the newest semantics; a version between two modeled
    releases gets the older one's.
    """
    newest = newest_release()
    if version is None:
        return REVISIONS[RELEASE_REVISIONS[newest]], f"version unknown: newest semantics ({newest})"
    v = parse_version(version)
    if v < parse_version(FIRST_SIZING_RELEASE):
        raise VersionError(
            f"sglang {version} predates the sizing functions (the oldest supported release is "
            f"{FIRST_SIZING_RELEASE}: mem_cache/common.py, mem_cache/allocation_sizing.py from 0.5.16)"
        )
    base = [r for r in known_releases() if parse_version(r) <= v][-1]
    how = f"semantics of {base}" if base == version else f"semantics of {base} (nearest modeled release <= {version})"
    return REVISIONS[RELEASE_REVISIONS[base]], how
