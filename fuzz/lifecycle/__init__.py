"""``lifecycle``: a target's request lifecycle fuzzed as a state machine over a running batch.

cli         the ``lifecycle`` command: options, execution, output; the campaign on one target is its engine's
            hunt (``Engine.lifecycle_hunt``)

SGLang's state machine, invariants and step scripts are its engine's (``fuzz.engines.sglang.lifecycle``).
"""
