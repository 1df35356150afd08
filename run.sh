#!/usr/bin/env bash
# Sets up on a fresh Debian 12 machine, builds, and shows the bundled example checkpoint:
# what is inside (tags, ranks, parameters and how they are sharded), then the consolidated model
# `ckpt export` writes from it. Until the desktop window lands, this is the CLI's view.
set -euo pipefail
cd "$(dirname "$0")"
tools/install-deps.sh
cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release --target ckpt
ckpt=./build/release/cli/ckpt
example=examples/deepspeed-zero2-bf16-w2
$ckpt inspect "$example"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo
$ckpt export "$example" "$out"
echo
$ckpt inspect "$out/model.safetensors"
