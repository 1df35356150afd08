#!/usr/bin/env bash
# The window at scale (issue 12): a ZeRO-3 checkpoint of >= 1B parameters over 64 ranks (the
# generator's layout-only values: the window reads no tensor bytes to show it) opened in the
# real window offscreen by bench/gui/bench_gui: open time, progress reports, the longest
# event-loop stall per phase (open, selecting the tag: overview + sharding map), the map's paint
# time per zoom level and hover. Also `ckpt inspect` on it. Appends the table to RESULTS.md.
#
# Needs the fixtures venv (torch, deepspeed). Disk: ~16 GB under BENCH_DIR (default
# /tmp/ckpt-bench-scale). Usage: bench/scale.sh [PARAMS] [WORLD] [HIDDEN FFN]
#   (default 1e9 64 2048 5504: 168 tensors; 1e9 64 256 688: 11,000 smaller ones)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
py=.venv-fixtures/bin/python
params=${1:-1e9}
world=${2:-64}
hidden=${3:-2048}
ffn=${4:-5504}
work=${BENCH_DIR:-/tmp/ckpt-bench-scale}
ck="$work/zero3-w$world-h$hidden"
build=${BUILD:-build/release}
if [ -z "${BUILD:-}" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release --target ckpt bench_gui >/dev/null
fi
if [ ! -f "$ck/latest" ]; then
  echo "== generating a ZeRO-3 checkpoint of $params parameters over $world ranks in $ck"
  $py bench/make_large_checkpoint.py --stage 3 --params "$params" --world "$world" --hidden "$hidden" --ffn "$ffn" \
    --constant-values "$ck" 2>/dev/null | tail -n 1
fi
files=$(ls "$ck/global_step4" | wc -l)
params_n=$($build/cli/ckpt inspect --json "$ck" 2>/dev/null | $py -c 'import json,sys; d=json.load(sys.stdin); print(len(d["tags"][0]["parameters"]))')
echo "== $(du -sh "$ck" | cut -f1) on disk, $files files, $params_n parameters"
/usr/bin/time -v $build/cli/ckpt inspect "$ck" >/dev/null 2>"$work/time-inspect.txt"
QT_QPA_PLATFORM=offscreen /usr/bin/time -v $build/bench/gui/bench_gui "$ck" global_step4 >"$work/gui.md" 2>"$work/time-gui.txt" || { tail -5 "$work/time-gui.txt"; exit 1; }
{
  echo
  echo "### $(date -u +%Y-%m-%d) — the window at scale: $(machine); ZeRO-3, $params parameters ($params_n tensors), W=$world, $files files, $(du -sh "$ck" | cut -f1)"
  echo
  cat "$work/gui.md"
  echo
  echo "Peak RSS of the window: $(rss "$work/time-gui.txt") MB. \`ckpt inspect\` of the same folder: $(wall "$work/time-inspect.txt") s, peak RSS $(rss "$work/time-inspect.txt") MB."
  echo
  echo "Rerun: \`bench/scale.sh $params $world $hidden $ffn\` (BENCH_DIR=$work)."
} | tee -a bench/RESULTS.md
