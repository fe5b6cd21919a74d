"""``run``: the decode properties, fuzzed with Hypothesis against one or more targets.

properties  the four properties, each a check of one observed write
engine      one scenario checked on a target; the decode campaign (the shared driver's ``Hunt``)
replay      a decode case file replayed
cli         the ``run`` command: options, execution, output
"""
