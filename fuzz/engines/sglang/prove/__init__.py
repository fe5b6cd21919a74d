"""SGLang's bounded proof (``Engine.prover``): its sizing over every configuration of a bounded space.

Modules:
  space    -- ``Space`` and ``SPACES``: the bounded spaces swept (full, small, tiny)
  grid     -- ``launch_grid`` (with the adaptive grid and the product), ``target_algorithms``
  calls    -- ``CountingSizing``, ``called_rows``, ``growth_kind``: the sizing-call adapter for real targets
  result   -- ``Group`` (a Signature and its witness Finding) and ``ProveResult``, as the shared report shapes them
  request  -- ``ProveRequest``: one sweep's space, method, slice and device
  traced_growth, traced_rows -- the sizing functions run once per path over a block
  witness  -- witness construction, ``confirm`` through the verdict pipeline, the WITNESS block
  record   -- the groups and the min-slack heat a block records
  sweep    -- ``prove()``: the sweep
  parallel -- ``prove --jobs``: the sweep over worker processes, merged
  quick    -- the proof stage of every quick verdict
  heatmap  -- the heatmap with matplotlib (the ``plot`` extra) and its markdown twin
  prover   -- ``SGLangProver``: the interface ``prove`` asks of an engine
"""
