"""``run``: a target's engine's properties, fuzzed with Hypothesis against one or more targets.

cli         the ``run`` command: options, execution, output; the campaign on one target (its engine's own hunt,
            ``Engine.hunt``, and the hunts of the tables checked on their own)

SGLang's decode properties, their campaign and their replay are its engine's (``fuzz.engines.sglang.decode``).
"""
