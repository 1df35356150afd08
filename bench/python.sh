#!/usr/bin/env bash
# Python benchmark: checkpoint_studio.deepspeed against DeepSpeed's own zero_to_fp32 functions,
# in the same virtual environment (the same torch) and one run, on the same large ZeRO-2 and
# ZeRO-3 checkpoints (bf16 model, W = 4; >= 4 GB on disk each at the default 3.9e8 parameters),
# page cache warm: get_fp32_state_dict_from_zero_checkpoint eager, lazy_mode=True read through
# once, and convert_zero_checkpoint_to_fp32_state_dict (safetensors, 5GB shards). Each
# measurement is a process of its own (bench/python_bench.py): the call's wall time (imports
# apart), the process's peak RSS and its peak private memory. Also measures the floor of an
# eager dict: fresh torch memory of its size written once. Checks that the state dicts are equal
# (names, order, dtypes, sha256) and the written files identical; appends the table to
# bench/RESULTS.md.
#
# Needs the fixtures venv (torch, deepspeed, safetensors, huggingface_hub from PyPI), made here
# when missing; when DeepSpeed cannot be installed it says so and skips. Disk: about 4.2 GB
# (ZeRO-3) and 5 GB (ZeRO-2) at 3.9e8 parameters, plus outputs, under BENCH_DIR (default
# /tmp/ckpt-bench-python).
# Usage: bench/python.sh [PARAMS]
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv-fixtures/bin/python
params=${1:-3.9e8}
work=${BENCH_DIR:-/tmp/ckpt-bench-python}
mkdir -p "$work"

if ! { [ -x $py ] && $py -c "import deepspeed, torch, safetensors" 2>/dev/null; }; then
  echo "== making .venv-fixtures (torch, deepspeed, safetensors, huggingface_hub from PyPI)"
  if ! { python3 -m venv .venv-fixtures && $py -m pip install -q torch numpy safetensors deepspeed huggingface_hub &&
         $py -c "import deepspeed" 2>/dev/null; }; then
    echo "bench/python.sh: skipped: DeepSpeed could not be installed into .venv-fixtures, so there is nothing to compare with"
    exit 0
  fi
fi
echo "== installing checkpoint_studio into the same venv (pip install ./python)"
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} $py -m pip install -q ./python \
  --config-settings=build-dir="$PWD/build/python-bench"
versions=$($py -c "import torch, deepspeed, checkpoint_studio as cs, platform; print(f'torch {torch.__version__}, DeepSpeed {deepspeed.__version__}, checkpoint_studio {cs.__version__}, Python {platform.python_version()}')" 2>/dev/null | tail -n 1)
echo "   $versions"

