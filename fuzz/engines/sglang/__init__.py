"""The SGLang engine: SGLang's targets, model and code as ``fuzz.engines.base.Engine`` fills them in.

``engine.ENGINE`` is what the registry loads; loading it declares SGLang's
properties and names (``names``, which imports the model).  The package
itself imports nothing, so its leaves (``specs``) stay light.  Its model and
strategies sit in the top-level ``allocator_model/`` and ``strategies/``; its
runtime (wheels, loader, the decode write path under triton's interpreter)
in ``fuzz/engines/sglang/real/``; its decode properties and their campaign in
``decode/``, judged on that write path too by ``own_path``.
"""
