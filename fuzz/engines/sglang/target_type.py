"""An SGLang target's type: a ``Target`` whose sizing answers are a ``Surface`` and whose decode semantics a
``Revision`` (the core's ``Target`` leaves both to its engine)."""

from __future__ import annotations

from allocator_model.revisions import Revision
from allocator_model.surface import Surface
from fuzz.targets.base import Target

SGLangTarget = Target[Surface, Revision]
