"""The findings pipeline every command shares: one finding type, one renderer, one report shape, case files.

kinds       the declared properties and names (core and engines), case kinds; the signature value type
model       ``Violation`` (what a check saw) and ``Finding`` (a violation with its target, config and case)
render      the COUNTEREXAMPLE block, the repro line, the summary table
report      the JSON report every command writes
casefile    case files: the envelope, save, load, validate, and the lazy table of replayers
regression  a case as a ready-to-paste pytest test

Import each from its module: this package's ``__init__`` runs on every import of one, so it imports nothing (a
re-export of ``model``, which names the engines' interface, closed a circle through ``fuzz.engines.base``).
"""
