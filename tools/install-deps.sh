#!/usr/bin/env bash
# Installs the Debian packages Checkpoint Studio builds and tests with. Idempotent: it asks apt
# only for what is missing, so a second run costs a dpkg query and nothing else.
# tools/install-deps.sh --check installs nothing: it names what is missing and fails if anything
# is (test.sh's last step: the test command leaves the machine as it found it).
set -euo pipefail
# libclang-rt-14-dev: clang's sanitizer and libFuzzer runtimes (the asan tree), only a Recommends
# of clang-14, which --no-install-recommends leaves out. Real package names only: a virtual one
# (libqt6charts6-dev, which qt6-charts-dev provides) is never "installed" to dpkg, so every run
# would ask apt for it again (test.sh's last step checks that nothing is missing).
need=(cmake ninja-build g++ clang libclang-rt-14-dev clang-format pkg-config
      lld  # links the test executables several times faster than BFD ld (CMakeLists.txt)
      qt6-base-dev qt6-base-dev-tools qt6-charts-dev libqt6opengl6-dev qt6-tools-dev qt6-tools-dev-tools qt6-l10n-tools libgl-dev
      nlohmann-json3-dev libcli11-dev libarchive-dev libxxhash-dev zlib1g-dev
      libcurl4-openssl-dev libssl-dev libexpat1-dev  # remote checkpoints (model/io/remote)
      nginx-light  # the HTTP range server of tst_remote (tools/servers)
      openmpi-bin  # mpirun for tst_shards (a job split across processes; the file protocol needs no MPI)
      python3-torch python3-numpy
      python3-dev python3-venv python3-pytest python3-tqdm  # the Python package (tests: python_package; the wheel: python/check.sh)
      help2man)  # man pages, generated from --help at build time (installer/)
# The shared GPU kernels' host build needs CCCL's headers: the CUDA toolkit's where it is installed,
# else Debian's (gpu/CMakeLists.txt looks in that order).
[ -f /usr/local/cuda/include/cccl/thrust/version.h ] || need+=(libthrust-dev libcub-dev libcu++-dev)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${1:-}" = --check ]; then
  [ ${#missing[@]} -eq 0 ] && { echo "install-deps: all ${#need[@]} packages installed"; exit 0; }
  echo "install-deps: not installed: ${missing[*]}"
  exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
