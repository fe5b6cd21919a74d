"""The Atheris entry's settings: their defaults and the environment variables that carry them.

Apart from the entry (``fuzz.oss.atheris_entry``) so that what runs the
property (``fuzz.oss.target``), the stub generator and the command line read
the same names without importing the entry, which imports them lazily.
"""

from __future__ import annotations

DEFAULT_TARGET = "reference"
DEFAULT_PROPERTY = "write-within-row"  # the seed bug's property (fuzz.findings.kinds.Property.WRITE_WITHIN_ROW)
ENV_TARGET = "KVROW_FUZZ_TARGET"  # the variable an emitted regression test reads too (fuzz.findings.regression)
ENV_PROPERTY = "KVROW_FUZZ_PROPERTY"
ENV_CASES = "KVROW_FUZZ_CASES"
ENV_KNOWN = "KVROW_FUZZ_KNOWN"  # deprecated: ENV_BASELINE keys on root causes, not group labels
ENV_BASELINE = "KVROW_FUZZ_BASELINE"
# --kvrow-NAME=VALUE on the command line -> the environment variable it overrides
OPTIONS: dict[str, str] = {
    "target": ENV_TARGET,
    "property": ENV_PROPERTY,
    "cases": ENV_CASES,
    "baseline": ENV_BASELINE,
    "known": ENV_KNOWN,
}
