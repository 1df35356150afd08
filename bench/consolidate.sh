#!/usr/bin/env bash
# Consolidation benchmark: DeepSpeed's own zero_to_fp32.py against `ckpt export` on the same
# large ZeRO-2 and ZeRO-3 checkpoints (bf16 model, >= 4 GB of fp32 master weights, W = 4), with a
# warm page cache, plus a copy lower bound. Reports wall time, GB/s of fp32 weights, peak RSS
# (/usr/bin/time -v) and ratios; appends the table to bench/RESULTS.md.
#
# Needs the fixtures venv (torch, deepspeed, safetensors): tools/fixtures/make_deepspeed_fixtures.sh
# makes it. Disk: ~16 GB per checkpoint plus outputs under BENCH_DIR (default /tmp/ckpt-bench).
# Usage: bench/consolidate.sh [PARAMS]   (default 1.1e9 parameters)
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv-fixtures/bin/python
params=${1:-1.1e9}
work=${BENCH_DIR:-/tmp/ckpt-bench}
mkdir -p "$work"
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }

echo "== proving the generator writes DeepSpeed's layout (mimic the real fixtures)"
$py bench/make_large_checkpoint.py --stage 2 --mimic 2>/dev/null | tail -n 1
$py bench/make_large_checkpoint.py --stage 3 --mimic 2>/dev/null | tail -n 1

cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build build/release --target ckpt >/dev/null
# Users run the copy DeepSpeed drops into every checkpoint folder; running it from inside the
# package would shadow the stdlib's `types` with deepspeed/utils/types.py.
cp "$($py -c 'import deepspeed.utils.zero_to_fp32 as z; print(z.__file__)' 2>/dev/null | tail -n 1)" "$work/zero_to_fp32.py"
z2f="$work/zero_to_fp32.py"

# peak RSS in MB and wall seconds from /usr/bin/time -v output
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }

rows=()
for stage in 2 3; do
  ck="$work/zero${stage}"
  if [ ! -f "$ck/latest" ]; then
    echo "== generating ZeRO-$stage checkpoint ($params parameters) in $ck"
    $py bench/make_large_checkpoint.py --stage $stage --params "$params" "$ck" 2>/dev/null
  fi
  fp32=$($py - "$ck" <<'PY' 2>/dev/null
import sys, subprocess, json
doc = json.loads(subprocess.run(["build/release/cli/ckpt", "inspect", "--json", sys.argv[1]], capture_output=True, text=True).stdout)
print(sum(p["numel"] * 4 for p in doc["tags"][0]["parameters"] if p["kind"] == "trainable" and "tied_to" not in p))
PY
)
  echo "== ZeRO-$stage: $(du -sh "$ck" | cut -f1) on disk, $((fp32 / 1000000)) MB of fp32 weights; warming the page cache"
  cat "$ck"/global_step4/* > /dev/null
  # Output on disk (ckpt fsyncs, zero_to_fp32 does not) and on tmpfs (no disk in the way: the
  # tools' own work).
  for target in disk tmpfs; do
  base=$work; [ $target = tmpfs ] && base=/dev/shm/ckpt-bench && mkdir -p $base
  for tool in zero_to_fp32 ckpt copy; do
    out="$base/out-$stage-$tool"
    rm -rf "$out"; mkdir -p "$out"
    log="$work/time-$stage-$target-$tool.txt"
    case $tool in
      zero_to_fp32) /usr/bin/time -v $py "$z2f" "$ck" "$out" --safe_serialization >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
      ckpt) /usr/bin/time -v build/release/cli/ckpt export -q "$ck" "$out" >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
      copy) # lower bound: read as many bytes as the fp32 weights from the cached rank files, then
            # write and fsync as many (ckpt fsyncs its output; zero_to_fp32 does not)
        per=$(( fp32 / 4 ))
        sync_flag=conv=fsync; [ $target = tmpfs ] && sync_flag=""
        /usr/bin/time -v bash -c "for f in $ck/global_step4/*optim_states.pt; do dd if=\$f of=/dev/null bs=16M count=$per iflag=count_bytes status=none; done; dd if=/dev/zero of=$out/copy.bin bs=16M count=$fp32 iflag=count_bytes $sync_flag status=none" 2>"$log" ;;
    esac
    echo "   $target $tool: $(wall "$log") s, peak RSS $(rss "$log") MB"
    rows+=("$stage/$target $tool $(wall "$log") $(rss "$log") $fp32")
  done
  echo "== checking outputs are identical"
  for f in "$base/out-$stage-zero_to_fp32"/*; do
    cmp "$f" "$base/out-$stage-ckpt/$(basename "$f")" && echo "   $(basename "$f"): identical bytes"
  done
  rm -rf "$base/out-$stage-"*
  done
done
rm -rf /dev/shm/ckpt-bench

{
  echo
  echo "### $(date -u +%Y-%m-%d) — $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, params=$params, W=4, bf16 model"
  echo
  echo "| ZeRO / output | tool | wall s | GB/s (fp32 weights) | peak RSS MB | time vs zero_to_fp32 | RSS vs zero_to_fp32 | time vs copy bound |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for stage in 2/disk 2/tmpfs 3/disk 3/tmpfs; do
    base_t=""; base_r=""; copy_t=""
    for r in "${rows[@]}"; do set -- $r; [ "$1" = "$stage" ] || continue
      [ "$2" = zero_to_fp32 ] && base_t=$3 && base_r=$4; [ "$2" = copy ] && copy_t=$3; done
    for r in "${rows[@]}"; do set -- $r; [ "$1" = "$stage" ] || continue
      awk -v s="$1" -v t="$2" -v w="$3" -v m="$4" -v b="$5" -v bt="$base_t" -v br="$base_r" -v ct="$copy_t" \
        'BEGIN {printf "| %s | %s | %.2f | %.2f | %d | %.2fx | %.2fx | %.2fx |\n", s, t, w, b/w/1e9, m, bt/w, m/br, w/ct}'
    done
  done
  echo
  echo "Rerun: \`bench/consolidate.sh $params\` (BENCH_DIR=$work)."
} | tee -a bench/RESULTS.md
