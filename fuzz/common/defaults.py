"""The names and defaults a command's parser shows, in their one home: light (the engines import them from here,
and so does the command line, which must not import the engines to print its help).
"""

from __future__ import annotations

PROG = "kvrow-fuzz"  # the program's one name, in every usage line (``fuzz.common.program``: how a shell runs it)
PROFILES = ("ci", "dev", "nightly")  # Hypothesis profiles (``fuzz.common.profiles`` builds their settings)
LIFECYCLE_STEPS = 50  # steps per state-machine run at most: Hypothesis' own stateful_step_count default
LIFECYCLE_RUNS = {"ci": 100, "dev": 500, "nightly": 2000}  # lifecycle: state-machine runs per round, per profile
ALL_ALGORITHMS = "all"  # prove --algorithm: every speculative algorithm the target's release sizes
FIDELITY_CONFIGS = 10_000  # fidelity: distinct configurations compared with the model
WRITE_PATH_STEPS = 1000  # fidelity: decode steps per kind of pool on SGLang's own write path
PAGE_TABLE_STEPS = 1000  # fidelity: mode builds per checked page table on SGLang's own builders