measure() { # tool mode checkpoint [out] -> the JSON line
  $py bench/python_bench.py "$@" 2>/dev/null | tail -n 1
}
field() { $py -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

rows=()
floors=()
for stage in 2 3; do
  ck="$work/zero${stage}"
  if [ ! -f "$ck/latest" ]; then
    echo "== generating a ZeRO-$stage checkpoint ($params parameters) in $ck"
    $py bench/make_large_checkpoint.py --stage $stage --params "$params" "$ck" 2>/dev/null
  fi
  echo "== ZeRO-$stage: $(du -sh "$ck" | cut -f1) on disk; warming the page cache"
  cat "$ck"/global_step4/* >/dev/null
  fl=$(measure ours floor "$ck")
  floors+=("$stage|$(field "$fl" wall_s)")
  echo "   floor (fresh memory for the dict, written once): $(field "$fl" wall_s) s"
  for mode in sd lazy convert; do
    declare -A line=()
    for tool in deepspeed ours; do
      out="$work/out-$stage-$tool"
      rm -rf "$out"
      line[$tool]=$(measure $tool $mode "$ck" "$out")
      [ -n "${line[$tool]}" ] || { echo "bench/python.sh: $tool $mode failed on $ck"; exit 1; }
      echo "   $mode $tool: $(field "${line[$tool]}" wall_s) s, peak RSS $(field "${line[$tool]}" peak_rss_mib) MiB" \
           "(at the call's return $(field "${line[$tool]}" peak_rss_at_return_mib), after imports $(field "${line[$tool]}" rss_after_import_mib)," \
           "imports $(field "${line[$tool]}" import_s) s), peak private $(field "${line[$tool]}" peak_private_mib) MiB" \
           "(after imports $(field "${line[$tool]}" private_after_import_mib))"
    done
    same="-"
    if [ $mode = sd ]; then
      if [ "$(field "${line[deepspeed]}" hashes)" = "$(field "${line[ours]}" hashes)" ]; then same="equal"; else same="DIFFERENT"; fi
    elif [ $mode = convert ]; then
      same="identical bytes"
      for f in "$work/out-$stage-deepspeed"/*; do
        cmp -s "$f" "$work/out-$stage-ours/$(basename "$f")" || same="DIFFERENT: $(basename "$f")"
      done
      [ "$(ls "$work/out-$stage-deepspeed")" = "$(ls "$work/out-$stage-ours")" ] || same="DIFFERENT file names"
    fi
    echo "   $mode: $same"
    d=${line[deepspeed]} o=${line[ours]}
    rows+=("$stage|$mode|$(field "$d" wall_s)|$(field "$o" wall_s)|$(field "$d" peak_rss_mib)|$(field "$o" peak_rss_mib)|$(field "$o" peak_rss_at_return_mib)|$(field "$d" peak_private_mib)|$(field "$o" peak_private_mib)|$same")
    rm -rf "$work/out-$stage-"*
  done
done

{
  echo
  echo "### Python: checkpoint_studio.deepspeed vs DeepSpeed's zero_to_fp32 functions — $(date -u +%Y-%m-%d)"
  echo
  echo "$(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, load $(cut -d' ' -f1-3 /proc/loadavg); params=$params, W=4, bf16 model;"
  echo "$versions. Each cell one process (bench/python_bench.py); wall = the call (imports apart)."
  echo "Peak RSS = VmHWM once every value was read (the eager dict's values hashed after the call), imports included:"
  echo "file pages count once touched (DeepSpeed's torch.load(mmap=True), our zero-copy views). Peak private ="
  echo "RssAnon + RssShmem sampled every 2 ms, imports included: the memory taken from the machine (file pages are the"
  echo "page cache's, shared and reclaimable)."
  echo
  echo "| ZeRO | function | DeepSpeed s | ours s | speed-up | DeepSpeed peak RSS MiB | ours peak RSS MiB | ours at return MiB | RSS ratio | DeepSpeed peak private MiB | ours peak private MiB | private ratio | result |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
  for r in "${rows[@]}"; do
    IFS='|' read -r stage mode dt ot dr orss oret dp op same <<<"$r"
    name=$mode
    [ $mode = sd ] && name="get_fp32_state_dict (eager)"
    [ $mode = lazy ] && name="get_fp32_state_dict lazy_mode, read once"
    [ $mode = convert ] && name="convert_zero_checkpoint (safetensors)"
    awk -v s="$stage" -v n="$name" -v dt="$dt" -v ot="$ot" -v dr="$dr" -v orss="$orss" -v oret="$oret" -v dp="$dp" -v op="$op" -v same="$same" \
      'BEGIN {printf "| %s | %s | %.2f | %.2f | %.1fx | %d | %d | %d | %.2f | %d | %d | %.2f | %s |\n", s, n, dt, ot, dt/ot, dr, orss, oret, orss/dr, dp, op, op/dp, same}'
  done
  echo
  for f in "${floors[@]}"; do
    IFS='|' read -r stage fs <<<"$f"
    echo "Floor, ZeRO-$stage: allocating the eager dict in fresh torch memory and writing it once (torch.empty + fill_, no checkpoint read) takes $fs s."
  done
  echo
  echo "Rerun: \`bench/python.sh $params\` (BENCH_DIR=$work)."
} | tee -a bench/RESULTS.md
