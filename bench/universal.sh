#!/usr/bin/env bash
# Universal conversion benchmark: DeepSpeed's own ds_to_universal against `ckpt universal` on the
# large ZeRO-2 and ZeRO-3 checkpoints of bench/consolidate.sh (same generator, bf16 model, W = 4),
# with a warm page cache, plus a copy lower bound: read the fp32 master and both Adam moments
# once from the cached rank files, write as many bytes once (and fsync them on disk, as ckpt
# does). Reports wall time, GB/s of fp32 + moments, peak RSS (/usr/bin/time -v) and ratios,
# checks that both outputs hold the same files and tensors, and prints the table (also written to
# $BENCH_DIR/universal-table.md) for bench/RESULTS.md's Universal section. CPU seconds (user +
# system, children included) are beside the wall times: on a loaded machine they are the steadier
# measure; the load average at the start and end is in the table's heading.
#
# Needs the fixtures venv (torch, deepspeed): tools/fixtures/make_deepspeed_fixtures.sh makes it.
# Disk: per checkpoint ~14 bytes per parameter, plus two outputs and ds_to_universal's temporary
# fragment tree of ~12 bytes per parameter each, under BENCH_DIR (default /tmp/ckpt-bench).
# Usage: bench/universal.sh [PARAMS]   (default 1.1e9 parameters, as consolidate.sh)
#        STAGES="2 3" TARGETS="disk tmpfs" (the default) choose the rows
set -euo pipefail
cd "$(dirname "$0")/.."
py=$PWD/.venv-fixtures/bin/python
params=${1:-1.1e9}
work=${BENCH_DIR:-/tmp/ckpt-bench}
ckpt=${CKPT:-build/release/cli/ckpt}
mkdir -p "$work"
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }

if [ -z "${CKPT:-}" ]; then
  cmake --preset release -DCKPT_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release --target ckpt >/dev/null
fi

# peak RSS in MB and wall seconds from /usr/bin/time -v output
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$1"; }
cpu() { awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$1"; }
load() { cut -d' ' -f1 /proc/loadavg; }
load_start=$(load)
wall() { awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$1"; }

rows=()
for stage in ${STAGES:-2 3}; do
  ck="$work/zero${stage}"
  [ "$params" = 1.1e9 ] || ck="$work/zero${stage}-$params"
  if [ ! -f "$ck/latest" ]; then
    echo "== generating ZeRO-$stage checkpoint ($params parameters) in $ck"
    $py bench/make_large_checkpoint.py --stage $stage --params "$params" "$ck" 2>/dev/null
  fi
  tag="$ck/$(cat "$ck/latest")"
  # fp32 master + exp_avg + exp_avg_sq of the trainable parameters: what both tools move
  bytes=$($py - "$ckpt" "$ck" <<'PY' 2>/dev/null
import sys, subprocess, json
doc = json.loads(subprocess.run([sys.argv[1], "inspect", "--json", sys.argv[2]], capture_output=True, text=True).stdout)
print(sum(p["numel"] * 12 for p in doc["tags"][0]["parameters"] if p["kind"] == "trainable" and "tied_to" not in p))
PY
)
  echo "== ZeRO-$stage: $(du -sh "$tag" | cut -f1) on disk, $((bytes / 1000000)) MB of fp32 + moments; warming the page cache"
  cat "$tag"/* > /dev/null
  for target in ${TARGETS:-disk tmpfs}; do
    base=$work; [ $target = tmpfs ] && base=/dev/shm/ckpt-bench && mkdir -p $base
    for tool in ds_to_universal ckpt copy; do
      parent="$base/out-$stage-$tool"
      out="$parent/universal"
      rm -rf "$parent"; mkdir -p "$parent"
      log="$work/utime-$stage-$target-$tool.txt"
      case $tool in
        ds_to_universal) # its defaults: 4 extract and 2 merge worker processes
          (cd "$work" && /usr/bin/time -v $py -m deepspeed.checkpoint.ds_to_universal --input_folder "$tag" \
            --output_folder "$out" --inject_missing_state >/dev/null 2>"$log") || { tail -5 "$log"; exit 1; } ;;
        ckpt)
          /usr/bin/time -v "$ckpt" universal -q "$tag" "$out" --inject-missing-state >/dev/null 2>"$log" || { tail -3 "$log"; exit 1; } ;;
        copy)
          per=$(( bytes / 4 ))
          sync_flag=conv=fsync; [ $target = tmpfs ] && sync_flag=""
          /usr/bin/time -v bash -c "for f in $tag/*optim_states.pt; do dd if=\$f of=/dev/null bs=16M count=$per iflag=count_bytes status=none; done; dd if=/dev/zero of=$out.bin bs=16M count=$bytes iflag=count_bytes $sync_flag status=none" 2>"$log" ;;
      esac
      echo "   $target $tool: $(wall "$log") s, $(cpu "$log") CPU s, peak RSS $(rss "$log") MB (load $(load))"
      rows+=("$stage/$target $tool $(wall "$log") $(rss "$log") $bytes $(cpu "$log")")
    done
    echo "== checking both outputs hold the same files, keys and tensors"
    $py tools/fixtures/check_universal.py "$base/out-$stage-ds_to_universal/universal" "$base/out-$stage-ckpt/universal" 2>/dev/null | tail -n 3
    rm -rf "$base/out-$stage-"*
  done
done
rm -rf /dev/shm/ckpt-bench

{
  echo
  echo "### universal, $(date -u +%Y-%m-%d) — $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, params=$params, W=4, bf16 model, load $load_start -> $(load)"
  echo
  echo "| ZeRO / output | tool | wall s | CPU s | GB/s (fp32 + moments) | peak RSS MB | time vs ds_to_universal | RSS vs ds_to_universal | time vs copy bound |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
  for stage in 2/disk 2/tmpfs 3/disk 3/tmpfs; do
    base_t=""; base_r=""; copy_t=""
    for r in "${rows[@]}"; do set -- $r; [ "$1" = "$stage" ] || continue
      [ "$2" = ds_to_universal ] && base_t=$3 && base_r=$4; [ "$2" = copy ] && copy_t=$3; done
    for r in "${rows[@]}"; do set -- $r; [ "$1" = "$stage" ] || continue
      awk -v s="$1" -v t="$2" -v w="$3" -v m="$4" -v b="$5" -v c="$6" -v bt="$base_t" -v br="$base_r" -v ct="$copy_t" \
        'BEGIN {printf "| %s | %s | %.2f | %.2f | %.2f | %d | %.2fx | %.2fx | %.2fx |\n", s, t, w, c, b/w/1e9, m, bt/w, m/br, w/ct}'
    done
  done
  echo
  echo "Peak RSS is that of the largest single process (/usr/bin/time takes ds_to_universal's worker processes,"
  echo "4 extract and 2 merge, by their maximum, not their sum). Rerun: \`CKPT=build/release/cli/ckpt bench/universal.sh $params\` (BENCH_DIR=$work)."
} | tee "$work/universal-table.md"
