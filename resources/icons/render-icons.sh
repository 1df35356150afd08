#!/usr/bin/env bash
# Renders the committed PNGs from the SVG masters in src/ (needs rsvg-convert: apt-get install
# librsvg2-bin). Run after changing an SVG and commit the PNGs with it; check-package.sh fails if
# a PNG is missing. 16 and 32 px come from the hand-hinted 16-unit drawing, 48 px and up from the
# full master, which is also installed as the scalable icon.
set -euo pipefail
cd "$(dirname "$0")"
command -v rsvg-convert >/dev/null || { echo "render-icons: needs rsvg-convert (librsvg2-bin)" >&2; exit 1; }
for n in 16 32 48 64 128 256; do
  src=src/checkpoint-studio.svg
  [ "$n" -le 32 ] && src=src/checkpoint-studio-16.svg
  mkdir -p "hicolor/${n}x${n}/apps"
  rsvg-convert -w "$n" -h "$n" "$src" -o "hicolor/${n}x${n}/apps/checkpoint-studio.png"
done
mkdir -p kinds
for svg in src/kinds/*.svg; do
  name=$(basename "$svg" .svg)
  rsvg-convert -w 16 -h 16 "$svg" -o "kinds/$name.png"
  rsvg-convert -w 32 -h 32 "$svg" -o "kinds/$name@2x.png"
done
echo "render-icons: $(ls hicolor/*/apps/*.png kinds/*.png | wc -l) PNGs written"
