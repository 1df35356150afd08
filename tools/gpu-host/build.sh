#!/usr/bin/env bash
# Run THERE (the GPU machine, in the repository root, with .gpu-host carried): unpacks the .debs
# fetched by fetch-deps.sh into /tmp/ckpt-prefix (never into /), then configures and builds the
# Qt-free part (model/, gpu/ with CUDA, cli/, tests/gpu_parity, bench/compute) into build/gpu.
# Usage in a device run:  bash tools/gpu-host/build.sh && build/gpu/tests/gpu_parity && build/gpu/tests/gpu_parity_host
set -euo pipefail
prefix=/tmp/ckpt-prefix
if [ ! -d "$prefix/usr" ]; then
  for f in .gpu-host/debs/*.deb; do dpkg -x "$f" "$prefix"; done
fi
lib="$prefix/usr/lib/x86_64-linux-gnu"
# The .pc files say prefix=/usr: the sysroot maps their -I and -L into the unpacked prefix.
export PKG_CONFIG_PATH="$lib/pkgconfig:$prefix/usr/share/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$prefix" PKG_CONFIG_LIBDIR="$lib/pkgconfig"
export LD_LIBRARY_PATH="$lib:$prefix/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
command -v pkg-config >/dev/null || export PKG_CONFIG="$prefix/usr/bin/pkgconf"
cmake -S . -B build/gpu -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
  -DCMAKE_BUILD_TYPE=Release -DCKPT_CUDA=ON -DCKPT_BUILD_GUI=OFF -DCKPT_BUILD_TESTS=ON \
  -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,$lib:$prefix/lib/x86_64-linux-gnu" >/dev/null
cmake --build build/gpu --target ckpt gpu_parity gpu_parity_host bench_compute -j "$(nproc)"
