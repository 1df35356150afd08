#!/usr/bin/env bash
# Compute backend throughput (bench/compute/bench_compute.cpp): every operation on the CPU and,
# when a device answers, on CUDA, next to the machine's memory-read (CPU) and pinned
# host-to-device (GPU) bandwidth measured in the same run. Appends the table to RESULTS.md.
# Builds without Qt, so it runs on a GPU host too. Usage: bench/compute.sh [MiB]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DCKPT_BUILD_TESTS=OFF -G Ninja >/dev/null
cmake --build build/bench --target bench_compute >/dev/null
{
  echo
  echo "### compute backend, $(date -u +%Y-%m-%d), $(nproc) cores"
  echo
  build/bench/bench/compute/bench_compute "${1:-1024}"
  echo
  echo "Rerun: \`bench/compute.sh ${1:-1024}\`."
} | tee -a bench/RESULTS.md
