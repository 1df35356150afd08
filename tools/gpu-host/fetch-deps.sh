#!/usr/bin/env bash
# Run HERE (Debian 12, network), once, before a session with a GPU machine: the GPU host has
# CMake, nvcc and PyTorch but no Debian packages and no network, so the Qt-free part's libraries
# travel with the working tree. Downloads their .debs (headers, static/shared libraries, CMake
# and pkg-config files, and libarchive's runtime dependencies) into .gpu-host/debs, which git
# ignores (.git/info/exclude) and `run` carries: name `.gpu-host` in carry. Unpacked THERE by
# tools/gpu-host/build.sh into a prefix under /tmp, never into /.
set -euo pipefail
cd "$(dirname "$0")/../.."
pkgs=(nlohmann-json3-dev libcli11-dev libxxhash-dev libxxhash0 libarchive-dev libarchive13 zlib1g-dev zlib1g
      libacl1 libbz2-1.0 liblz4-1 liblzma5 libnettle8 libxml2 libzstd1 libicu72 pkgconf pkgconf-bin libpkgconf3)
mkdir -p .gpu-host/debs
exclude="$(git rev-parse --git-dir)/info/exclude"; mkdir -p "$(dirname "$exclude")"
grep -qx "/.gpu-host/" "$exclude" 2>/dev/null || echo "/.gpu-host/" >>"$exclude"
(cd .gpu-host/debs && apt-get download "${pkgs[@]}" >/dev/null)
cp tools/gpu-host/build.sh .gpu-host/
du -sh .gpu-host | cut -f1 | xargs echo ".gpu-host ready to carry:"
