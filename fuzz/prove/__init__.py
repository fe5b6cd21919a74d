"""``prove``: every configuration of a bounded space, checked in closed form.

The command is the core's; the proof of a target's sizing is its engine's
(``Engine.prover``, the interface in ``proof``).  Modules:
  proof    -- ``ProveOptions``, ``Prover``, ``SizingProof``: what ``prove`` asks of an engine
  tables   -- each table checked on its own, its closed form over the prover's configurations
  progress -- a sweep's progress lines, with the time left
  tracing, tracing_run, traced_values -- a function run once per path over a grid of integer inputs
  cli      -- ``python -m fuzz prove``: options and the command
"""
