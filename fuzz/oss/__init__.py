"""The properties as coverage-guided fuzz targets, for the engine OSS-Fuzz and ClusterFuzzLite run (libFuzzer).

``atheris_entry``: one decode property of one target as an Atheris entry point
(``TestOneInput`` over Hypothesis' ``fuzz_one_input``); a crash writes a case
file before libFuzzer records it.  ``stubs``: the per-property fuzzer scripts
``.clusterfuzzlite/build.sh`` compiles.  ``cli``: ``from-crash``, a crash
input found elsewhere (a ClusterFuzzLite artifact) turned into a case file.
"""
