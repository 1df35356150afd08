#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs every test:
#   1. Debian packages (tools/install-deps.sh), the test servers' venv (tools/servers/venv.sh),
#      and every source formatted (tools/check-format.sh)
#   2. optimised build with warnings as errors, Qt Test suite under ctest
#   3. round trip of every fixture through real PyTorch (Debian's python3-torch), ckpt stats /
#      ckpt diff against PyTorch's own numbers, and ckpt slim's output loaded by PyTorch
#   3b. the Python package built by pip into a scratch virtual environment, its pytest suite
#   3c. the GPU kernels' parity suite on the host (and on a CUDA device where there is one)
#   4. the fault harness: kill -9, signals, disk full, read-only inputs, racing writers
#   5. the .deb: built from the ci build, desktop entry and metainfo validated, lintian, installed,
#      run from /usr/bin, purged (installer/check-package.sh)
#   6. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   7. each libFuzzer target briefly (CKPT_FUZZ_SECONDS, default 20)
# Every step runs even when an earlier one failed; the last line counts what passed and what
# failed, and the exit status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")"
passed=0
failed=0
failures=()

# A step that is one test: passes when the command exits 0.
step() {
  local name=$1
  shift
  echo "== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$name")
  fi
}

# A ctest run counts each of its tests.
ctest_step() {
  local preset=$1 log
  log=$(mktemp)
  echo "== unit and integration tests ($preset)"
  "${@:2}" ctest --preset "$preset" 2>&1 | tee "$log"
  local total bad skipped
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  bad=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -n 1)
  # a test that skipped (gpu_parity without a device) is counted neither passed nor failed
  skipped=$(grep -c '\*\*\*Skipped' "$log" || true)
  if [ -z "$total" ]; then
    failed=$((failed + 1))
    failures+=("ctest $preset (no summary)")
  else
    passed=$((passed + total - bad - skipped))
    failed=$((failed + bad))
    if [ "$bad" -gt 0 ]; then failures+=("ctest $preset: $bad"); fi
  fi
  rm -f "$log"
}

# A harness that prints its own "NAME: N passed, M failed" line.
counted_step() {
  local name=$1 log
  shift
  log=$(mktemp)
  echo "== $name"
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} p f
  p=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$log" | tail -n 1)
  f=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$log" | tail -n 1)
  if [ -z "$p" ]; then
    failed=$((failed + 1))
    failures+=("$name (no summary, exit $rc)")
  else
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$f" -gt 0 ] || [ "$rc" -ne 0 ]; then failures+=("$name"); fi
    if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then failed=$((failed + 1)); fi # it exited badly all the same
  fi
  rm -f "$log"
}

tools/install-deps.sh || exit 1
step "source formatting (clang-format 14, .clang-format)" tools/check-format.sh
# The S3 test server (moto, from PyPI) in the project's own venv, before tst_remote needs it.
step "test servers' venv (tools/servers/venv.sh)" tools/servers/venv.sh

echo "== build (ci preset: RelWithDebInfo, -Werror)"
cmake --preset ci >/dev/null && cmake --build build/ci || { echo "0 passed, 1 failed"; exit 1; }
ctest_step ci env

# Debian's torch lives in the system interpreter, not in any pyenv/venv python on PATH.
step "round trip through PyTorch" bash -c "/usr/bin/python3 -W ignore tests/roundtrip_check.py build/ci/cli/ckpt \
  tests/data/torch/torch-1.13 tests/data/torch/torch-2.x | tail -n 1"
step "ckpt stats / ckpt diff against PyTorch" bash -c \
  "/usr/bin/python3 -W ignore tests/analyze_check.py build/ci/cli/ckpt | tail -n 1"
counted_step "ckpt slim against PyTorch (torch.load object for object)" \
  /usr/bin/python3 -W ignore tests/slim_check.py build/ci/cli/ckpt
counted_step "Python package: pip install ./python into a scratch venv, pytest" python/check.sh
# The GPU path: its shared kernel source compiled for the host, held to the CPU oracle on every
# operation x dtype x size class; then the same suite on a CUDA device, skipped (not passed)
# where there is none.
counted_step "GPU kernels on the host (gpu_parity_host)" build/ci/tests/gpu_parity_host
echo "== GPU parity on a CUDA device"
build/ci/tests/gpu_parity
case $? in
  0) passed=$((passed + 1)) ;;
  77) echo "gpu_parity: skipped (counted neither passed nor failed)" ;;
  *) failed=$((failed + 1)); failures+=("gpu_parity") ;;
esac
counted_step "fault harness" tests/faults/run.sh build/ci/cli/ckpt
counted_step "package: .deb built, validated, installed, run and purged" installer/check-package.sh build/ci

echo "== build (asan preset: ASan + UBSan)"
if cmake --preset asan >/dev/null && cmake --build build/asan; then
  ctest_step asan env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  failed=$((failed + 1))
  failures+=("asan build")
fi

step "fuzzers" tests/fuzz/run_fuzzers.sh "${CKPT_FUZZ_SECONDS:-20}"

[ ${#failures[@]} -gt 0 ] && printf 'failed: %s\n' "${failures[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
