#!/usr/bin/env bash
# The wheel, as a user gets and installs it: python/check.sh BUILD_DIR (test.sh: build/ci).
# The package's pytest suite runs under ctest against the module built in BUILD_DIR (test
# `python_package`); this step proves what a user installs is that same package:
#   1. `pip wheel ./python` with BUILD_DIR as scikit-build-core's build folder (no build
#      isolation, build/python-venv's nanobind and scikit-build-core): the tree is reused as it
#      is configured, so only the module's install runs, not a cold compile of the engine
#   2. the wheel holds the package and the module, and nothing of the GUI, the tests or the CLI
#   3. `pip install` of that wheel into a scratch venv (Debian's python3 with its numpy/torch),
#      then from outside the repository: the import comes from the venv, the bundled example
#      opens, and cs.export writes what `ckpt export` writes, byte for byte
#   4. `pip uninstall` leaves no file of the package behind
# Last line: "python wheel: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
[ $# -eq 1 ] || { echo "usage: python/check.sh BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "python/check.sh: no build folder $1" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "  ok    $*"; }
bad() { failed=$((failed + 1)); echo "  FAIL  $*"; }
check() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name"; else bad "$name"; printf '%s\n' "$out" | sed 's/^/        /' | tail -n 30; fi
}
finish() { echo "python wheel: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

venv=$(tools/python-venv.sh) || { bad "tools/python-venv.sh"; finish; }
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[ "${prefix#/tmp/}" = "$prefix" ] || prefix=/usr/local # an interrupted run's staging folder
# The ninja log says whether pip compiled anything: a reused tree recompiles nothing of the engine.
before=$(wc -l < "$build/.ninja_log" 2>/dev/null || echo 0)
check "pip wheel ./python from $1 ($build_type, no build isolation)" \
  "$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w "$scratch/dist" \
  --config-settings=build-dir="$build" --config-settings=cmake.build-type="$build_type" \
  --config-settings=install.strip=true ./python
# scikit-build-core set the tree's install prefix to its staging folder: put back the tree's own
# (what `cmake --install` and the package step use); nothing is compiled again for it.
cmake -DCMAKE_INSTALL_PREFIX="$prefix" "$build" >/dev/null
check "the tree's install prefix is its own again ($prefix)" \
  grep -qx "CMAKE_INSTALL_PREFIX:PATH=$prefix" "$build/CMakeCache.txt"
whl=$(ls "$scratch"/dist/checkpoint_studio-*.whl 2>/dev/null | head -n 1)
[ -n "$whl" ] || { bad "no wheel in $scratch/dist"; finish; }
echo "  wheel: $(basename "$whl"), $(du -h "$whl" | cut -f1)"
# .ninja_log: start, end, mtime, output, command hash; one line per command run
objects=$(awk -F'\t' -v b="$before" 'NR > b && $4 ~ /\.o$/ {print $4}' "$build/.ninja_log" 2>/dev/null)
check "the wheel reused $1: no object compiled again ($(printf '%s' "$objects" | grep -c . ) compiled)" \
  bash -c "printf '%s' \"\$1\" | head; [ -z \"\$1\" ]" _ "$objects"
check "the wheel holds the package and the module, nothing else" "$venv/bin/python" - "$whl" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
pkg = [n for n in names if not n.startswith("checkpoint_studio-")]
assert any(n.startswith("checkpoint_studio/_engine.") and n.endswith(".so") for n in pkg), pkg
assert "checkpoint_studio/__init__.py" in pkg, pkg
stray = [n for n in pkg if not n.startswith("checkpoint_studio/")]
assert not stray, f"outside the package: {stray}"
assert not any("__pycache__" in n for n in names), names
EOF

/usr/bin/python3 -m venv --system-site-packages "$scratch/venv" || { bad "python3 -m venv (python3-venv)"; finish; }
check "pip install $(basename "$whl") into a scratch venv" "$scratch/venv/bin/pip" install -q --no-deps "$whl"
mkdir -p "$scratch/user"
check "import checkpoint_studio from outside the repository: the installed copy" bash -c "
  cd '$scratch/user' && '$scratch/venv/bin/python' -c '
import checkpoint_studio as cs, sys
assert cs.__file__.startswith(sys.prefix), cs.__file__
print(cs.__version__)'"
example=$src/examples/deepspeed-zero2-bf16-w2
check "the installed package opens the bundled example, and exports what ckpt exports" bash -c "
  cd '$scratch/user' && '$scratch/venv/bin/python' -c '
import checkpoint_studio as cs, sys
with cs.open(sys.argv[1]) as ck:
    tag = ck.tag()
    assert tag.info.name == \"global_step4\" and len(tag.keys()) > 0, (tag.info.name, tag.keys())
assert cs.export(sys.argv[1], \"py-out\").tensors > 0' '$example' &&
  '$build/cli/ckpt' export '$example' cli-out -q &&
  diff -r py-out cli-out"
check "pip uninstall leaves nothing of the package" bash -c "
  site=\$('$scratch/venv/bin/python' -c 'import sysconfig; print(sysconfig.get_paths()[\"platlib\"])')
  '$scratch/venv/bin/pip' uninstall -q -y checkpoint-studio &&
  ! ls -d \"\$site\"/checkpoint_studio* 2>/dev/null"
finish
