"""SGLang's request lifecycle fuzzed as a state machine over a running batch (``lifecycle``'s hunt).

invariants  what must hold on the whole pool after every step
slots       slot ownership, the free list and leaks
view        a step as the invariants read it
script      a step script run raw: the verdict pipeline's lifecycle case
machine     the state machine and its hunt (the shared driver's ``Hunt``: ``Engine.lifecycle_hunt``)
replay      step scripts replayed, shortened, and lifecycle case files
"""
