"""``lifecycle``: the request lifecycle fuzzed as a state machine over a running batch.

invariants  what must hold on the whole pool after every step
machine     the state machine and the lifecycle campaign (the shared driver's ``Hunt``)
replay      step scripts replayed, shortened, and lifecycle case files
cli         the ``lifecycle`` command
"""
