#!/usr/bin/env bash
# Sets up on a fresh Debian 12 machine, builds, and opens Checkpoint Studio on the bundled
# DeepSpeed checkpoint (examples/deepspeed-zero2-bf16-w2). Without a display it says so and
# prints what the window would show (`ckpt inspect`), then consolidates the example.
set -euo pipefail
cd "$(dirname "$0")"
tools/install-deps.sh
cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release --target ckpt checkpoint-studio
example=examples/deepspeed-zero2-bf16-w2
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./build/release/app/checkpoint-studio "$example"
fi
echo "run.sh: no display (DISPLAY/WAYLAND_DISPLAY unset), so no window; this is what it would show:"
echo
ckpt=./build/release/cli/ckpt
$ckpt inspect "$example"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo
$ckpt export "$example" "$out"
echo "(with a display: ./build/release/app/checkpoint-studio $example; offscreen screenshot:"
echo " QT_QPA_PLATFORM=offscreen ./build/release/app/checkpoint-studio --screenshot shot.png $example)"
