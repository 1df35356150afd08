#!/usr/bin/env bash
# Takes every scene of tools/screenshots in light and dark, English and Chinese, into
# docs/screenshots (offscreen, no display needed). Usage: tools/screenshots/take.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/ci}
# The Chinese screenshots need a CJK font (Qt draws boxes without one).
if ! fc-list 2>/dev/null | grep -qi 'wqy\|noto sans cjk'; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends fonts-wqy-microhei >/dev/null
fi
cmake --build "$build" --target screenshots >/dev/null
for palette in light dark; do
  for lang in en zh_CN; do
    suffix="-$palette"; [ "$lang" = en ] || suffix+="-$lang"
    CKPT_LANG=$lang QT_QPA_PLATFORM=offscreen "$build/tools/screenshots/screenshots" docs/screenshots "$palette" "$suffix" \
      2> >(grep -v propagateSizeHints >&2)
  done
done
