"""Where SGLang says so: every release, file and line the project's prose cites, in one table.

A docstring or comment that rests on SGLang's source names the fact, not the
line: ``the unified builders size the row 4 + D [cite: unified-mamba-row-extra]``.
``CITATIONS`` maps each fact's key (short, kebab-case) to its ``Cite`` in every
release the prose relies on: one home per fact per release.

Each ``Cite`` names the wheel member (``sglang/srt/...``, the path inside the
release's wheel) and an anchor, never a line number: ``text``, a short exact
substring of the cited line (the ``nth`` line holding it), and ``whole`` where
the fact is the statement starting there.  ``tests/test_citations.py``'s
network test finds every anchor in the real wheels: a text that no longer
appears (or not ``nth`` times), or a ``whole`` cite where no statement starts,
fails it.  The same test holds
every ``[cite: KEY]`` in the product code to a key here, every key here to a
citation there, and the product code free of bare ``X.Y.Z file.py NNN``
line citations.  ``text`` is a few characters, never more of SGLang's source.

Pure data: this package imports nothing of the project (and nothing heavy).
The table is kept in three modules, merged here (a key is in one only):
``sizing`` (the sizing functions, the pools, the launch rules),
``write_path`` (the decode write path and its stand-ins) and ``attention``
(the attention backends' tables it does not cite); ``base`` holds ``Cite``
and the wheel members they cite.
"""

from __future__ import annotations

from .attention import FACTS as _ATTENTION
from .base import Cite
from .sizing import FACTS as _SIZING
from .write_path import FACTS as _WRITE_PATH

__all__ = ["Cite", "CITATIONS", "CITE_PATTERN"]

# How prose cites a fact: ``[cite: KEY]`` (one key each; several facts, several brackets).
CITE_PATTERN = r"\[cite: ([a-z0-9]+(?:-[a-z0-9]+)*)\]"

CITATIONS: dict[str, tuple[Cite, ...]] = {**_SIZING, **_WRITE_PATH, **_ATTENTION}
assert len(CITATIONS) == len(_SIZING) + len(_WRITE_PATH) + len(_ATTENTION), "a key in two of the modules"
