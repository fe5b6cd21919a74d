"""``prove``: every configuration of a bounded space, checked in closed form.

Modules, each importing only those above it:
  space    -- ``Space`` and ``SPACES``: the bounded spaces swept (full, small, tiny)
  grid     -- ``launch_grid`` (with the adaptive grid and the product), ``target_algorithms``
  calls    -- ``CountingSizing``, ``called_rows``, ``growth_kind``: the sizing-call adapter for real targets
  result   -- ``Group`` (a Signature and its witness Finding) and ``ProveResult``, as the shared report shapes them
  witness  -- witness construction, ``confirm`` on the step-by-step model, the WITNESS block
  sweep    -- ``prove()``: the sweep, recording groups and the min-slack heat
  heatmap  -- the heatmap with matplotlib (the ``plot`` extra) and its markdown twin
  cli      -- ``python -m fuzz prove``: options, the command, printing
"""
