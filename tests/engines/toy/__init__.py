"""A test-only engine: a toy paged allocator with one per-request table and a planted bug (acceptance of issue 34).

Everything an engine brings, in one package and nothing else: its
configuration (``config.py``), its allocator, table and width functions
(``allocator.py``), its strategy of cases (``cases.py``), what it declares
when loaded (``declared.py``: its names, its table, its kind of case) and
the ``Engine`` it fills in (``engine.py``: its targets, its hunt, its
replay, its root cause and SARIF location).  It imports the core and
nothing of SGLang's: ``tests/test_toy_engine.py`` runs it through ``run``,
``repro``, the pytest plugin and SARIF in a process where the SGLang engine,
``allocator_model`` and ``strategies`` cannot be imported.

Declared only in that child process (``KVROW_FUZZ_ENGINES=toy=toy.engine:ENGINE``,
with ``tests/engines`` on the path): no other test sees it.
"""
