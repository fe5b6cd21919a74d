"""Targets: what a command runs against, each of one engine (``fuzz.engines``).

base     Target, its kinds, the two target errors (a leaf)
resolve  target specs -> Target, through the engine that claims them

SGLang's real code (versions, wheel cache, stand-ins, loader) is its engine's: ``fuzz/engines/sglang/real/``.

Import each from its module (``fuzz.targets.base``, ``fuzz.targets.resolve``): this package's ``__init__`` runs on
every import of either, so it imports nothing (the engines' interface imports ``base``, and ``resolve`` the
findings, which name that interface: a re-export here would close that circle).
"""
