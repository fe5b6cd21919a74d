"""The properties as pytest tests, shipped in the package so that any repository can run them.

    pytest --pyargs fuzz.properties --kvrow-target=python/sglang/srt/mem_cache/allocation_sizing.py

``test_kvrow_decode``: the four decode properties (a rounded write ends within its
row, no other row changes, drafts stay inside what was allocated, growth is
page-aligned); ``test_kvrow_lifecycle``: every invariant of the request lifecycle
after every step. Each test takes the ``kvrow_target`` fixture of the
plugin (``fuzz.pytest_plugin``), parametrized by ``--kvrow-target``.
"""
