#!/usr/bin/env bash
# Verification benchmark (issue 39): `ckpt verify` of a large ZeRO-3 tag (bf16 model, fp32 masters
# and moments, W = 4; >= 4 GB of files at the default size) from a warm page cache, against what a
# user runs today on the same files: sha256sum and cksum (each in parallel over the files, one
# process per core) and torch.load of every file (which checks no CRC). Also `ckpt verify
# --write-manifest` (the CRC checks plus a SHA-256 per file). Reports wall time, GB/s of file bytes,
# peak RSS (/usr/bin/time -v) and the time against sha256sum; appends the table to bench/RESULTS.md.
#
# Needs the fixtures venv (torch, deepspeed): tools/fixtures/make_deepspeed_fixtures.sh makes it.
# Usage: bench/verify.sh [PARAMS]   (default 3e8 parameters: ~4.3 GB of files)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv-fixtures/bin/python
params=${1:-3e8}
work=${BENCH_DIR:-/tmp/ckpt-bench}
ckpt=${CKPT:-build/release/cli/ckpt}
mkdir -p "$work"
if [ -z "${CKPT:-}" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release --target ckpt >/dev/null
fi

. bench/lib.sh # rss, wall

ck="$work/zero3-$params"
if [ ! -f "$ck/latest" ]; then
  echo "== generating a ZeRO-3 checkpoint ($params parameters) in $ck"
  $py bench/make_large_checkpoint.py --stage 3 --params "$params" "$ck" 2>/dev/null | tail -n 1
fi
tag="$ck/$(cat "$ck/latest")"
bytes=$(du -cb "$tag"/* | tail -n 1 | cut -f1)
echo "== $(ls "$tag" | wc -l) files, $((bytes / 1000000)) MB; warming the page cache"
cat "$tag"/* > /dev/null
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

rows=()
for tool in ckpt-verify ckpt-verify-manifest sha256sum cksum torch.load; do
  log="$work/verify-time-$tool.txt"
  case $tool in
    ckpt-verify) /usr/bin/time -v "$ckpt" verify -q "$tag" >/dev/null 2>"$log" ;;
    ckpt-verify-manifest) /usr/bin/time -v "$ckpt" verify -q --write-manifest "$work/manifest.json" "$tag" >/dev/null 2>"$log" ;;
    sha256sum) /usr/bin/time -v bash -c "ls $tag/* | xargs -P $(nproc) -n 1 sha256sum >/dev/null" 2>"$log" ;;
    cksum) /usr/bin/time -v bash -c "ls $tag/* | xargs -P $(nproc) -n 1 cksum >/dev/null" 2>"$log" ;;
    torch.load) /usr/bin/time -v $py -c "
import glob, sys, torch
for f in sorted(glob.glob(sys.argv[1] + '/*')):
    torch.load(f, map_location='cpu', weights_only=False)
" "$tag" 2>"$log" >/dev/null ;;
  esac || { tail -3 "$log"; exit 1; }
  echo "   $tool: $(wall "$log") s, peak RSS $(rss "$log") MB"
  rows+=("$tool $(wall "$log") $(rss "$log")")
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$work/manifest.json"

{
  echo
  echo "### $(date -u +%Y-%m-%d) — ckpt verify: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, ZeRO-3 W=4, params=$params, $((bytes / 1000000)) MB of files, warm cache"
  echo
  echo "| tool | wall s | GB/s | peak RSS MB | time vs sha256sum (parallel) |"
  echo "|---|---:|---:|---:|---:|"
  base=""
  for r in "${rows[@]}"; do set -- $r; [ "$1" = sha256sum ] && base=$2; done
  for r in "${rows[@]}"; do set -- $r
    awk -v t="$1" -v w="$2" -v m="$3" -v b="$bytes" -v bt="$base" \
      'BEGIN {printf "| %s | %.2f | %.2f | %d | %.2fx |\n", t, w, b/w/1e9, m, w/bt}'
  done
  echo
  echo "Load average (1, 5, 15 min) $load_before before, $load_after after. ckpt verify checks each zip"
  echo "record's CRC-32, the pickle and its storages, and the tag's completeness; --write-manifest adds a"
  echo "SHA-256 per file (a second pass from the page cache). sha256sum and cksum only hash; torch.load"
  echo "checks no CRC. Rerun: \`bench/verify.sh $params\` (BENCH_DIR=$work, CKPT= to use a built ckpt)."
} | tee -a bench/RESULTS.md
