#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs every test:
#   1. Debian packages (tools/install-deps.sh)
#   2. optimised build with warnings as errors, Qt Test suite under ctest
#   3. round trip of every fixture through real PyTorch (Debian's python3-torch), and
#      ckpt stats / ckpt diff against PyTorch's own numbers
#   4. the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   5. each libFuzzer target briefly (CKPT_FUZZ_SECONDS, default 20)
set -euo pipefail
cd "$(dirname "$0")"
passed=0

tools/install-deps.sh

echo "== build (ci preset: RelWithDebInfo, -Werror)"
cmake --preset ci >/dev/null
cmake --build build/ci
echo "== unit and integration tests"
ctest --preset ci
passed=$((passed + $(ctest --preset ci -N | sed -n 's/^Total Tests: //p')))

echo "== round trip through PyTorch"
# Debian's torch lives in the system interpreter, not in any pyenv/venv python on PATH.
/usr/bin/python3 -W ignore tests/roundtrip_check.py build/ci/cli/ckpt tests/data/torch/torch-1.13 tests/data/torch/torch-2.x \
  | tail -n 1
passed=$((passed + 1))
echo "== ckpt stats / ckpt diff against PyTorch"
/usr/bin/python3 -W ignore tests/analyze_check.py build/ci/cli/ckpt | tail -n 1
passed=$((passed + 1))
echo "== GPU parity (skips, saying why, without a CUDA device)"
build/ci/tests/gpu_parity

echo "== sanitizers (asan preset: ASan + UBSan)"
cmake --preset asan >/dev/null
cmake --build build/asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --preset asan
passed=$((passed + $(ctest --preset asan -N | sed -n 's/^Total Tests: //p')))

echo "== fuzzers"
tests/fuzz/run_fuzzers.sh "${CKPT_FUZZ_SECONDS:-20}"
passed=$((passed + 4))

echo "$passed passed, 0 failed"
