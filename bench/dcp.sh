#!/usr/bin/env bash
# DCP consolidation benchmark: torch's own dcp_to_torch_save against `ckpt export` on the same
# multi-GB DCP folder (saved by torch from WORLD gloo processes, rows and columns sharded), with a
# warm page cache. Reports wall time, GB/s of tensor bytes, peak RSS (/usr/bin/time -v), checks
# that both outputs hold the same values, and appends the table to bench/RESULTS.md.
#
# Needs the fixtures venv (.venv-fixtures, torch). Disk: the checkpoint plus two outputs under
# BENCH_DIR (default /tmp/ckpt-bench-dcp). Usage: bench/dcp.sh [GB] [WORLD]   (default 2.5 3)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv-fixtures/bin/python
gb=${1:-2.5}
world=${2:-3}
work=${BENCH_DIR:-/tmp/ckpt-bench-dcp}
ckpt=${CKPT:-build/release/cli/ckpt}
mkdir -p "$work"
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }
if [ -z "${CKPT:-}" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release --target ckpt >/dev/null
fi

ck="$work/dcp-${gb}GB-w${world}"
if [ ! -f "$ck/.metadata" ]; then
  echo "== generating $ck"
  $py bench/make_dcp_checkpoint.py "$ck" "$gb" "$world" 2>/dev/null | tail -n 1
fi
bytes=$(cat "$ck"/*.distcp | wc -c)
echo "== $(du -sh "$ck" | cut -f1) on disk; warming the page cache"
cat "$ck"/* >/dev/null

rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }

rows=()
# Output on disk (ckpt fsyncs, torch.save does not) and on tmpfs (no disk in the way: the tools'
# own work).
for target in disk tmpfs; do
  base=$work; [ $target = tmpfs ] && base=/dev/shm/ckpt-bench-dcp && mkdir -p $base
  for tool in dcp_to_torch_save ckpt; do
    out="$base/out-$tool"
    rm -rf "$out"; mkdir -p "$out"
    log="$work/time-$target-$tool.txt"
    case $tool in
      dcp_to_torch_save) /usr/bin/time -v $py -c 'import sys; from torch.distributed.checkpoint.format_utils import dcp_to_torch_save as f; f(sys.argv[1], sys.argv[2])' "$ck" "$out/model.pt" >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
      ckpt) /usr/bin/time -v $ckpt export -q "$ck" "$out" >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
    esac
    echo "   $target $tool: $(wall "$log") s, peak RSS $(rss "$log") MB"
    rows+=("$target $tool $(wall "$log") $(rss "$log")")
  done
  echo "== checking both outputs hold the same values"
  $py - "$base/out-dcp_to_torch_save/model.pt" "$base/out-ckpt" <<'PY'
import sys, glob, torch
from safetensors import safe_open
ref = torch.load(sys.argv[1], mmap=True, weights_only=True)["model"]
n = 0
for f in sorted(glob.glob(sys.argv[2] + "/*.safetensors")):
    with safe_open(f, "pt") as s:
        for k in s.keys():
            t = s.get_tensor(k)
            assert t.dtype == ref[k].dtype and torch.equal(t, ref[k]), k
            n += 1
assert n == len(ref), (n, len(ref))
print(f"   {n} tensors identical")
PY
  rm -rf "$base"/out-*
done
rm -rf /dev/shm/ckpt-bench-dcp

{
  echo
  echo "### $(date -u +%Y-%m-%d) — DCP export: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $bytes bytes in $(ls "$ck"/*.distcp | wc -l) .distcp files (W=$world, fp32 rows/cols-sharded + bf16 replicated), warm cache"
  echo
  echo "| output | tool | wall s | GB/s | peak RSS MB | speed-up vs dcp_to_torch_save |"
  echo "|---|---|---:|---:|---:|---:|"
  ref=""
  for r in "${rows[@]}"; do
    set -- $r
    [ "$2" = dcp_to_torch_save ] && ref=$3
    awk -v o="$1" -v t="$2" -v w="$3" -v m="$4" -v b="$bytes" -v r="$ref" 'BEGIN {printf "| %s | %s | %.2f | %.2f | %s | %.2fx |\n", o, t, w, b/w/1e9, m, r/w}'
  done
  echo
  echo "Rerun: \`bench/dcp.sh $gb $world\` (BENCH_DIR=$work)."
} | tee -a bench/RESULTS.md
