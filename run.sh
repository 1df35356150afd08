#!/usr/bin/env bash
# Sets up on a fresh Debian 12 machine, builds, and shows the bundled example checkpoint.
# Until the desktop window lands, "shows" means `ckpt inspect` of the example.
set -euo pipefail
cd "$(dirname "$0")"
tools/install-deps.sh
cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release --target ckpt
example=examples/tiny-transformer/pytorch_model.bin
./build/release/cli/ckpt inspect "$example"
echo
./build/release/cli/ckpt scan "$example"
