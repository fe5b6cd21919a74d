#!/bin/bash -eu
# Build one libFuzzer fuzzer per decode property (fuzz/oss/stubs.py writes their scripts) into $OUT.
# KVROW_FUZZ_TARGET: the target the fuzzers check (default: the reference model; a regression on it is a crash).
# KVROW_FUZZ_KNOWN: comma-separated groups that count as passing (an open bug of that target), default none.

# The project and its dependencies; torch==2.13.0 (CPU) is already installed by the Dockerfile and satisfies
# the project's torch range, so pip installs no other torch.
python3 -m pip install --no-cache-dir .

# An assignment, not the for-list: a target that does not resolve stops the build (set -e).
fuzzers=$(python3 -m fuzz.oss.stubs "$SRC/kvrow-fuzzers" --target "${KVROW_FUZZ_TARGET:-reference}" \
  --known "${KVROW_FUZZ_KNOWN:-}")
for fuzzer in $fuzzers; do
  name=$(basename "$fuzzer" .py)
  compile_python_fuzzer "$fuzzer"
  # Hypothesis reads a scenario from tens of bytes: let inputs reach -max_len at once (fuzz/oss/atheris_entry.py).
  printf '[libfuzzer]\nlen_control = 0\n' > "$OUT/$name.options"
done
