#!/usr/bin/env bash
# A job split across processes (`--shard I/N` + `--finalize`, issue 25) on one machine, against
# DeepSpeed's zero_to_fp32 (one process, the reference) on the same ZeRO-3 checkpoint (bf16
# model, W = 4, >= 4 GB on disk at the default 3.9e8 parameters), page cache warm. For N = 1, 2, 4
# processes started together: the job's wall time (the slowest shard, then finalize), each
# process's wall time, bytes written and peak RSS; for export (zero_to_fp32's output, 200 MB
# files so that there are units to deal out) and Universal conversion. Every split output is
# compared with the one-process output byte for byte. Appends a table to bench/RESULTS.md, and
# beside it a model of the speed-up across nodes (what one node measures here × nodes, until
# the storage's aggregate bandwidth saturates): a model, not a measurement — this machine has
# one node.
#
# Needs .venv-fixtures (torch, deepspeed) as bench/python.sh makes it; the checkpoint is shared
# with bench/python.sh (BENCH_DIR, default /tmp/ckpt-bench-python). Outputs go to a temporary
# folder beside it, removed after each run (about 1.6 GB for export, 4.7 GB for Universal).
# Usage: [CKPT=build/ci/cli/ckpt] bench/shards.sh [PARAMS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
py=.venv-fixtures/bin/python
params=${1:-3.9e8}
work=${BENCH_DIR:-/tmp/ckpt-bench-python}
ck="$work/zero3"
ckpt=${CKPT:-build/release/cli/ckpt}
if [ -z "${CKPT:-}" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release --target ckpt >/dev/null
fi
if [ ! -f "$ck/latest" ]; then
  echo "== generating a ZeRO-3 checkpoint ($params parameters) in $ck"
  mkdir -p "$work"
  $py bench/make_large_checkpoint.py --stage 3 --params "$params" "$ck" 2>/dev/null
fi
size=$(du -sb "$ck" | cut -f1)
echo "== checkpoint $ck: $(numfmt --to=iec "$size")B; warming the page cache"
cat "$ck"/*/* >/dev/null
out=$(mktemp -d "$work/shards-out.XXXX")
trap 'rm -rf "$out"' EXIT

# The reference: DeepSpeed's zero_to_fp32, one process.
echo "== zero_to_fp32 (DeepSpeed, one process)"
/usr/bin/time -v $py -c "
import sys
from deepspeed.utils.zero_to_fp32 import convert_zero_checkpoint_to_fp32_state_dict as c
c(sys.argv[1], sys.argv[2], max_shard_size='200MB', safe_serialization=True)" "$ck" "$out/ref" \
  >/dev/null 2>"$out/ref.log" || { tail -3 "$out/ref.log"; exit 1; }
ref_wall=$(wall "$out/ref.log"); ref_rss=$(rss "$out/ref.log")
rm -rf "$out/ref"
echo "   ${ref_wall}s, peak RSS ${ref_rss} MB"

rows=()
# run OP N -> the table row; the split output is compared with the N=1 one, kept in $out/one-OP
run() {
  local op=$1 n=$2 dest="$out/$1-$2/out" args start end
  if [ "$op" = export ]; then args=(export "$ck" "$dest" --max-shard-size 200MB -q)
  else args=(universal "$ck" "$dest" -q); fi
  mkdir -p "$out/$op-$n"
  sync # the previous run's writeback is not this one's to pay
  start=$(date +%s.%N)
  if [ "$n" = 1 ]; then
    /usr/bin/time -v "$ckpt" "${args[@]}" >"$out/$op-$n/0.out" 2>"$out/$op-$n/0.log"
  else
    local pids=()
    for ((i = 0; i < n; i++)); do
      /usr/bin/time -v "$ckpt" "${args[@]}" --shard "$i/$n" >"$out/$op-$n/$i.out" 2>"$out/$op-$n/$i.log" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    /usr/bin/time -v "$ckpt" "${args[@]}" --finalize >"$out/$op-$n/fin.out" 2>"$out/$op-$n/fin.log"
  fi
  end=$(date +%s.%N)
  local total per="" outbytes
  total=$(echo "$end - $start" | bc)
  outbytes=$(du -sb "$out/$op-$n" | cut -f1)
  for ((i = 0; i < n; i++)); do
    local w
    w=$(grep -oE "(wrote|written|finalized)[^;]*" "$out/$op-$n/$i.out" | grep -oE "[0-9.]+ [KMGT]?i?B" | head -1 || true)
    per+="$(wall "$out/$op-$n/$i.log") s, ${w:-0 B}, $(rss "$out/$op-$n/$i.log") MB; "
  done
  [ "$n" != 1 ] && per+="finalize $(wall "$out/$op-$n/fin.log") s, $(rss "$out/$op-$n/fin.log") MB"
  if [ "$n" = 1 ]; then
    mv "$out/$op-1" "$out/one-$op"
    one_wall[$op]=$total
  else
    diff -r "$out/one-$op" "$out/$op-$n" -x '*.out' -x '*.log' >/dev/null \
      || { echo "bench/shards.sh: the $n-process $op differs from the one-process output"; exit 1; }
    rm -rf "$out/$op-$n"
  fi
  local gbs
  gbs=$(echo "scale=2; $outbytes / $total / 1000000000" | bc)
  printf '   %-9s N=%d  %6.2f s  %s GB/s written  (%s)\n' "$op" "$n" "$total" "$gbs" "$per"
  rows+=("| $op | $n | $(printf %.2f "$total") | $gbs | $per |")
}
declare -A one_wall
for op in export universal; do
  echo "== $op"
  for n in 1 2 4; do run "$op" "$n"; done
  rm -rf "$out/one-$op"
done

# Across nodes: each node moves what one machine moves here at N=1 (its own cores and disks),
# until the storage's aggregate bandwidth is the limit. Figures for the storage are examples.
model_rows=()
node_gbs=$(echo "scale=3; $size / ${one_wall[export]} / 1000000000" | bc)
for nodes in 1 4 16 64; do
  line="| $nodes |"
  for storage in 20 100 1000; do
    eff=$(echo "scale=3; r = $nodes * $node_gbs; if (r > $storage) r = $storage; r" | bc)
    line+=" $(printf %.1f "$eff") GB/s, 10 TB in $(echo "scale=1; 10000 / $eff / 60" | bc) min |"
  done
  model_rows+=("$line")
done

{
  echo
  echo "### Split across processes: a ZeRO-3 tag (W = 4, $(numfmt --to=iec "$size")B), N processes on one machine — $(date -u +%Y-%m-%d)"
  echo
  echo "$(machine); \`CKPT=$ckpt bench/shards.sh $params\` (BENCH_DIR=$work); page cache warm."
  echo "Reference: DeepSpeed's zero_to_fp32 (one process, 200MB shards): ${ref_wall} s, peak RSS ${ref_rss} MB."
  echo "Each split output equals the one-process output byte for byte (diff -r)."
  echo
  echo "| operation | N | job wall s (shards + finalize) | GB/s written | per process: wall, bytes written, peak RSS |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Model, not a measurement: one node reads and writes ${node_gbs} GB/s of checkpoint here (the"
  echo "one-process export's input bytes over its wall time); n nodes move n times that until the"
  echo "storage's aggregate bandwidth saturates (20, 100, 1000 GB/s: an NFS server, a mid Lustre/GPFS"
  echo "system, an object store). The time for a 10 TB checkpoint (405B parameters with Adam):"
  echo
  echo "| nodes | storage 20 GB/s | storage 100 GB/s | storage 1000 GB/s |"
  echo "|---|---|---|---|"
  printf '%s\n' "${model_rows[@]}"
} | tee -a bench/RESULTS.md
