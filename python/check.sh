#!/usr/bin/env bash
# The Python package's step of ./test.sh: builds and installs it the way a user does
# (`pip install ./python`, build requirements from PyPI through pip's build isolation) into a
# scratch virtual environment that sees Debian's python3-torch and numpy, then runs its pytest
# suite against the committed fixtures. The CMake build folder (build/python) is kept between
# runs, so a second run compiles only what changed. Last line: "python package: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log="$scratch/pytest.log"

summary() { echo "python package: $1 passed, $2 failed"; }

# Debian's interpreter: its torch and numpy are in its dist-packages, not in a pyenv python's.
if ! /usr/bin/python3 -m venv --system-site-packages "$scratch/venv"; then
  echo "python/check.sh: cannot make a virtual environment (tools/install-deps.sh installs python3-venv)"
  summary 0 1
  exit 1
fi
if ! CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$scratch/venv/bin/pip" install -q \
    --config-settings=build-dir="$PWD/build/python" ./python; then
  echo "python/check.sh: pip install ./python failed"
  summary 0 1
  exit 1
fi
# transformers, to load Trainer exports with from_pretrained (test_trainer_export.py): 4.44.2 is
# the newest that runs on Debian's torch 1.13. Without it (no PyPI) those tests skip, saying so.
"$scratch/venv/bin/pip" install -q "transformers==4.44.2" \
  || echo "python/check.sh: transformers could not be installed: the from_pretrained tests will skip"
(cd python/tests && "$scratch/venv/bin/python" -m pytest -q -p no:cacheprovider -o console_output_style=classic) \
  2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
last=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error)' "$log" | tail -n 1)
passed=$(echo "$last" | sed -n 's/.*\b\([0-9]\+\) passed.*/\1/p')
failed=$(echo "$last" | sed -n 's/.*\b\([0-9]\+\) failed.*/\1/p')
errors=$(echo "$last" | sed -n 's/.*\b\([0-9]\+\) errors\?.*/\1/p')
passed=${passed:-0}
failed=$((${failed:-0} + ${errors:-0}))
# pytest's 5 (no tests collected) must not pass silently; any other non-zero exit is a failure too.
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
summary "$passed" "$failed"
[ "$rc" -eq 0 ]
